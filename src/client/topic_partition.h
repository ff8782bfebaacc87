// A partition of a topic by name, as the producer, the consumer and the admin calls of the
// client name one (Kafka's TopicPartition). Ordered, so it can key std::map.
#pragma once

#include <compare>
#include <string>

#include "base/strong_types.h"

namespace tarn::client {

struct topic_partition {
  std::string topic;
  partition_id partition = -1;

  auto operator<=>(const topic_partition&) const = default;
};

}  // namespace tarn::client
