// Log directory: creation, the clean-shutdown marker round trip.
#include "broker/log_dir.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace tarn::broker {
namespace {

std::string make_temp_dir() {
  std::string pattern = "/tmp/tarn-log-dir-test-XXXXXX";
  return mkdtemp(pattern.data());
}

TEST(log_dir, creates_missing_directories_and_a_lock_file) {
  auto base = make_temp_dir();
  auto dir = log_dir::open(base + "/a/b");
  ASSERT_TRUE(dir.has_value()) << dir.error();
  EXPECT_TRUE(std::filesystem::exists(base + "/a/b/.lock"));
  std::filesystem::remove_all(base);
}

TEST(log_dir, clean_shutdown_marker_round_trip) {
  auto base = make_temp_dir();
  {
    auto dir = log_dir::open(base);
    ASSERT_TRUE(dir.has_value());
    auto first = dir->take_clean_shutdown_marker();
    ASSERT_TRUE(first.has_value());
    EXPECT_FALSE(*first);
    ASSERT_TRUE(dir->write_clean_shutdown_marker(-1).has_value());
  }
  std::ifstream in(base + "/.kafka_cleanshutdown");
  std::stringstream content;
  content << in.rdbuf();
  EXPECT_EQ(content.str(), R"({"version":0,"brokerEpoch":-1})");
  EXPECT_FALSE(std::filesystem::exists(base + "/.kafka_cleanshutdown.tmp"));
  {
    auto dir = log_dir::open(base);
    ASSERT_TRUE(dir.has_value());
    auto taken = dir->take_clean_shutdown_marker();
    ASSERT_TRUE(taken.has_value());
    EXPECT_TRUE(*taken);
    EXPECT_FALSE(std::filesystem::exists(base + "/.kafka_cleanshutdown"));
    auto again = dir->take_clean_shutdown_marker();
    ASSERT_TRUE(again.has_value());
    EXPECT_FALSE(*again);
  }
  std::filesystem::remove_all(base);
}

TEST(log_dir, uncreatable_directory_is_an_error_naming_it) {
  auto dir = log_dir::open("/proc/tarn-cannot-exist/data");
  ASSERT_FALSE(dir.has_value());
  EXPECT_NE(dir.error().find("/proc/tarn-cannot-exist/data"), std::string::npos);
}

}  // namespace
}  // namespace tarn::broker
