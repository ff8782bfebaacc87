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
#include "record/batch_builder.h"

namespace tarn::storage::testing {

// An uncompressed v2 batch of `count` records at offsets base_offset.., record i stamped
// base_timestamp + i, each with a null key and a value of `value_bytes` bytes, built by
// tarn::record's batch builder.
inline std::vector<uint8_t> make_batch(offset_t base_offset, int32_t count,
                                       timestamp_ms base_timestamp, size_t value_bytes = 100,
                                       leader_epoch_t epoch = 0) {
  record::batch_builder_config config;
  config.batch_size = 1 << 30;
  config.base_offset = base_offset;
  config.partition_leader_epoch = epoch;
  record::batch_builder builder(config);
  std::vector<uint8_t> value(value_bytes);
  for (int32_t i = 0; i < count; ++i) {
    for (size_t k = 0; k < value_bytes; ++k) value[k] = static_cast<uint8_t>('a' + (i + k) % 26);
    builder.try_append(base_timestamp + i, std::nullopt, record::bytes_view(value));
  }
  auto built = builder.build();
  return built ? std::move(*built) : std::vector<uint8_t>{};
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
