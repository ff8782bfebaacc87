// The consumer protocol's version-prefixed subscription and assignment (see consumer_protocol.h),
// through the codecs generated from schema/consumer_protocol_*.schema.
#include "client/consumer_protocol.h"

#include <algorithm>

#include "protocol/messages/consumer_protocol_assignment.h"
#include "protocol/messages/consumer_protocol_subscription.h"
#include "protocol/reader.h"
#include "protocol/writer.h"

namespace tarn::client {
namespace {

template <typename Message>
std::vector<uint8_t> encode_prefixed(const Message& m, int16_t version) {
  version = std::clamp(version, Message::min_version, Message::max_version);
  std::vector<uint8_t> out;
  out.reserve(2 + m.encoded_size(version));
  protocol::writer w(out);
  w.write_int16(version);
  m.encode(w, version);
  return out;
}

// Reads the version and the message at min(version, the highest we know).
template <typename Message>
result<Message, std::string> decode_prefixed(std::span<const uint8_t> bytes) {
  protocol::reader r(bytes);
  const int16_t version = r.read_int16();
  if (!r.ok()) return fail(std::string(Message::kafka_name) + ": no version");
  if (version < Message::min_version) {
    return fail(std::string(Message::kafka_name) + ": unsupported version " +
                std::to_string(version));
  }
  auto m = Message::decode(r, std::min(version, Message::max_version));
  if (!m) {
    return fail(std::string(Message::kafka_name) + ": " +
                std::string(protocol::describe(m.error().code)) + " at byte " +
                std::to_string(m.error().offset));
  }
  return std::move(*m);
}

std::optional<std::vector<uint8_t>> copy(const std::optional<protocol::bytes_view>& b) {
  if (!b) return std::nullopt;
  return std::vector<uint8_t>(b->begin(), b->end());
}

std::optional<protocol::bytes_view> view(const std::optional<std::vector<uint8_t>>& b) {
  if (!b) return std::nullopt;
  return protocol::bytes_view(*b);
}

template <typename TopicPartition>
std::vector<TopicPartition> to_wire(const std::vector<topic_partitions>& in) {
  std::vector<TopicPartition> out;
  out.reserve(in.size());
  for (const auto& tp : in) {
    TopicPartition t;
    t.topic = tp.topic;
    t.partitions = tp.partitions;
    out.push_back(std::move(t));
  }
  return out;
}

template <typename TopicPartition>
std::vector<topic_partitions> from_wire(const std::vector<TopicPartition>& in) {
  std::vector<topic_partitions> out;
  out.reserve(in.size());
  for (const auto& tp : in) out.push_back({std::string(tp.topic), tp.partitions});
  return out;
}

}  // namespace

std::vector<uint8_t> encode_subscription(const consumer_subscription& s, int16_t version) {
  protocol::consumer_protocol_subscription m;
  m.topics.assign(s.topics.begin(), s.topics.end());
  m.user_data = view(s.user_data);
  m.owned_partitions =
      to_wire<protocol::consumer_protocol_subscription::topic_partition>(s.owned_partitions);
  m.generation_id = s.generation_id;
  if (s.rack_id) m.rack_id = *s.rack_id;
  return encode_prefixed(m, version);
}

std::vector<uint8_t> encode_assignment(const consumer_assignment& a, int16_t version) {
  protocol::consumer_protocol_assignment m;
  m.assigned_partitions =
      to_wire<protocol::consumer_protocol_assignment::topic_partition>(a.partitions);
  m.user_data = view(a.user_data);
  return encode_prefixed(m, version);
}

result<consumer_subscription, std::string> decode_subscription(std::span<const uint8_t> bytes) {
  auto m = decode_prefixed<protocol::consumer_protocol_subscription>(bytes);
  if (!m) return fail(m.error());
  consumer_subscription s;
  s.topics.assign(m->topics.begin(), m->topics.end());
  s.user_data = copy(m->user_data);
  s.owned_partitions = from_wire(m->owned_partitions);
  s.generation_id = m->generation_id;
  if (m->rack_id) s.rack_id = std::string(*m->rack_id);
  return s;
}

result<consumer_assignment, std::string> decode_assignment(std::span<const uint8_t> bytes) {
  consumer_assignment a;
  // An empty assignment (a member the leader gave nothing, or one that left) has no bytes at
  // all; Kafka's consumer reads it as no partitions.
  if (bytes.empty()) return a;
  auto m = decode_prefixed<protocol::consumer_protocol_assignment>(bytes);
  if (!m) return fail(m.error());
  a.partitions = from_wire(m->assigned_partitions);
  a.user_data = copy(m->user_data);
  return a;
}

}  // namespace tarn::client
