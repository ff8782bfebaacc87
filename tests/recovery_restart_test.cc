// Broker-level recovery (issue 9, part 2): a broker is killed with SIGKILL, its active segment is
// torn (truncated at every byte position of the last batch), garbled or stripped of its
// indexes, and a new broker on the same log directory must keep every whole valid batch before
// the damage, drop the rest, and append after exactly that point.
#include <gtest/gtest.h>

#include <filesystem>

#include "produce_util.h"
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

std::vector<uint8_t> one_batch(int i) {
  record::batch_builder_config config;
  config.batch_size = 1 << 20;
  record::batch_builder b(config);
  std::string value = "value-" + std::to_string(i);
  b.try_append(1'700'000'000'000 + i, std::nullopt, record::as_bytes(value));
  return *b.build();
}

// Produce v9 acks=-1 of one batch to t-0; returns (error code, base offset).
std::pair<int16_t, int64_t> produce(uint16_t port, const std::vector<uint8_t>& batch) {
  protocol::produce_request req;
  req.acks = -1;
  req.timeout_ms = 30000;
  auto& t = req.topic_data.emplace_back();
  t.name = "t";
  auto& p = t.partition_data.emplace_back();
  p.index = 0;
  p.records = std::span<const uint8_t>(batch);
  std::vector<uint8_t> body;
  protocol::writer w(body);
  req.encode(w, 9);
  raw_client c(port);
  EXPECT_TRUE(c.send_request(0, 9, 5, body, true));
  auto frame = c.read_frame();
  if (!frame) return {-100, -1};
  protocol::reader r(std::span<const uint8_t>(*frame).subspan(5));
  auto decoded = protocol::produce_response::decode(r, 9);
  if (!decoded) return {-101, -1};
  const auto& pr = decoded->responses.at(0).partition_responses.at(0);
  return {pr.error_code, pr.base_offset};
}

void write_bytes(const fs::path& p, std::string_view bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
}

class recovery_restart : public ::testing::Test {
 protected:
  // A log directory holding `n` one-record batches at offsets 0..n-1, left by a SIGKILLed broker.
  void SetUp() override {
    data_ = dir_.path() / "data";
    broker_process b({}, data_);
    ASSERT_NE(b.port(), 0) << b.output();
    ASSERT_EQ(test::create_topic(b.port(), "t", 1), 0);
    for (int i = 0; i < n_; ++i) {
      auto batch = one_batch(i);
      auto [err, base] = produce(b.port(), batch);
      ASSERT_EQ(err, 0);
      ASSERT_EQ(base, i);
      sizes_.push_back(batch.size());
    }
    b.process().send_signal(SIGKILL);
    ASSERT_TRUE(b.process().wait_exit(10s).has_value());
    log_ = data_ / "t-0" / "00000000000000000000.log";
    original_ = read_file(log_);
    size_t total = 0;
    for (auto s : sizes_) total += s;
    ASSERT_EQ(original_.size(), total);
  }

  size_t end_of_batch(int i) const {
    size_t end = 0;
    for (int k = 0; k <= i; ++k) end += sizes_[static_cast<size_t>(k)];
    return end;
  }

  // Restarts on the damaged directory and checks that the log ends after `whole` batches: the
  // .log holds exactly their bytes and the next produce lands at offset `whole`.
  void expect_recovered_to(int whole, const std::string& what) {
    broker_process b({}, data_);
    ASSERT_NE(b.port(), 0) << what << "\n" << b.output();
    auto [err, base] = produce(b.port(), one_batch(1000));
    EXPECT_EQ(err, 0) << what;
    EXPECT_EQ(base, whole) << what << "\n" << b.output();
    const std::string now = read_file(log_);
    ASSERT_GE(now.size(), end_of_batch(whole - 1)) << what;
    EXPECT_EQ(now.substr(0, end_of_batch(whole - 1)), original_.substr(0, end_of_batch(whole - 1)))
        << what << ": the kept batches changed";
    EXPECT_TRUE(b.stop().has_value()) << what << ": no exit after SIGTERM\n" << b.output();
    ++restarts_;
  }

  temp_dir dir_;
  fs::path data_, log_;
  const int n_ = 5;
  std::vector<size_t> sizes_;
  std::string original_;
  int restarts_ = 0;
};

TEST_F(recovery_restart, torn_last_batch_at_every_byte_position) {
  const size_t start = end_of_batch(n_ - 2);
  const size_t end = end_of_batch(n_ - 1);
  const fs::path saved = dir_.path() / "saved";
  fs::copy(data_, saved, fs::copy_options::recursive);
  for (size_t cut = start + 1; cut < end; ++cut) {
    fs::remove_all(data_);
    fs::copy(saved, data_, fs::copy_options::recursive);
    write_bytes(log_, std::string_view(original_).substr(0, cut));
    expect_recovered_to(n_ - 1, "cut at " + std::to_string(cut));
    if (HasFailure()) break;
  }
  std::printf("torn-write restarts: %d\n", restarts_);
}

TEST_F(recovery_restart, flipped_byte_in_a_middle_batch_drops_it_and_what_follows) {
  std::string damaged = original_;
  damaged[end_of_batch(1) + 30] ^= 0x40;  // inside batch 2
  write_bytes(log_, damaged);
  expect_recovered_to(2, "flipped byte in batch 2");
}

TEST_F(recovery_restart, deleted_and_garbled_indexes_are_rebuilt) {
  fs::remove(data_ / "t-0" / "00000000000000000000.index");
  fs::remove(data_ / "t-0" / "00000000000000000000.timeindex");
  expect_recovered_to(n_, "indexes deleted");
  write_bytes(data_ / "t-0" / "00000000000000000000.index", std::string(37, '\xff'));
  write_bytes(data_ / "t-0" / "00000000000000000000.timeindex", std::string(100, '\x7f'));
  original_ = read_file(log_);
  sizes_.push_back(original_.size() - end_of_batch(n_ - 1));
  expect_recovered_to(n_ + 1, "indexes garbled");
}

// log.preallocate=true (and the topic's preallocate): the active segment's .log is segment.bytes
// long on disk while the broker runs; a SIGKILL leaves its zeros, which the next broker cuts at the
// last batch (appending right after it); a clean shutdown cuts it to its batches, so
// `tarn dump-log` reads the file whole, as the file of a broker without preallocation.
TEST(recovery_restart_preallocate, preallocated_segment_is_cut_after_a_crash_and_at_shutdown) {
  temp_dir dir;
  const fs::path data = dir.path() / "data";
  const std::vector<std::string> args = {"--override", "log.preallocate=true", "--override",
                                         "log.segment.bytes=1048576"};
  const fs::path log = data / "t-0" / "00000000000000000000.log";
  const fs::path other = data / "u-0" / "00000000000000000000.log";
  size_t bytes = 0;
  {
    broker_process b(args, data);
    ASSERT_NE(b.port(), 0) << b.output();
    ASSERT_EQ(test::create_topic(b.port(), "t", 1), 0);
    // The topic's own key turns it off for u (and on where the broker's is off).
    ASSERT_EQ(test::create_topic(b.port(), "u", 1, {{"preallocate", "false"}}), 0);
    for (int i = 0; i < 3; ++i) {
      auto batch = one_batch(i);
      ASSERT_EQ(produce(b.port(), batch), (std::pair<int16_t, int64_t>{0, i}));
      bytes += batch.size();
    }
    EXPECT_EQ(fs::file_size(log), 1048576u);
    EXPECT_EQ(fs::file_size(other), 0u);
    b.process().send_signal(SIGKILL);
    ASSERT_TRUE(b.process().wait_exit(10s).has_value());
  }
  EXPECT_EQ(fs::file_size(log), 1048576u);  // the crash leaves the zeros
  {
    broker_process b(args, data);
    ASSERT_NE(b.port(), 0) << b.output();
    auto batch = one_batch(3);
    EXPECT_EQ(produce(b.port(), batch), (std::pair<int16_t, int64_t>{0, 3})) << b.output();
    bytes += batch.size();
    EXPECT_EQ(fs::file_size(log), bytes);  // cut by recovery, then appended to
    EXPECT_TRUE(b.stop().has_value()) << b.output();
  }
  EXPECT_EQ(fs::file_size(log), bytes);
  auto dump = run_tarn({"dump-log", "--files", log.string()});
  auto status = dump->wait_exit(10s);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(status->exited && status->code == 0) << dump->output();
  EXPECT_NE(dump->output().find("baseOffset: 3 lastOffset: 3"), std::string::npos)
      << dump->output();
  EXPECT_EQ(dump->output().find("invalid bytes"), std::string::npos) << dump->output();
}

}  // namespace
}  // namespace tarn::test
