// CRC-32C (Castagnoli), the checksum of a v2 record batch, with Kafka's conventions (initial
// value and final xor all ones; the check value of "123456789" is 0xe3069283). Computed by ISA-L.
#pragma once

#include <cstdint>
#include <span>

namespace tarn::record {

// The CRC-32C of `data`.
uint32_t crc32c(std::span<const uint8_t> data);

// Continues a finished CRC over more bytes: crc32c_extend(crc32c(a), b) == crc32c(a + b), and
// crc32c_extend(0, b) == crc32c(b).
uint32_t crc32c_extend(uint32_t crc, std::span<const uint8_t> data);

}  // namespace tarn::record
