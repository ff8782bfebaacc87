// What the group coordinator needs to know of the broker's topics: whether a partition exists
// (OffsetCommit answers UNKNOWN_TOPIC_OR_PARTITION otherwise), and, for KIP-848 groups whose
// assignment the coordinator computes, each topic's id and partition count. Implemented by the
// broker over its topic map; unit tests fill one in memory.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tarn::coordinator {

using topic_uuid = std::array<uint8_t, 16>;

struct topic_description {
  std::string name;
  topic_uuid id{};
  int32_t partitions = 0;
};

class metadata_view {
 public:
  virtual ~metadata_view() = default;
  virtual std::optional<topic_description> topic(std::string_view name) const = 0;
  virtual std::optional<topic_description> topic_by_id(const topic_uuid& id) const = 0;
  // Every topic (for regex subscriptions), internal ones included.
  virtual std::vector<topic_description> topics() const = 0;
};

}  // namespace tarn::coordinator
