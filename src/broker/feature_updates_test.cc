// UpdateFeatures' decisions: Kafka 4.4's messages (checked against kafka-ref by
// tests/features_test.cc) for each way an update fails, and the levels a valid one records.
#include "broker/feature_updates.h"

#include <gtest/gtest.h>

namespace tarn::broker {
namespace {

const cluster::feature_map now = {{"group.version", 1}, {"metadata.version", 33}};

std::string why(const std::vector<feature_update>& updates) {
  auto r = decide_feature_updates(now, updates, 1);
  if (r) return "ok";
  EXPECT_EQ(r.error().code, 95);  // INVALID_UPDATE_VERSION
  return r.error().message;
}

TEST(feature_updates, refusals_in_kafkas_words) {
  EXPECT_EQ(why({{"group.version", 2, 1}}),
            "Invalid update version 2 for feature group.version. Local controller 1 only supports "
            "versions 0-1");
  EXPECT_EQ(why({{"foo.version", 1, 1}}),
            "Invalid update version 1 for feature foo.version. Local controller 1 does not "
            "support this feature.");
  EXPECT_EQ(why({{"group.version", 0, 1}}),
            "Invalid update version 0 for feature group.version. Can't downgrade the version of "
            "this feature without setting the upgrade type to either safe or unsafe downgrade.");
  EXPECT_EQ(why({{"metadata.version", 34, 2}}),
            "Invalid update version 34 for feature metadata.version. Local controller 1 only "
            "supports versions 7-33");
  EXPECT_EQ(why({{"metadata.version", 32, 2}}),
            "Unsupported metadata.version downgrade from 33 to 32. Refusing to perform the "
            "requested downgrade because it might delete metadata information.");
  EXPECT_EQ(why({{"metadata.version", 32, 3}}),
            "Unsupported metadata.version downgrade from 33 to 32. Unsafe metadata downgrade is "
            "not supported in this version.");
  EXPECT_EQ(why({{"group.version", 1, 0}}),
            "Invalid update version 1 for feature group.version. The controller does not support "
            "the given upgrade type.");
  EXPECT_EQ(why({{"group.version", -1, 2}}),
            "Invalid update version -1 for feature group.version. A feature version cannot be "
            "less than 0.");
  // The first failure fails the request, whatever else is valid.
  EXPECT_NE(why({{"group.version", 0, 2}, {"group.version", 5, 1}}), "ok");
}

// KIP-966: eligible.leader.replicas.version 1 depends on metadata.version 23 (4.0-IV1), checked
// against the levels the request would leave (Kafka's Feature.validateVersion); 0 turns ELR off.
TEST(feature_updates, eligible_leader_replicas_depend_on_metadata_version) {
  const cluster::feature_map old_mv = {{"eligible.leader.replicas.version", 0},
                                       {"metadata.version", 22}};
  auto refused = decide_feature_updates(old_mv, {{"eligible.leader.replicas.version", 1, 1}}, 1);
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.error().message,
            "Invalid update version 1 for feature eligible.leader.replicas.version. "
            "eligible.leader.replicas.version could not be set to 1 because it depends on "
            "metadata.version level 23");
  auto with_mv = decide_feature_updates(
      old_mv, {{"metadata.version", 23, 1}, {"eligible.leader.replicas.version", 1, 1}}, 1);
  ASSERT_TRUE(with_mv.has_value()) << with_mv.error().message;
  EXPECT_EQ(with_mv->at("eligible.leader.replicas.version"), 1);
  auto off =
      decide_feature_updates({{"eligible.leader.replicas.version", 1}, {"metadata.version", 33}},
                             {{"eligible.leader.replicas.version", 0, 2}}, 1);
  ASSERT_TRUE(off.has_value()) << off.error().message;
  EXPECT_EQ(off->at("eligible.leader.replicas.version"), 0);
  EXPECT_EQ(why({{"eligible.leader.replicas.version", 2, 1}}),
            "Invalid update version 2 for feature eligible.leader.replicas.version. Local "
            "controller 1 only supports versions 0-1");
}

TEST(feature_updates, valid_updates_give_the_levels_to_record) {
  auto r = decide_feature_updates(now, {{"group.version", 0, 2}, {"metadata.version", 33, 1}}, 1);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(*r, (cluster::feature_map{{"group.version", 0}, {"metadata.version", 33}}));
  // A downgrade across levels that changed no metadata format is allowed (29 -> 28).
  r = decide_feature_updates({{"metadata.version", 29}}, {{"metadata.version", 28, 2}}, 1);
  ASSERT_TRUE(r.has_value()) << r.error().message;
  EXPECT_EQ(r->at("metadata.version"), 28);
  // From 0 back up.
  r = decide_feature_updates({{"group.version", 0}}, {{"group.version", 1, 1}}, 1);
  ASSERT_TRUE(r.has_value());
  // A name given twice: the last update counts.
  r = decide_feature_updates(now, {{"group.version", 7, 1}, {"group.version", 1, 1}}, 1);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->at("group.version"), 1);
}

}  // namespace
}  // namespace tarn::broker
