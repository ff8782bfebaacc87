// What the files of a KIP-848 consumer group share (consumer_group.cc, consumer_group_classic.cc):
// Kafka's member ids, tarn's MetadataHash, the subscribed names of a member, and the consumer
// protocol's bytes a classic member sends and gets. Internal to the coordinator.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "coordinator/consumer_group.h"
#include "coordinator/metadata_view.h"

namespace tarn::coordinator {

using regex_map = std::map<std::string, resolved_regex, std::less<>>;

// The protocol type of consumers (Kafka's ConsumerProtocol.PROTOCOL_TYPE).
inline constexpr std::string_view consumer_protocol_type = "consumer";

// Kafka's Uuid.randomUuid().toString(): 16 random bytes in unpadded URL-safe base64.
std::string random_member_id();

// tarn's MetadataHash: FNV-1a over the subscribed topics that exist (name, id, partition
// count), in name order; 0 for none. It changes when a subscribed topic is created, deleted or
// grows, which is all Kafka's XXH3-based hash is used for.
int64_t topics_hash(const std::set<std::string>& names, const metadata_view& metadata);

// The names a member subscribes to: its topic names and its regex's topics once resolved.
template <class F>
void for_each_subscribed_name(const consumer_group_member& m, const regex_map& regexes, F&& f) {
  for (const auto& n : m.subscribed_topic_names) f(n);
  if (m.subscribed_topic_regex.empty()) return;
  auto it = regexes.find(m.subscribed_topic_regex);
  if (it == regexes.end()) return;  // unresolved: no topics, to be conservative
  for (const auto& n : it->second.topics) f(n);
}

// A ConsumerProtocolSubscription (the metadata of a JoinGroup protocol): its version prefix and
// the fields the coordinator reads.
struct consumer_subscription {
  int16_t version = 0;
  std::vector<std::string> topics;
  std::vector<std::pair<std::string, std::vector<int32_t>>> owned_partitions;  // v1+
  std::optional<std::string> rack_id;                                          // v3+
};
result<consumer_subscription, std::string> decode_consumer_subscription(
    std::span<const uint8_t> bytes);
// A ConsumerProtocolAssignment's topics and partitions by name.
result<std::vector<std::pair<std::string, std::vector<int32_t>>>, std::string>
decode_consumer_assignment(std::span<const uint8_t> bytes);
// Kafka's ConsumerProtocol.serializeAssignment of partitions by topic id (topics `metadata` no
// longer has are left out) at `version` (clamped to the versions the protocol has).
std::vector<uint8_t> encode_consumer_assignment(const topic_assignment& partitions,
                                                const metadata_view& metadata, int16_t version);

}  // namespace tarn::coordinator
