// Apache Kafka 4.4.0 for the tests that run beside it: one broker per test process, started by
// scripts/kafka-ref on first use and stopped when the tests end (or, should the process die, by
// a detached shell that waits for it).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "kafka_test_names.h"
#include "test_util.h"

namespace tarn::test {

class kafka_broker {
 public:
  static kafka_broker& instance() {
    static kafka_broker k;
    return k;
  }
  // "" once running, else why not.
  // `extra` is added to kafka-ref start (e.g. " --property k=v"); the first start decides.
  const std::string& start(const std::string& extra = "") {
    name_error_ = kafka_test_name_error();
    if (!name_error_.empty()) return name_error_;
    if (!running_ && error_.empty()) {
      port_ = free_port();
      auto [rc, out] = run_command("timeout 200 " + kafka_ref() + " start --timeout 180 --port " +
                                   std::to_string(port_) + " --dir " + dir().string() + extra);
      if (rc == 0) {
        running_ = true;
        // Should the test process die without stopping Kafka, a detached shell stops it.
        run_command("(setsid sh -c 'while kill -0 " + std::to_string(::getpid()) +
                    " 2>/dev/null; do sleep 1; done; " + kafka_ref() + " stop --dir " +
                    dir().string() + "; rm -rf " + tmp_.path().string() +
                    "' </dev/null >/dev/null 2>&1 &)");
      } else {
        error_ = "kafka-ref start failed (" + std::to_string(rc) + "): " + out;
      }
    }
    return error_;
  }
  uint16_t port() const { return port_; }
  // Its log.dirs (kafka-ref's <dir>/data), for tests that look at its files.
  std::filesystem::path data_dir() const { return dir() / "data"; }
  void stop() {
    if (!running_) return;
    run_command("timeout 60 " + kafka_ref() + " stop --dir " + dir().string());
    running_ = false;
  }
  ~kafka_broker() { stop(); }

 private:
  static std::string kafka_ref() { return std::string(TARN_SOURCE_DIR) + "/scripts/kafka-ref"; }
  std::filesystem::path dir() const { return tmp_.path() / "kafka"; }
  temp_dir tmp_;
  uint16_t port_ = 0;
  bool running_ = false;
  std::string error_;
  std::string name_error_;
};

// The Kafka 4.4.0 jars' directory (for Kafka's own tools and the Java client run with
// `java -cp`); "" when java or the jars are missing.
inline const std::string& kafka_libs() {
  static const std::string libs = [] {
    if (!have_program("java")) return std::string();
    auto [rc, out] =
        run_command("timeout 600 " + std::string(TARN_SOURCE_DIR) + "/scripts/kafka-ref libs");
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    const std::string dir = out.substr(out.rfind('\n') + 1);  // its last line
    return rc == 0 && std::filesystem::exists(dir) ? dir : std::string();
  }();
  return libs;
}

class kafka_environment : public ::testing::Environment {
 public:
  void TearDown() override { kafka_broker::instance().stop(); }
};
[[maybe_unused]] inline ::testing::Environment* const kafka_env =
    ::testing::AddGlobalTestEnvironment(new kafka_environment);

// Tests that run one scenario against tarn and against Kafka 4.4.0 (the reference half, which
// checks the scenario itself) are parameterised by the broker.
enum class broker_kind { tarn, kafka };

inline std::string kind_name(const ::testing::TestParamInfo<broker_kind>& info) {
  return info.param == broker_kind::tarn ? "tarn" : "kafka";
}

// Starts the broker of such a test: a fresh tarn into `tarn` (with each of `overrides`, key=value,
// as --override), or the process's shared Kafka broker (the overrides as its properties, which
// take effect at its first start). Sets `port`; returns "" when the test should go on, else the
// reason to skip it. A broker that fails to start fails the test and leaves `port` 0. Kafka's
// half is skipped in the sanitizer trees: a sanitizer instruments tarn only.
inline std::string start_test_broker(broker_kind kind, const std::vector<std::string>& overrides,
                                     std::unique_ptr<broker_process>& tarn, uint16_t& port) {
  port = 0;
  if (kind == broker_kind::kafka) {
#ifdef TARN_SANITIZED_BUILD
    return "the Kafka 4.4.0 reference half runs in the release build only";
#else
    if (kafka_libs().empty()) return "java or the Kafka 4.4.0 jars are missing";
    std::string properties;
    for (const auto& o : overrides) properties += " --property " + o;
    const std::string& error = kafka_broker::instance().start(properties);
    EXPECT_EQ(error, "");
    if (error.empty()) port = kafka_broker::instance().port();
    return "";
#endif
  }
  std::vector<std::string> args;
  for (const auto& o : overrides) {
    args.push_back("--override");
    args.push_back(o);
  }
  tarn = std::make_unique<broker_process>(std::move(args));
  EXPECT_NE(tarn->port(), 0) << tarn->output();
  port = tarn->port();
  return "";
}

// "<test name>-", without the parameter's suffix: the start of the names of a test's own topics
// and groups (the Kafka broker is shared by every test of the process).
inline std::string test_name_prefix() {
  const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  return name.substr(0, name.find('/')) + "-";
}

}  // namespace tarn::test
