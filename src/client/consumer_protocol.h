// Kafka's consumer protocol, the bytes inside the classic group APIs for protocol type
// "consumer": a member's subscription (JoinGroup protocol metadata, DescribeGroups member
// metadata) and its assignment (SyncGroup, DescribeGroups member assignment). Each is an int16
// version followed by ConsumerProtocolSubscription / ConsumerProtocolAssignment at that version
// (schema/consumer_protocol_*.schema); a version newer than 3 is read as version 3, as Kafka's
// ConsumerProtocol does (newer versions only append fields).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"

namespace tarn::client {

// One topic's partitions, in the order they were written.
struct topic_partitions {
  std::string topic;
  std::vector<int32_t> partitions;
  bool operator==(const topic_partitions&) const = default;
};

struct consumer_subscription {
  std::vector<std::string> topics;
  std::optional<std::vector<uint8_t>> user_data;
  std::vector<topic_partitions> owned_partitions;  // v1+
  int32_t generation_id = -1;                      // v2+
  std::optional<std::string> rack_id;              // v3+
  bool operator==(const consumer_subscription&) const = default;
};

struct consumer_assignment {
  std::vector<topic_partitions> partitions;
  std::optional<std::vector<uint8_t>> user_data;
  bool operator==(const consumer_assignment&) const = default;
};

// The version Kafka 4.4's consumer writes (ConsumerProtocolSubscription's highest).
inline constexpr int16_t consumer_protocol_version = 3;

std::vector<uint8_t> encode_subscription(const consumer_subscription& s,
                                         int16_t version = consumer_protocol_version);
std::vector<uint8_t> encode_assignment(const consumer_assignment& a,
                                       int16_t version = consumer_protocol_version);

// The version prefix and the struct; trailing bytes are ignored (a newer version's fields).
result<consumer_subscription, std::string> decode_subscription(std::span<const uint8_t> bytes);
result<consumer_assignment, std::string> decode_assignment(std::span<const uint8_t> bytes);

}  // namespace tarn::client
