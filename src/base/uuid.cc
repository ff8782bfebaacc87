// Uuid's text forms and Uuid.randomUuid: see uuid.h.
#include "base/uuid.h"

#include <array>
#include <random>

#include "base/uuid_text.h"
#include "fmt/format.h"

namespace tarn {
namespace {

int base64url_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '-') return 62;
  if (c == '_') return 63;
  return -1;
}

}  // namespace

std::string uuid::to_string() const {
  std::array<uint8_t, 16> bytes;
  for (size_t i = 0; i < 8; ++i) {
    bytes[i] = static_cast<uint8_t>(most_significant_bits >> (56 - 8 * i));
    bytes[8 + i] = static_cast<uint8_t>(least_significant_bits >> (56 - 8 * i));
  }
  return uuid_text(bytes);
}

std::string uuid::to_hex() const {
  return fmt::format("{:016x}{:016x}", most_significant_bits, least_significant_bits);
}

std::optional<uuid> uuid::parse(std::string_view text) {
  // 16 bytes are 22 characters unpadded; Java's decoder also takes "==" padding.
  if (text.size() == 24 && text.substr(22) == "==") text = text.substr(0, 22);
  if (text.size() != 22) return std::nullopt;
  uint8_t bytes[16];
  size_t out = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    int v = base64url_value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes[out++] = static_cast<uint8_t>(acc >> bits);
    }
  }
  // The last character carries 2 bits of padding that a canonical encoding leaves zero.
  if ((acc & ((1u << bits) - 1)) != 0 || out != 16) return std::nullopt;
  uuid u;
  for (int i = 0; i < 8; ++i) {
    u.most_significant_bits = (u.most_significant_bits << 8) | bytes[i];
    u.least_significant_bits = (u.least_significant_bits << 8) | bytes[8 + i];
  }
  return u;
}

uuid uuid::random() {
  static thread_local std::mt19937_64 rng = [] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }();
  while (true) {
    uuid u{rng(), rng()};
    // java.util.UUID.randomUUID: version 4, IETF variant.
    u.most_significant_bits = (u.most_significant_bits & ~0xf000ull) | 0x4000ull;
    u.least_significant_bits = (u.least_significant_bits & ~(0xc0ull << 56)) | (0x80ull << 56);
    bool reserved = u.is_zero() || (u.most_significant_bits == 0 && u.least_significant_bits == 1);
    if (!reserved && u.to_string().front() != '-') return u;
  }
}

}  // namespace tarn
