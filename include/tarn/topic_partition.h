// A partition of a topic by name, as the producer, the consumer and the admin calls of the
// client name one (Kafka's TopicPartition). Ordered, so it can key std::map.
#pragma once

#include <compare>
#include <cstdint>
#include <string>

namespace tarn::client {

struct topic_partition {
  std::string topic;
  int32_t partition = -1;

  auto operator<=>(const topic_partition&) const = default;
};

}  // namespace tarn::client
