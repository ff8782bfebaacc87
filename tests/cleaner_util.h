// Reading the log cleaner's progress off a log dir, for the integration tests that wait for it:
// the cleaner-offset-checkpoint file (Kafka's format: version, count, then "topic partition
// offset" lines), which tarn and Kafka 4.4 both rewrite after each round.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace tarn::test {

// The cleaner's checkpoint of <topic>-<partition> in `data_dir`, or -1 when it has none.
inline int64_t cleaner_checkpoint(const std::filesystem::path& data_dir, const std::string& topic,
                                  int32_t partition = 0) {
  std::ifstream in(data_dir / "cleaner-offset-checkpoint");
  std::string version, count, name;
  int64_t p = -1, offset = -1;
  in >> version >> count;
  while (in >> name >> p >> offset) {
    if (name == topic && p == partition) return offset;
  }
  return -1;
}

// Polls every 50 ms, for at most `timeout`, until the checkpoint of <topic>-0 reaches `offset`.
inline bool wait_cleaned_to(const std::filesystem::path& data_dir, const std::string& topic,
                            int64_t offset, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (cleaner_checkpoint(data_dir, topic) >= offset) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

}  // namespace tarn::test
