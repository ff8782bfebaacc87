// CRC-32C through ISA-L's crc32_iscsi, which dispatches to the fastest kernel for the CPU.
// crc32_iscsi takes and returns the raw register (no final xor), so the conventional CRC is the
// register seeded with ~0 and inverted at the end.
#include "record/crc32c.h"

#include <isa-l/crc.h>

#include <climits>

namespace tarn::record {

uint32_t crc32c_extend(uint32_t crc, std::span<const uint8_t> data) {
  uint32_t reg = ~crc;
  // crc32_iscsi takes an int length and a non-const pointer (it does not write).
  auto* p = const_cast<unsigned char*>(data.data());
  size_t left = data.size();
  constexpr size_t chunk = size_t{1} << 30;
  while (left > 0) {
    const size_t n = left < chunk ? left : chunk;
    reg = crc32_iscsi(p, static_cast<int>(n), reg);
    p += n;
    left -= n;
  }
  return ~reg;
}

uint32_t crc32c(std::span<const uint8_t> data) { return crc32c_extend(0, data); }

}  // namespace tarn::record
