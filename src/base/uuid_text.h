// Kafka's text form of a Uuid (org.apache.kafka.common.Uuid.toString): the 16 bytes, most
// significant first, as 22 characters of unpadded URL-safe base64. Topic ids print this way in
// kafka-topics.sh, partition.metadata and the tools.
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace tarn {

inline std::string uuid_text(const std::array<uint8_t, 16>& bytes) {
  static constexpr char alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  out.reserve(22);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t n = uint32_t{bytes[i]} << 16;
    if (i + 1 < bytes.size()) n |= uint32_t{bytes[i + 1]} << 8;
    if (i + 2 < bytes.size()) n |= bytes[i + 2];
    out += alphabet[(n >> 18) & 63];
    out += alphabet[(n >> 12) & 63];
    if (i + 1 < bytes.size()) out += alphabet[(n >> 6) & 63];
    if (i + 2 < bytes.size()) out += alphabet[n & 63];
  }
  return out;
}

}  // namespace tarn
