// Finalized features in ApiVersions, against tarn and Kafka 4.4.0 (scripts/kafka-ref) with the
// same assertions: kafka-features.sh describe prints the same metadata.version and group.version
// lines (the epoch aside), and ApiVersions v3 leaves out supported features whose minimum is 0
// (KAFKA-17011) while v4 lists them.
#include <gtest/gtest.h>

#include <regex>

#include "kafka_ref_broker.h"
#include "protocol/messages/api_versions_request.h"
#include "protocol/messages/api_versions_response.h"
#include "test_util.h"
#include "tools/kafka_client.h"

namespace tarn::test {
namespace {

enum class broker_kind { tarn, kafka };

std::string kind_name(const ::testing::TestParamInfo<broker_kind>& info) {
  return info.param == broker_kind::tarn ? "tarn" : "kafka";
}

class features : public ::testing::TestWithParam<broker_kind> {
 protected:
  void SetUp() override {
    if (GetParam() == broker_kind::kafka) {
#ifdef TARN_SANITIZED_BUILD
      GTEST_SKIP() << "the Kafka 4.4.0 reference half runs in the release build only";
#endif
      if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing";
      const auto& error = kafka_broker::instance().start();
      ASSERT_EQ(error, "");
      port_ = kafka_broker::instance().port();
    } else {
      tarn_ = std::make_unique<broker_process>();
      ASSERT_NE(tarn_->port(), 0) << tarn_->output();
      port_ = tarn_->port();
    }
  }
  void TearDown() override {
    if (tarn_) tarn_->stop();
  }
  std::string bootstrap() const { return "127.0.0.1:" + std::to_string(port_); }

  std::unique_ptr<broker_process> tarn_;
  uint16_t port_ = 0;
};

TEST_P(features, kafka_features_describe) {
  if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing";
  auto [rc, out] = run_command("timeout 120 java -cp '" + kafka_libs() +
                               "/*' org.apache.kafka.tools.FeatureCommand --bootstrap-server " +
                               bootstrap() + " describe 2>/dev/null");
  ASSERT_EQ(rc, 0) << out;
  out = std::regex_replace(out, std::regex("\tEpoch: [0-9]+"), "");
  out = std::regex_replace(out, std::regex(" +"), " ");
  EXPECT_NE(out.find("Feature: metadata.version SupportedMinVersion: 3.3-IV3 SupportedMaxVersion: "
                     "4.4-IV2 FinalizedVersionLevel: 4.4-IV2"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("Feature: group.version SupportedMinVersion: 0 SupportedMaxVersion: 1 "
                     "FinalizedVersionLevel: 1"),
            std::string::npos)
      << out;
}

TEST_P(features, api_versions_v3_leaves_out_features_with_minimum_0) {
  auto c = tools::kafka_client::connect(bootstrap());
  ASSERT_TRUE(c.has_value());
  for (int16_t v : {int16_t{3}, int16_t{4}}) {
    protocol::api_versions_request req;
    req.client_software_name = "tarn-test";
    req.client_software_version = "1";
    std::vector<uint8_t> buf;
    auto r = tools::call<protocol::api_versions_response>(**c, req, v, buf);
    ASSERT_TRUE(r.has_value());
    bool group = false, metadata = false;
    for (const auto& f : r->supported_features) {
      if (f.name == "group.version") group = true;
      if (f.name == "metadata.version") {
        metadata = true;
        EXPECT_EQ(f.min_version, 7);
        EXPECT_EQ(f.max_version, 33);
      }
    }
    EXPECT_EQ(group, v >= 4) << "v" << v;
    EXPECT_TRUE(metadata) << "v" << v;
    EXPECT_GE(r->finalized_features_epoch, 0);
    bool finalized_mv = false;
    for (const auto& f : r->finalized_features) {
      if (f.name == "metadata.version") {
        finalized_mv = true;
        EXPECT_EQ(f.max_version_level, 33);
        EXPECT_EQ(f.min_version_level, 33);
      }
    }
    EXPECT_TRUE(finalized_mv) << "v" << v;
  }
}

INSTANTIATE_TEST_SUITE_P(brokers, features,
                         ::testing::Values(broker_kind::tarn, broker_kind::kafka), kind_name);

}  // namespace
}  // namespace tarn::test
