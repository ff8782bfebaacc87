// Answers whose records go from the page cache to the socket (sendfile): an encoded body with
// an empty records field where each stored slice belongs, turned into the body around them and
// their file regions (Fetch and ShareFetch).
#pragma once

#include <cstddef>
#include <optional>
#include <span>

#include "broker/handler.h"
#include "storage/log_segment.h"

namespace tarn::broker {

// An empty records field at body offset `at` that stands for `slice`.
struct records_splice {
  size_t at = 0;
  const storage::file_slice* slice = nullptr;
};

// `plain` with the empty records field at each splice's offset (ascending) replaced by the
// slice's length and a file region of its bytes. A flexible version's empty records are the
// compact length 1, an older one's the int32 0. nullopt when a field there is not that empty
// one (the caller then copies the records instead).
std::optional<response> splice_file_regions(const response& plain,
                                            std::span<const records_splice> splices, bool flexible);

}  // namespace tarn::broker
