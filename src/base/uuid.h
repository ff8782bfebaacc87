// org.apache.kafka.common.Uuid (topic ids, directory ids): 128 bits, printed as 22 characters of
// unpadded base64url. No I/O: random() seeds from std::random_device once per thread.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tarn {

struct uuid {
  uint64_t most_significant_bits = 0;
  uint64_t least_significant_bits = 0;

  bool operator==(const uuid&) const = default;
  auto operator<=>(const uuid&) const = default;
  bool is_zero() const { return most_significant_bits == 0 && least_significant_bits == 0; }
  std::string to_string() const;
  // 32 lowercase hex digits, as Java's UUID.toString() without dashes (the -delete suffix).
  std::string to_hex() const;
  // Decodes the 22-character form (Uuid.fromString); nullopt when it is not 16 bytes.
  static std::optional<uuid> parse(std::string_view text);
  // Uuid.randomUuid: a version-4 random UUID that is not reserved (zero, one) and whose string
  // form does not start with '-'.
  static uuid random();
};

}  // namespace tarn
