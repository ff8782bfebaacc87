// Finalized features in ApiVersions and UpdateFeatures, against tarn and Kafka 4.4.0
// (scripts/kafka-ref) with the same assertions: kafka-features.sh describe prints the same
// metadata.version, group.version, transaction.version, share.version and
// eligible.leader.replicas.version lines (the epoch
// aside), and ApiVersions v3 leaves out supported features whose minimum is 0 (KAFKA-17011) while
// v4 lists them; UpdateFeatures v0-2 (hand-built, validate-only where it would change something)
// refuses as Kafka does in Kafka's words, and kafka-features.sh upgrade/downgrade/--dry-run print
// the same on both, a real downgrade of group.version to 0 and back showing in ApiVersions.
#include <gtest/gtest.h>

#include <optional>
#include <regex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kafka_client.h"
#include "kafka_ref_broker.h"
#include "protocol/messages/api_versions_request.h"
#include "protocol/messages/api_versions_response.h"
#include "protocol/messages/update_features_request.h"
#include "protocol/messages/update_features_response.h"
#include "test_util.h"

namespace tarn::test {
namespace {

class features : public ::testing::TestWithParam<broker_kind> {
 protected:
  void SetUp() override {
    if (auto skip = start_test_broker(GetParam(), {}, tarn_, port_); !skip.empty()) {
      GTEST_SKIP() << skip;
    }
    ASSERT_NE(port_, 0);
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
  EXPECT_NE(out.find("Feature: transaction.version SupportedMinVersion: 0 SupportedMaxVersion: 2 "
                     "FinalizedVersionLevel: 2"),
            std::string::npos)
      << out;
  // KIP-932 share groups: on in a fresh Kafka 4.4 cluster (ShareVersion's latest production level
  // at metadata.version 4.4-IV0 and later).
  EXPECT_NE(out.find("Feature: share.version SupportedMinVersion: 0 SupportedMaxVersion: 2 "
                     "FinalizedVersionLevel: 2"),
            std::string::npos)
      << out;  // KIP-966 eligible leader replicas: finalized at 1 on a new cluster since Kafka 4.1.
  EXPECT_NE(out.find("Feature: eligible.leader.replicas.version SupportedMinVersion: 0 "
                     "SupportedMaxVersion: 1 FinalizedVersionLevel: 1"),
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

struct update_answer {
  int16_t code = -1;
  std::optional<std::string> message;
  std::vector<std::pair<std::string, int16_t>> results;
};

// One UpdateFeatures request: (feature, level, upgrade type) each; v0 sends type 2 as
// AllowDowngrade.
update_answer update(const std::string& bootstrap, int16_t version,
                     const std::vector<std::tuple<std::string, int16_t, int8_t>>& updates,
                     bool validate_only) {
  auto c = tools::kafka_client::connect(bootstrap);
  EXPECT_TRUE(c.has_value());
  if (!c) return {};
  protocol::update_features_request req;
  for (const auto& [name, level, type] : updates) {
    auto& u = req.feature_updates.emplace_back();
    u.feature = name;
    u.max_version_level = level;
    u.upgrade_type = type;
    u.allow_downgrade = type == 2;
  }
  req.validate_only = validate_only;
  std::vector<uint8_t> buf;
  auto r = tools::call<protocol::update_features_response>(**c, req, version, buf);
  EXPECT_TRUE(r.has_value());
  if (!r) return {};
  update_answer a{r->error_code, std::nullopt, {}};
  if (r->error_message) a.message = std::string(*r->error_message);
  for (const auto& res : r->results)
    a.results.emplace_back(std::string(res.feature), res.error_code);
  return a;
}

int16_t finalized_level(const std::string& bootstrap, const std::string& feature) {
  auto c = tools::kafka_client::connect(bootstrap);
  if (!c) return -1;
  protocol::api_versions_request req;
  req.client_software_name = "tarn-test";
  req.client_software_version = "1";
  std::vector<uint8_t> buf;
  auto r = tools::call<protocol::api_versions_response>(**c, req, 4, buf);
  if (!r) return -1;
  for (const auto& f : r->finalized_features) {
    if (f.name == feature) return f.max_version_level;
  }
  return 0;
}

// The finalized level once it is `expected` (Kafka's broker learns a change from its controller a
// moment after UpdateFeatures answers), or the last one seen after 10 s.
int16_t level_once(const std::string& bootstrap, const std::string& feature, int16_t expected) {
  int16_t seen = -1;
  for (int i = 0; i < 100; ++i) {
    seen = finalized_level(bootstrap, feature);
    if (seen == expected) break;
    usleep(100 * 1000);
  }
  return seen;
}

const std::string failed_all =
    "The update failed for all features since the following feature had an error: ";

TEST_P(features, update_features_refuses_in_kafkas_words) {
  const std::string b = bootstrap();
  auto a = update(b, 1, {{"group.version", 2, 1}}, true);
  EXPECT_EQ(a.code, 95);
  EXPECT_EQ(a.message, failed_all +
                           "Invalid update version 2 for feature group.version. Local "
                           "controller 1 only supports versions 0-1");
  EXPECT_TRUE(a.results.empty());
  a = update(b, 1, {{"foo.version", 1, 1}}, true);
  EXPECT_EQ(a.message, failed_all +
                           "Invalid update version 1 for feature foo.version. Local "
                           "controller 1 does not support this feature.");
  a = update(b, 2, {{"group.version", 0, 1}}, true);
  EXPECT_EQ(a.message, failed_all +
                           "Invalid update version 0 for feature group.version. Can't downgrade "
                           "the version of this feature without setting the upgrade type to "
                           "either safe or unsafe downgrade.");
  a = update(b, 1, {{"metadata.version", 32, 2}}, true);
  EXPECT_EQ(a.message, failed_all +
                           "Unsupported metadata.version downgrade from 33 to 32. Refusing to "
                           "perform the requested downgrade because it might delete metadata "
                           "information.");
  a = update(b, 1, {{"metadata.version", 32, 3}}, true);
  EXPECT_EQ(a.message, failed_all +
                           "Unsupported metadata.version downgrade from 33 to 32. Unsafe metadata "
                           "downgrade is not supported in this version.");
  a = update(b, 1, {{"metadata.version", 34, 1}}, true);
  EXPECT_EQ(a.message, failed_all +
                           "Invalid update version 34 for feature metadata.version. "
                           "Local controller 1 only supports versions 7-33");
  a = update(b, 1, {{"group.version", 1, 0}}, true);
  EXPECT_EQ(a.message, failed_all +
                           "Invalid update version 1 for feature group.version. The "
                           "controller does not support the given upgrade type.");
  a = update(b, 1, {{"group.version", -1, 2}}, true);
  EXPECT_EQ(a.message, failed_all +
                           "Invalid update version -1 for feature group.version. A "
                           "feature version cannot be less than 0.");
  // v0 is always an upgrade: Kafka 4.4 ignores AllowDowngrade.
  a = update(b, 0, {{"group.version", 0, 2}}, false);
  EXPECT_EQ(a.code, 95);
  EXPECT_EQ(level_once(b, "group.version", 1), 1);

  // Valid, validate only (v1+): nothing changes; v1 answers one result per feature, v2 none.
  for (int16_t v : {int16_t{1}, int16_t{2}}) {
    a = update(b, v, {{"group.version", 0, 2}, {"metadata.version", 33, 1}}, true);
    EXPECT_EQ(a.code, 0) << "v" << v << " " << a.message.value_or("null");
    EXPECT_EQ(a.message, std::nullopt) << "v" << v;
    EXPECT_EQ(a.results.size(), v <= 1 ? 2u : 0u) << "v" << v;
    EXPECT_EQ(level_once(b, "group.version", 1), 1);
  }
  // v0, a level that is already finalized: success, one result.
  a = update(b, 0, {{"metadata.version", 33, 1}}, false);
  EXPECT_EQ(a.code, 0) << a.message.value_or("null");
  EXPECT_EQ(a.results.size(), 1u);
  // A real downgrade and back.
  a = update(b, 1, {{"group.version", 0, 2}}, false);
  EXPECT_EQ(a.code, 0) << a.message.value_or("null");
  EXPECT_EQ(level_once(b, "group.version", 0), 0);
  a = update(b, 2, {{"group.version", 1, 1}}, false);
  EXPECT_EQ(a.code, 0) << a.message.value_or("null");
  EXPECT_EQ(level_once(b, "group.version", 1), 1);
}

TEST_P(features, kafka_features_upgrade_and_downgrade) {
  if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing";
  // The tool's stdout; exit status 1 when an update fails.
  auto tool = [&](const std::string& args, int expected_rc = 0) {
    auto [rc, out] = run_command("timeout 120 java -cp '" + kafka_libs() +
                                 "/*' org.apache.kafka.tools.FeatureCommand --bootstrap-server " +
                                 bootstrap() + " " + args + " 2>/dev/null");
    EXPECT_EQ(rc, expected_rc) << args << ": " << out;
    return out;
  };
  EXPECT_EQ(tool("upgrade --feature group.version=2 --dry-run", 1),
            "Can not upgrade group.version to 2. " + failed_all +
                "Invalid update version 2 for feature group.version. Local controller 1 only "
                "supports versions 0-1\n1 out of 1 operation(s) failed.\n");
  EXPECT_EQ(tool("downgrade --feature metadata.version=32 --dry-run", 1),
            "Can not downgrade metadata.version to 32. " + failed_all +
                "Unsupported metadata.version downgrade from 33 to 32. Refusing to perform the "
                "requested downgrade because it might delete metadata information.\n1 out of 1 "
                "operation(s) failed.\n");
  EXPECT_EQ(tool("downgrade --feature group.version=0 --dry-run"),
            "group.version can be downgraded to 0.\n");
  EXPECT_EQ(tool("downgrade --feature group.version=0"), "group.version was downgraded to 0.\n");
  auto described = std::regex_replace(tool("describe"), std::regex(" +"), " ");
  EXPECT_NE(described.find("Feature: group.version SupportedMinVersion: 0 SupportedMaxVersion: 1 "
                           "FinalizedVersionLevel: 0"),
            std::string::npos)
      << described;
  EXPECT_EQ(tool("upgrade --feature group.version=1"), "group.version was upgraded to 1.\n");
  EXPECT_EQ(level_once(bootstrap(), "group.version", 1), 1);
}

INSTANTIATE_TEST_SUITE_P(brokers, features,
                         ::testing::Values(broker_kind::tarn, broker_kind::kafka), kind_name);

}  // namespace
}  // namespace tarn::test
