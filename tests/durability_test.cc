// Durability mode (issue 9, part 3): with log.flush.interval.messages=1 every acknowledged
// record must be on disk before its answer leaves, the partition directory fsynced too when
// the append created a segment; log.flush.interval.ms flushes on a timer. A SIGKILL cannot tell
// (the page cache survives it), so the broker runs under strace and the test checks the order
// of system calls: fdatasync of the .log before each Produce answer is sent. The same run
// without the setting is the control that shows the check can fail.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "produce_util.h"

namespace tarn::test {
namespace {

namespace fs = std::filesystem;

// tarn serve under `strace -f -yy` (paths and TCP endpoints of descriptors), tracing the calls that
// matter here into a file.
class traced_broker {
 public:
  explicit traced_broker(std::vector<std::string> overrides) {
    trace_ = tmp_.path() / "trace";
    data_ = tmp_.path() / "data";
    std::vector<std::string> args = {"/usr/bin/strace",
                                     "-f",
                                     "-qq",
                                     "-yy",
                                     "-e",
                                     "trace=fdatasync,fsync,sendmsg,writev,sendto,pwrite64",
                                     "-o",
                                     trace_.string(),
                                     TARN_BINARY,
                                     "serve",
                                     "--override",
                                     "listeners=PLAINTEXT://127.0.0.1:0",
                                     "--override",
                                     "log.dirs=" + data_.string()};
    for (auto& o : overrides) {
      args.push_back("--override");
      args.push_back(o);
    }
    process_ = std::make_unique<child_process>(std::move(args));
    if (auto port = process_->wait_for_number_after("listening on PLAINTEXT://127.0.0.1:",
                                                    startup_timeout)) {
      port_ = static_cast<uint16_t>(std::stoi(*port));
    }
  }

  // SIGTERM to tarn (strace's child), then waits for both to exit; returns the trace lines.
  std::vector<std::string> stop() {
    std::ifstream children("/proc/" + std::to_string(process_->pid()) + "/task/" +
                           std::to_string(process_->pid()) + "/children");
    pid_t tarn = 0;
    children >> tarn;
    if (tarn > 0) ::kill(tarn, SIGTERM);
    EXPECT_TRUE(process_->wait_exit(30s).has_value());
    return trace();
  }

  // The trace so far: strace writes each line as the call returns (or is interrupted by another
  // thread's), so a call the broker made before answering is in it once the answer is read.
  std::vector<std::string> trace() const {
    std::vector<std::string> lines;
    std::ifstream in(trace_);
    std::string line;
    while (std::getline(in, line)) lines.push_back(line);
    return lines;
  }

  uint16_t port() const { return port_; }
  const fs::path& data() const { return data_; }
  std::string output() const { return process_->output(); }

 private:
  temp_dir tmp_;
  fs::path trace_;
  fs::path data_;
  std::unique_ptr<child_process> process_;
  uint16_t port_ = 0;
};

bool contains(const std::string& s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

// For each answer sent on the connection from `client_port` (a sendmsg/writev/sendto line
// naming it), whether a `flush_marker` line (e.g. fdatasync of a .log) came since the previous
// answer.
std::vector<bool> flushed_before_each_answer(const std::vector<std::string>& trace,
                                             uint16_t client_port, std::string_view flush_call,
                                             std::string_view flush_path_part) {
  const std::string peer = fmt::format("->127.0.0.1:{}]", client_port);
  std::vector<bool> out;
  bool flushed = false;
  for (const auto& line : trace) {
    if (contains(line, std::string(flush_call) + "(") && contains(line, flush_path_part)) {
      flushed = true;
    } else if ((contains(line, "sendmsg(") || contains(line, "writev(") ||
                contains(line, "sendto(")) &&
               contains(line, peer)) {
      out.push_back(flushed);
      flushed = false;
    }
  }
  return out;
}

// Produces `count` one-record batches of `value_bytes` one at a time (each answered before the
// next is sent) on one connection, calling `after_each(i)` once Produce i is answered; returns
// that connection's local port.
uint16_t produce_sequentially(uint16_t port, int count, size_t value_bytes,
                              const std::function<void(int)>& after_each = {}) {
  raw_client c(port);
  for (int i = 0; i < count; ++i) {
    auto batch = value_batch(std::string(value_bytes, static_cast<char>('a' + i % 26)));
    produce_answer a = produce_one(c, i, "t", 0, batch);
    EXPECT_EQ(a.error_code, 0);
    EXPECT_EQ(a.base_offset, i);
    if (after_each) after_each(i);
  }
  return c.local_port();
}

// For each pwrite to a .log (one per append here), whether a `flush_call` of a path containing
// `flush_path_part` came after it and before the next such write (or the end of the trace).
std::vector<bool> flushed_after_each_write(const std::vector<std::string>& trace,
                                           std::string_view flush_call,
                                           std::string_view flush_path_part) {
  std::vector<bool> out;
  for (const auto& line : trace) {
    if (contains(line, "pwrite64(") && contains(line, ".log>")) {
      out.push_back(false);
    } else if (!out.empty() && contains(line, std::string(flush_call) + "(") &&
               contains(line, flush_path_part)) {
      out.back() = true;
    }
  }
  return out;
}

class durability : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_program("strace") || !fs::exists("/usr/bin/strace")) {
      GTEST_SKIP() << "strace is not installed";
    }
  }
};

TEST_F(durability, flush_interval_messages_1_fsyncs_before_every_answer) {
  // 300 KB records and 1 MiB segments: a roll every 3 batches, so directory fsyncs are seen.
  traced_broker broker({"log.flush.interval.messages=1", "log.segment.bytes=1048576"});
  ASSERT_NE(broker.port(), 0) << broker.output();
  ASSERT_EQ(create_topic(broker.port(), "t", 1), 0);
  constexpr int batches = 12;
  const uint16_t client_port = produce_sequentially(broker.port(), batches, 300'000);
  std::vector<int64_t> segment_bases;
  for (const auto& e : fs::directory_iterator(broker.data() / "t-0")) {
    if (e.path().extension() == ".log") segment_bases.push_back(std::stoll(e.path().stem()));
  }
  auto trace = broker.stop();
  ASSERT_FALSE(trace.empty());

  auto data_synced = flushed_before_each_answer(trace, client_port, "fdatasync", ".log>");
  ASSERT_EQ(data_synced.size(), size_t{batches}) << "one answer per Produce expected";
  for (int i = 0; i < batches; ++i) {
    EXPECT_TRUE(data_synced[static_cast<size_t>(i)]) << "Produce " << i << " answered unsynced";
  }
  // The partition directory is fsynced before answering each append that created a segment.
  ASSERT_GE(segment_bases.size(), 3u);
  auto dir_synced = flushed_before_each_answer(trace, client_port, "fsync", "/t-0>");
  ASSERT_EQ(dir_synced.size(), size_t{batches});
  for (int64_t base : segment_bases) {
    if (base == 0) continue;  // the first segment came with the topic
    EXPECT_TRUE(dir_synced[static_cast<size_t>(base)])
        << "segment " << base << " created without a directory fsync before the answer";
  }
}

TEST_F(durability, without_flush_settings_answers_go_out_unsynced) {
  // The control: the same check on a default broker finds no fdatasync before the answers.
  traced_broker broker({"log.segment.bytes=1048576"});
  ASSERT_NE(broker.port(), 0) << broker.output();
  ASSERT_EQ(create_topic(broker.port(), "t", 1), 0);
  const uint16_t client_port = produce_sequentially(broker.port(), 6, 300'000);
  auto trace = broker.stop();
  auto data_synced = flushed_before_each_answer(trace, client_port, "fdatasync", ".log>");
  ASSERT_EQ(data_synced.size(), 6u);
  for (bool synced : data_synced) EXPECT_FALSE(synced);
}

TEST_F(durability, flush_interval_ms_flushes_on_a_timer) {
  // flush.ms=100: the flusher syncs each append to the .log before the next one is sent (appends
  // themselves never flush here). Checked against the appends' own writes, not the answers: the
  // timer may fire between an append and its answer, and then that append's flush comes before
  // its own answer. The next Produce waits until the trace shows the flush (or event_timeout
  // passes), not a fixed pause that a stall of the traced, sanitized broker could outlast.
  traced_broker broker({"log.flush.interval.ms=100"});
  ASSERT_NE(broker.port(), 0) << broker.output();
  ASSERT_EQ(create_topic(broker.port(), "t", 1), 0);
  produce_sequentially(broker.port(), 4, 100, [&](int i) {
    const auto deadline = clock_type::now() + event_timeout;
    while (clock_type::now() < deadline) {
      auto synced = flushed_after_each_write(broker.trace(), "fdatasync", ".log>");
      if (synced.size() > static_cast<size_t>(i) && synced[static_cast<size_t>(i)]) return;
      std::this_thread::sleep_for(20ms);
    }
  });
  auto trace = broker.stop();
  auto data_synced = flushed_after_each_write(trace, "fdatasync", ".log>");
  ASSERT_EQ(data_synced.size(), 4u) << "one .log write per Produce expected";
  // The last append may be synced by the shutdown rather than the timer: only the first three
  // tell.
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(data_synced[i]) << "append " << i << " not flushed before the next one";
  }
}

TEST_F(durability, without_flush_settings_appends_stay_unsynced) {
  // The control for the timer test: the same check on a default broker finds no fdatasync after
  // the appends (until the shutdown's flush of the last one), though each is given 600 ms, six
  // times the timer test's flush.ms, before the next.
  traced_broker broker({});
  ASSERT_NE(broker.port(), 0) << broker.output();
  ASSERT_EQ(create_topic(broker.port(), "t", 1), 0);
  produce_sequentially(broker.port(), 4, 100, [](int) { std::this_thread::sleep_for(600ms); });
  auto trace = broker.stop();
  auto data_synced = flushed_after_each_write(trace, "fdatasync", ".log>");
  ASSERT_EQ(data_synced.size(), 4u) << "one .log write per Produce expected";
  for (size_t i = 0; i < 3; ++i) EXPECT_FALSE(data_synced[i]) << "append " << i;
}

}  // namespace
}  // namespace tarn::test
