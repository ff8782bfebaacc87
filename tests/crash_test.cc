// Crash test (issue 9, part 1): idempotent producers write continuously to three partitions
// (acks=all on two, acks=1 on one) while the broker is killed with SIGKILL at random moments.
// After each restart a checker reads every segment back and verifies, in the vocabulary of the
// Jepsen Kafka analyses: no acknowledged batch lost, none duplicated (one batch per producer id
// and sequence), none at a different offset (the acknowledged base offset holds the
// acknowledged bytes), offsets contiguous, every batch CRC-valid. TARN_CRASH_KILLS sets the
// number of kills (5 by default; `make crash-test` runs 100). Recovery time of each restart is
// printed (start to "listening", which follows log loading).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "produce_util.h"
#include "protocol/messages/init_producer_id_request.h"
#include "protocol/messages/init_producer_id_response.h"
#include "protocol/messages/produce_request.h"
#include "protocol/messages/produce_response.h"
#include "protocol/reader.h"
#include "protocol/writer.h"
#include "record/batch_builder.h"
#include "record/record_batch.h"
#include "test_util.h"

namespace tarn::test {
namespace {

namespace fs = std::filesystem;
constexpr int partitions = 3;

struct acked_batch {
  int64_t base_offset;
  std::vector<uint8_t> bytes;  // as sent; on disk only baseOffset and leader epoch differ
};

std::optional<std::vector<uint8_t>> call(raw_client& c, int16_t key, int16_t version,
                                         const std::vector<uint8_t>& body, int32_t id) {
  if (!c.send_request(key, version, id, body, true)) return std::nullopt;
  auto frame = c.read_frame(15s);
  if (!frame || get_int32(*frame, 0) != id) return std::nullopt;
  frame->erase(frame->begin(), frame->begin() + 5);
  return frame;
}

std::optional<int64_t> init_producer_id(uint16_t port) {
  raw_client c(port);
  protocol::init_producer_id_request req;
  req.transactional_id = std::nullopt;
  req.transaction_timeout_ms = 60000;
  std::vector<uint8_t> body;
  protocol::writer w(body);
  req.encode(w, 4);
  auto resp = call(c, 22, 4, body, 1);
  if (!resp) return std::nullopt;
  protocol::reader r(*resp);
  auto decoded = protocol::init_producer_id_response::decode(r, 4);
  if (!decoded || decoded->error_code != 0) return std::nullopt;
  return decoded->producer_id;
}

// One partition's writer: batches of 1-5 records with consecutive sequences until the broker
// goes away. Only answers with error 0 count as acknowledged.
void write_until_killed(uint16_t port, int partition, int16_t acks, int64_t producer_id,
                        std::vector<acked_batch>& acked, std::atomic<int>& batches_sent) {
  raw_client c(port);
  int32_t sequence = 0;
  std::mt19937 rng(static_cast<unsigned>(partition * 7919 + producer_id));
  for (int32_t id = 1;; ++id) {
    record::batch_builder_config config;
    config.batch_size = 1 << 20;
    config.producer_id = producer_id;
    config.producer_epoch = 0;
    config.base_sequence = sequence;
    record::batch_builder b(config);
    const int n = 1 + static_cast<int>(rng() % 5);
    for (int i = 0; i < n; ++i) {
      std::string value = fmt::format("p{}-pid{}-seq{}{}", partition, producer_id, sequence + i,
                                      std::string(rng() % 200, 'x'));
      b.try_append(1'700'000'000'000, std::nullopt, record::as_bytes(value));
    }
    auto batch = *b.build();
    protocol::produce_request req;
    req.acks = acks;
    req.timeout_ms = 30000;
    auto& t = req.topic_data.emplace_back();
    t.name = "crash";
    auto& p = t.partition_data.emplace_back();
    p.index = partition;
    p.records = std::span<const uint8_t>(batch);
    std::vector<uint8_t> body;
    protocol::writer w(body);
    req.encode(w, 9);
    ++batches_sent;
    auto resp = call(c, 0, 9, body, id);
    if (!resp) return;  // killed
    protocol::reader r(*resp);
    auto decoded = protocol::produce_response::decode(r, 9);
    if (!decoded) return;
    const auto& pr = decoded->responses.at(0).partition_responses.at(0);
    if (pr.error_code != 0) return;
    acked.push_back({pr.base_offset, std::move(batch)});
    sequence += n;
  }
}

struct check_totals {
  int64_t batches = 0;
  int64_t records = 0;
  int64_t acked_batches_verified = 0;
};

// Reads every segment of every partition and checks the Jepsen-style invariants.
void check_log(const fs::path& data, const std::vector<std::vector<acked_batch>>& acked,
               check_totals& totals) {
  for (int p = 0; p < partitions; ++p) {
    const fs::path dir = data / ("crash-" + std::to_string(p));
    if (!fs::exists(dir)) {
      std::string listing;
      for (const auto& e : fs::directory_iterator(data))
        listing += e.path().filename().string() + " ";
      FAIL() << dir << " missing; log dir holds: " << listing;
    }
    std::vector<fs::path> segments;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().extension() == ".log") segments.push_back(e.path());
    std::sort(segments.begin(), segments.end());
    std::map<int64_t, std::vector<uint8_t>> by_base;
    std::set<std::pair<int64_t, int32_t>> producer_sequences;
    int64_t next = 0;
    for (const auto& seg : segments) {
      const std::string bytes = read_file(seg);
      const auto span =
          std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      record::batch_reader reader(span);
      record::record_batch_view b;
      while (reader.next(b)) {
        EXPECT_TRUE(record::validate_batch(b, record::offset_rule::stored).has_value())
            << "partition " << p << ": batch at " << b.base_offset() << " fails its CRC/header";
        EXPECT_EQ(b.base_offset(), next) << "partition " << p << ": offsets not contiguous";
        next = b.next_offset();
        EXPECT_TRUE(producer_sequences.insert({b.producer_id(), b.base_sequence()}).second)
            << "partition " << p << ": duplicate batch pid " << b.producer_id() << " seq "
            << b.base_sequence();
        by_base[b.base_offset()] = std::vector<uint8_t>(b.bytes().begin(), b.bytes().end());
        ++totals.batches;
        totals.records += b.records_count();
      }
      EXPECT_EQ(reader.stop(), record::batch_stop::end)
          << seg << ": bytes after the last whole batch survived recovery";
    }
    for (const auto& a : acked[static_cast<size_t>(p)]) {
      auto it = by_base.find(a.base_offset);
      ASSERT_NE(it, by_base.end())
          << "partition " << p << ": acknowledged batch at " << a.base_offset << " lost";
      ASSERT_EQ(it->second.size(), a.bytes.size()) << "partition " << p << " @" << a.base_offset;
      EXPECT_TRUE(std::equal(a.bytes.begin() + 16, a.bytes.end(), it->second.begin() + 16))
          << "partition " << p << ": batch at " << a.base_offset << " differs from what was acked";
      ++totals.acked_batches_verified;
    }
  }
}

TEST(crash, sigkill_while_idempotent_producers_write) {
  const char* env = std::getenv("TARN_CRASH_KILLS");
  const int kills = env ? std::atoi(env) : 5;
  temp_dir dir;
  const fs::path data = dir.path() / "data";
  std::vector<std::vector<acked_batch>> acked(partitions);
  std::mt19937 rng(99);
  check_totals totals;
  for (int round = 0; round <= kills; ++round) {
    const auto started = clock_type::now();
    broker_process broker(
        {"--override", "num.partitions=3", "--override", "auto.create.topics.enable=false"}, data);
    ASSERT_NE(broker.port(), 0) << broker.output();
    const auto recovery_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - started).count();
    // The previous round's log, after recovery.
    totals = {};
    if (round > 0) check_log(data, acked, totals);
    if (HasFatalFailure()) return;
    std::printf(
        "round %d: restart to listening %lld ms; %lld batches, %lld records on disk, %lld "
        "acknowledged batches verified\n",
        round, static_cast<long long>(recovery_ms), static_cast<long long>(totals.batches),
        static_cast<long long>(totals.records),
        static_cast<long long>(totals.acked_batches_verified));
    if (round == kills) break;
    if (round == 0) {
      ASSERT_EQ(create_topic(broker.port(), "crash", partitions), 0);
    }
    auto pid = init_producer_id(broker.port());
    ASSERT_TRUE(pid.has_value());
    std::atomic<int> sent{0};
    std::vector<std::vector<acked_batch>> round_acked(partitions);
    std::vector<std::thread> writers;
    for (int p = 0; p < partitions; ++p) {
      const int16_t acks = p == 1 ? 1 : -1;
      writers.emplace_back([&, p, acks] {
        write_until_killed(broker.port(), p, acks, *pid, round_acked[static_cast<size_t>(p)], sent);
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200 + rng() % 600));
    broker.process().send_signal(SIGKILL);
    for (auto& w : writers) w.join();
    ASSERT_TRUE(broker.process().wait_exit(10s).has_value());
    for (int p = 0; p < partitions; ++p) {
      auto& dst = acked[static_cast<size_t>(p)];
      auto& src = round_acked[static_cast<size_t>(p)];
      dst.insert(dst.end(), std::make_move_iterator(src.begin()),
                 std::make_move_iterator(src.end()));
    }
  }
  EXPECT_GT(totals.acked_batches_verified, 0);
  std::printf("kills survived: %d; records on disk: %lld; acknowledged batches verified: %lld\n",
              kills, static_cast<long long>(totals.records),
              static_cast<long long>(totals.acked_batches_verified));
}

}  // namespace
}  // namespace tarn::test
