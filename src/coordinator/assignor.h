// The server-side partition assignors of KIP-848 consumer groups, chosen by a member's
// ServerAssignor or else by the first name of group.consumer.assignors:
//
//   uniform  Kafka's UniformAssignor: every member gets the same number of partitions, give or
//            take one, and keeps as many of the partitions its target assignment already had.
//            When all members subscribe to the same topics the quotas are exact (homogeneous
//            case); otherwise partitions go to the least loaded subscriber and are then moved
//            from the most to the least loaded subscriber of each topic (heterogeneous case).
//   range    Kafka's RangeAssignor: for each topic, the members subscribed to it (static members
//            first, by instance id, then the others by member id) take consecutive ranges, so
//            partition i of co-partitioned topics goes to the same member. Not sticky.
//
// The assignment is a pure function of the members (their subscriptions as topic ids of
// existing topics, and their current target assignment) and of the partition counts: no I/O,
// no clock, deterministic. Kafka's own outputs depend on Java hash-map iteration order where its
// algorithm leaves a choice; tarn breaks those ties by topic id and member id instead, and in
// the homogeneous case gives the partitions above the minimum quota to the members that already
// hold the most (fewer moves than Kafka's iteration order).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/metadata_view.h"

namespace tarn::coordinator {

using partition_set = std::set<int32_t>;
// Partitions by topic id; a topic with no partition is absent (never an empty set).
using topic_assignment = std::map<topic_uuid, partition_set>;

struct assignor_member {
  std::string member_id;
  std::optional<std::string> instance_id;
  std::optional<std::string> rack_id;
  // The topics the member subscribes to (names and resolved regex), existing topics only.
  std::set<topic_uuid> subscribed_topics;
  // The member's current target assignment, which the uniform assignor keeps where it can.
  topic_assignment assignment;
};

struct group_spec {
  std::vector<assignor_member> members;
  // The partition count of every topic some member subscribes to.
  std::map<topic_uuid, int32_t> partitions;
};

// The new target assignment of every member of the spec (members with nothing are present with
// an empty assignment).
using group_assignment = std::map<std::string, topic_assignment, std::less<>>;

class partition_assignor {
 public:
  virtual ~partition_assignor() = default;
  virtual std::string_view name() const = 0;
  virtual group_assignment assign(const group_spec& spec) const = 0;
};

class uniform_assignor final : public partition_assignor {
 public:
  static constexpr std::string_view assignor_name = "uniform";
  std::string_view name() const override { return assignor_name; }
  group_assignment assign(const group_spec& spec) const override;
};

class range_assignor final : public partition_assignor {
 public:
  static constexpr std::string_view assignor_name = "range";
  std::string_view name() const override { return assignor_name; }
  group_assignment assign(const group_spec& spec) const override;
};

// The assignor Kafka names `name` ("uniform", "range"), or nullptr.
const partition_assignor* find_assignor(std::string_view name);

// True when every member subscribes to the same topics (Kafka's SubscriptionType.HOMOGENEOUS).
bool is_homogeneous(const group_spec& spec);

// The number of partitions of an assignment.
int32_t partition_count(const topic_assignment& assignment);

}  // namespace tarn::coordinator
