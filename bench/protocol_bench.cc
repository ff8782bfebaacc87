// Protocol codec speed: Produce request decode (records are borrowed, so the cost must not grow
// with the batch size), Metadata response encode/decode, Fetch response encode.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/messages.h"

namespace {

using namespace tarn::protocol;

// A Produce request with `partitions` partitions of `batch_bytes` record bytes each.
std::vector<uint8_t> produce_bytes(int16_t version, int partitions, size_t batch_bytes,
                                   std::vector<uint8_t>& batch) {
  batch.assign(batch_bytes, 0x5a);
  produce_request req;
  req.acks = -1;
  req.timeout_ms = 30000;
  auto& topic = req.topic_data.emplace_back();
  topic.name = "bench-topic";
  for (int p = 0; p < partitions; ++p) {
    auto& part = topic.partition_data.emplace_back();
    part.index = p;
    part.records = bytes_view(batch);
  }
  std::vector<uint8_t> out;
  out.reserve(req.encoded_size(version));
  writer w(out);
  req.encode(w, version);
  return out;
}

void BM_produce_request_decode(benchmark::State& state) {
  std::vector<uint8_t> batch;
  const int16_t version = static_cast<int16_t>(state.range(0));
  std::vector<uint8_t> bytes =
      produce_bytes(version, 1, static_cast<size_t>(state.range(1)), batch);
  for (auto _ : state) {
    reader r(bytes);
    auto req = produce_request::decode(r, version);
    benchmark::DoNotOptimize(req);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes.size()));
}
BENCHMARK(BM_produce_request_decode)
    ->Args({7, 1024})
    ->Args({7, 1 << 20})
    ->Args({9, 1024})
    ->Args({9, 1 << 20});

metadata_response sample_metadata(int topics, int partitions, std::vector<std::string>& names) {
  metadata_response resp;
  auto& broker = resp.brokers.emplace_back();
  broker.node_id = 1;
  broker.host = "127.0.0.1";
  broker.port = 9092;
  resp.cluster_id = "tarn-cluster";
  resp.controller_id = 1;
  names.clear();
  for (int t = 0; t < topics; ++t) names.push_back("topic-" + std::to_string(t));
  for (int t = 0; t < topics; ++t) {
    auto& topic = resp.topics.emplace_back();
    topic.name = names[static_cast<size_t>(t)];
    topic.topic_id.bytes[15] = static_cast<uint8_t>(t);
    for (int p = 0; p < partitions; ++p) {
      auto& part = topic.partitions.emplace_back();
      part.partition_index = p;
      part.leader_id = 1;
      part.replica_nodes = {1};
      part.isr_nodes = {1};
    }
  }
  return resp;
}

void BM_metadata_response_encode(benchmark::State& state) {
  std::vector<std::string> names;
  metadata_response resp = sample_metadata(static_cast<int>(state.range(0)), 8, names);
  std::vector<uint8_t> out;
  for (auto _ : state) {
    out.clear();
    out.reserve(resp.encoded_size(12));
    writer w(out);
    resp.encode(w, 12);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * out.size()));
}
BENCHMARK(BM_metadata_response_encode)->Arg(1)->Arg(100);

void BM_metadata_response_decode(benchmark::State& state) {
  std::vector<std::string> names;
  metadata_response resp = sample_metadata(static_cast<int>(state.range(0)), 8, names);
  std::vector<uint8_t> bytes;
  writer w(bytes);
  resp.encode(w, 12);
  for (auto _ : state) {
    reader r(bytes);
    auto m = metadata_response::decode(r, 12);
    benchmark::DoNotOptimize(m);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes.size()));
}
BENCHMARK(BM_metadata_response_decode)->Arg(1)->Arg(100);

void BM_fetch_response_encode(benchmark::State& state) {
  std::vector<uint8_t> batch(static_cast<size_t>(state.range(0)), 0x5a);
  fetch_response resp;
  auto& topic = resp.responses.emplace_back();
  topic.topic = "bench-topic";
  auto& part = topic.partitions.emplace_back();
  part.high_watermark = 1000;
  part.records = bytes_view(batch);
  std::vector<uint8_t> out;
  for (auto _ : state) {
    out.clear();
    out.reserve(resp.encoded_size(12));
    writer w(out);
    resp.encode(w, 12);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * out.size()));
}
BENCHMARK(BM_fetch_response_encode)->Arg(1024)->Arg(1 << 20);

}  // namespace

BENCHMARK_MAIN();
