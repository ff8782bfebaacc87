// Which tests may start Apache Kafka 4.4.0: those named as the interop oracle
// (tests/kafka_tests.regex).
#pragma once

#include <gtest/gtest.h>
#include <regex.h>

#include <fstream>
#include <string>

namespace tarn::test {

// Tests that start Apache Kafka 4.4.0 are the interop oracle: they run in `make interop`, not in
// `make test` (CI's time budget). Their names say so: they match tests/kafka_tests.regex (the
// Kafka half of a parametrised test ends in "/kafka", any other such test has "against_kafka"
// in its name), which the Makefile hands to ctest. "" when the running test may start Kafka,
// else why not; every place that starts Kafka asks first, so a misnamed test fails at once
// instead of slipping into `make test`.
inline std::string kafka_test_name_error() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (info == nullptr) return "";  // a suite's or the environment's set-up
  static const std::string pattern = [] {
    std::ifstream in(std::string(TARN_SOURCE_DIR) + "/tests/kafka_tests.regex");
    std::string line;
    std::getline(in, line);
    return line;
  }();
  const std::string name = std::string(info->test_suite_name()) + "." + info->name();
  // POSIX extended syntax, as ctest's -R/-E read it (and no std::regex to compile into every
  // test that includes this).
  regex_t re;
  if (!pattern.empty() && regcomp(&re, pattern.c_str(), REG_EXTENDED | REG_NOSUB) == 0) {
    const bool match = regexec(&re, name.c_str(), 0, nullptr, 0) == 0;
    regfree(&re);
    if (match) return "";
  }
  return "test " + name +
         " starts Apache Kafka, so its name must match tests/kafka_tests.regex ('" + pattern +
         "'): such tests run in make interop";
}

}  // namespace tarn::test
