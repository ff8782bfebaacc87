// Request header decoding (see request_header.h). The first-flexible-version table is Kafka 4.3's
// message JSON (flexibleVersions); src/protocol's generated API table replaces it.
#include "broker/request_header.h"

#include <fmt/format.h>

namespace tarn::broker {

namespace {

int16_t be16(const uint8_t* p) { return static_cast<int16_t>((p[0] << 8) | p[1]); }
int32_t be32(const uint8_t* p) {
  return static_cast<int32_t>((uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
                              (uint32_t{p[2]} << 8) | uint32_t{p[3]});
}

// Unsigned varint of at most 5 bytes; nullopt when truncated or too long.
std::optional<uint32_t> read_uvarint(std::span<const uint8_t> in, size_t& pos) {
  uint32_t value = 0;
  for (int shift = 0; shift < 35; shift += 7) {
    if (pos >= in.size()) return std::nullopt;
    uint8_t b = in[pos++];
    value |= uint32_t{b & 0x7Fu} << shift;
    if ((b & 0x80) == 0) return value;
  }
  return std::nullopt;
}

}  // namespace

int16_t first_flexible_version(int16_t api_key) {
  switch (api_key) {
    case 0: return 9;    // Produce
    case 1: return 12;   // Fetch
    case 2: return 6;    // ListOffsets
    case 3: return 9;    // Metadata
    case 8: return 8;    // OffsetCommit
    case 9: return 6;    // OffsetFetch
    case 10: return 3;   // FindCoordinator
    case 11: return 6;   // JoinGroup
    case 12: return 4;   // Heartbeat
    case 13: return 4;   // LeaveGroup
    case 14: return 4;   // SyncGroup
    case 15: return 5;   // DescribeGroups
    case 16: return 3;   // ListGroups
    case 17: return 2;   // SaslHandshake: never flexible in practice; v2 does not exist
    case 18: return 3;   // ApiVersions
    case 19: return 5;   // CreateTopics
    case 20: return 4;   // DeleteTopics
    case 21: return 2;   // DeleteRecords
    case 22: return 2;   // InitProducerId
    case 23: return 4;   // OffsetForLeaderEpoch
    case 24: return 3;   // AddPartitionsToTxn
    case 25: return 3;   // AddOffsetsToTxn
    case 26: return 3;   // EndTxn
    case 28: return 3;   // TxnOffsetCommit
    case 32: return 4;   // DescribeConfigs
    case 33: return 2;   // AlterConfigs
    case 35: return 2;   // DescribeLogDirs
    case 36: return 2;   // SaslAuthenticate
    case 37: return 2;   // CreatePartitions
    case 42: return 2;   // DeleteGroups
    case 44: return 1;   // IncrementalAlterConfigs
    case 47: return 0;   // OffsetDelete
    case 60: return 0;   // DescribeCluster
    case 61: return 0;   // DescribeProducers
    case 65: return 0;   // DescribeTransactions
    case 66: return 0;   // ListTransactions
    default: return -1;
  }
}

uint8_t response_header_version(int16_t api_key, int16_t api_version) {
  if (api_key == 18) return 0;  // KIP-511: ApiVersions responses always use header v0
  int16_t flexible = first_flexible_version(api_key);
  return flexible >= 0 && api_version >= flexible ? 1 : 0;
}

std::optional<request_prefix> peek_request_prefix(std::span<const uint8_t> frame) {
  if (frame.size() < 8) return std::nullopt;
  return request_prefix{be16(frame.data()), be16(frame.data() + 2), be32(frame.data() + 4)};
}

result<request_header, std::string> parse_request_header(std::span<const uint8_t> frame) {
  auto prefix = peek_request_prefix(frame);
  if (!prefix || frame.size() < 10) {
    return fail(fmt::format("request header truncated ({} bytes)", frame.size()));
  }
  request_header h;
  h.api_key = prefix->api_key;
  h.api_version = prefix->api_version;
  h.correlation_id = prefix->correlation_id;
  int16_t flexible = first_flexible_version(h.api_key);
  h.header_version = flexible >= 0 && h.api_version >= flexible ? 2 : 1;

  // client_id is a non-compact nullable string in every header version.
  size_t pos = 8;
  int16_t len = be16(frame.data() + pos);
  pos += 2;
  if (len < -1) return fail(fmt::format("invalid client_id length {}", len));
  if (len >= 0) {
    if (frame.size() - pos < static_cast<size_t>(len)) {
      return fail(fmt::format("client_id length {} exceeds the {} bytes left", len,
                              frame.size() - pos));
    }
    h.client_id.emplace(reinterpret_cast<const char*>(frame.data() + pos), len);
    pos += static_cast<size_t>(len);
  }
  if (h.header_version == 2) {
    // Tagged fields: none are defined for the request header, so each is skipped.
    auto count = read_uvarint(frame, pos);
    if (!count) return fail(std::string("request header tagged fields truncated"));
    for (uint32_t i = 0; i < *count; ++i) {
      auto tag = read_uvarint(frame, pos);
      auto size = tag ? read_uvarint(frame, pos) : std::nullopt;
      if (!size || frame.size() - pos < *size) {
        return fail(std::string("request header tagged field truncated"));
      }
      pos += *size;
    }
  }
  h.size = pos;
  return h;
}

}  // namespace tarn::broker
