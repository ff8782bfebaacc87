// Test helpers (used only by *_test.cc): real v2 record batches with chosen offsets and
// timestamps, and temporary directories.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "base/strong_types.h"

namespace tarn::storage::testing {

namespace detail {
inline uint32_t crc32c_sw(const uint8_t* p, size_t n) {
  uint32_t crc = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
  }
  return ~crc;
}
inline void put_be(std::vector<uint8_t>& b, size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * (bytes - 1 - i)));
}
inline void put_varlong(std::vector<uint8_t>& b, int64_t v) {
  uint64_t z = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  while (z >= 0x80) {
    b.push_back(static_cast<uint8_t>(z | 0x80));
    z >>= 7;
  }
  b.push_back(static_cast<uint8_t>(z));
}
}  // namespace detail

// An uncompressed v2 batch of `count` records at offsets base_offset.., record i stamped
// base_timestamp + i, each with a value of `value_bytes` bytes.
inline std::vector<uint8_t> make_batch(offset_t base_offset, int32_t count,
                                       timestamp_ms base_timestamp, size_t value_bytes = 100,
                                       leader_epoch_t epoch = 0) {
  std::vector<uint8_t> b(61, 0);
  for (int32_t i = 0; i < count; ++i) {
    std::vector<uint8_t> r;
    r.push_back(0);              // attributes
    detail::put_varlong(r, i);   // timestampDelta
    detail::put_varlong(r, i);   // offsetDelta
    detail::put_varlong(r, -1);  // null key
    detail::put_varlong(r, static_cast<int64_t>(value_bytes));
    for (size_t k = 0; k < value_bytes; ++k) r.push_back(static_cast<uint8_t>('a' + (i + k) % 26));
    detail::put_varlong(r, 0);  // no headers
    detail::put_varlong(b, static_cast<int64_t>(r.size()));
    b.insert(b.end(), r.begin(), r.end());
  }
  detail::put_be(b, 0, static_cast<uint64_t>(base_offset), 8);
  detail::put_be(b, 8, b.size() - 12, 4);
  detail::put_be(b, 12, static_cast<uint32_t>(epoch), 4);
  b[16] = 2;
  detail::put_be(b, 21, 0, 2);  // attributes
  detail::put_be(b, 23, static_cast<uint32_t>(count - 1), 4);
  detail::put_be(b, 27, static_cast<uint64_t>(base_timestamp), 8);
  detail::put_be(b, 35, static_cast<uint64_t>(base_timestamp + count - 1), 8);
  detail::put_be(b, 43, static_cast<uint64_t>(-1), 8);  // producerId
  detail::put_be(b, 51, 0xffff, 2);                     // producerEpoch
  detail::put_be(b, 53, 0xffffffffu, 4);                // baseSequence
  detail::put_be(b, 57, static_cast<uint32_t>(count), 4);
  detail::put_be(b, 17, detail::crc32c_sw(b.data() + 21, b.size() - 21), 4);
  return b;
}

// A fresh directory under the test temp dir, removed on destruction.
class temp_dir {
 public:
  temp_dir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "tarn-storage-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace tarn::storage::testing
