// The memory a consumer's fetched records live in: a Fetch response read into a buffer that grows
// without zeroing, and the decompressed records sections of its compressed batches, in chunks that
// never move once written (records borrow them: include/tarn/consumer_record_view.h). Arenas come
// from a pool and go back to it when the last holder lets go (the consumer's record buffer, or a
// caller's consumer_records, on any thread), so a steady poll loop reuses the same memory for
// every fetch instead of allocating, zeroing and faulting in a megabyte each time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "base/result.h"
#include "client/blocking_client.h"  // fetch_bytes
#include "record/compression.h"

namespace tarn::client {

class fetch_arena {
 public:
  // The Fetch response (the records of uncompressed batches are read where they are).
  fetch_bytes response;

  // Decompresses a batch's records section into the arena and returns the bytes, which stay
  // where they are until reset(); output beyond max_bytes is an error.
  result<std::span<const uint8_t>, record::codec_error> decompress(record::compression_type type,
                                                                   std::span<const uint8_t> input,
                                                                   size_t max_bytes);
  // Forgets what it holds, keeping the memory.
  void reset();
  // Bytes of decompression chunks held (for tests).
  size_t chunk_capacity() const;

 private:
  struct chunk {
    std::unique_ptr<uint8_t[]> data;
    size_t capacity = 0;
    size_t used = 0;
  };
  std::vector<chunk> chunks_;
  size_t current_ = 0;  // the chunk being filled
};

// Hands out arenas and takes them back. Thread-safe: an arena may be released on any thread.
class fetch_arena_pool : public std::enable_shared_from_this<fetch_arena_pool> {
 public:
  // Arenas kept idle at most; more are freed when released.
  static constexpr size_t max_idle = 4;

  static std::shared_ptr<fetch_arena_pool> create() {
    return std::shared_ptr<fetch_arena_pool>(new fetch_arena_pool());
  }
  // An idle arena (reset), or a new one. It returns to the pool when its last holder lets go;
  // the pool lives as long as any arena it gave out.
  std::shared_ptr<fetch_arena> take();

  size_t idle() const;
  size_t created() const;

 private:
  fetch_arena_pool() = default;
  void give_back(fetch_arena* arena);

  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<fetch_arena>> idle_;
  size_t created_ = 0;
};

}  // namespace tarn::client
