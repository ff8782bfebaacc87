// The producer's hot path without the network: send()'s append into the accumulator (records
// per second on one thread and on several), and murmur2 of a key.
#include <benchmark/benchmark.h>

#include <atomic>
#include <string>
#include <thread>

#include "client/partitioner.h"
#include "client/record_accumulator.h"

namespace tarn::client {
namespace {

// Appends 100-byte records to 8 partitions while a drainer thread plays the sender (drains
// and completes batches), so buffer.memory never runs out.
struct bench_state {
  record_accumulator acc{[] {
    accumulator_config c;
    c.idempotence = false;
    c.linger = std::chrono::milliseconds(0);
    return c;
  }()};
  std::atomic<bool> stop{false};
  std::thread drainer;

  bench_state() {
    drainer = std::thread([this] {
      auto leader = [](const topic_partition&) -> std::optional<node_id> { return 1; };
      while (!stop || acc.has_undrained()) {
        const auto now = std::chrono::steady_clock::now();
        for (auto& [node, batches] : acc.drain(leader, {1}, 1 << 20, now)) {
          for (auto& b : batches) acc.complete(std::move(b), 0, -1);
        }
      }
    });
  }
  ~bench_state() {
    stop = true;
    drainer.join();
  }
};

void BM_accumulator_append(benchmark::State& state) {
  static bench_state* shared = nullptr;
  if (state.thread_index() == 0) shared = new bench_state();
  const std::string value(100, 'v');
  const auto now = std::chrono::steady_clock::now();
  const topic_partition tp{"bench", static_cast<partition_id>(state.thread_index() % 8)};
  for (auto _ : state) {
    auto r = shared->acc.append(tp, 1000, std::nullopt, record::as_bytes(value), {}, {}, now);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * 100);
  if (state.thread_index() == 0) {
    delete shared;
    shared = nullptr;
  }
}
BENCHMARK(BM_accumulator_append)->Threads(1)->Threads(2)->UseRealTime();

void BM_murmur2(benchmark::State& state) {
  const std::string key(static_cast<size_t>(state.range(0)), 'k');
  for (auto _ : state) benchmark::DoNotOptimize(murmur2(record::as_bytes(key)));
  state.SetBytesProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_murmur2)->Arg(16)->Arg(100);

}  // namespace
}  // namespace tarn::client

BENCHMARK_MAIN();
