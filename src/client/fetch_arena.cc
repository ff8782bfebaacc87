// Fetch arenas and their pool (fetch_arena.h).
#include "client/fetch_arena.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace tarn::client {

namespace {

// A new chunk holds at least this much: a fetch's compressed batches usually fit one.
constexpr size_t min_chunk_bytes = 1 << 20;

}  // namespace

result<std::span<const uint8_t>, record::codec_error> fetch_arena::decompress(
    record::compression_type type, std::span<const uint8_t> input, size_t max_bytes) {
  auto stream = record::decompress_stream::open(type, input);
  if (!stream) return fail(stream.error());
  if (chunks_.empty()) chunks_.push_back({});
  size_t start = chunks_[current_].used;  // this batch's first byte in the current chunk
  while (true) {
    chunk* c = &chunks_[current_];
    if (c->used == c->capacity) {
      // Full (or never allocated): the next chunk that is free, or a new one, twice what this
      // batch holds so far; the batch's bytes so far move with it (nothing borrows them yet).
      const size_t so_far = c->used - start;
      const size_t wanted = std::max(min_chunk_bytes, 2 * so_far);
      size_t next = current_ + 1;
      while (next < chunks_.size() && chunks_[next].capacity < wanted) ++next;
      if (next == chunks_.size()) {
        chunks_.push_back({std::unique_ptr<uint8_t[]>(new uint8_t[wanted]), wanted, 0});
      }
      // Chunks skipped over stay empty until the next reset(): an arena's memory is bounded by
      // what one fetch needed.
      chunk& to = chunks_[next];
      c = &chunks_[current_];
      if (so_far > 0) std::memcpy(to.data.get(), c->data.get() + start, so_far);
      to.used = so_far;
      c->used = start;
      current_ = next;
      start = 0;
      c = &to;
    }
    if (c->used - start >= max_bytes) {
      // At the bound: one more byte tells whether the stream goes on past it.
      uint8_t probe;
      auto n = stream->read({&probe, 1});
      if (!n) return fail(n.error());
      if (*n == 0) break;
      return fail(record::codec_error{std::string(record::compression_name(type)) +
                                      ": decompressed size exceeds the limit of " +
                                      std::to_string(max_bytes) + " bytes"});
    }
    const size_t room = std::min(c->capacity - c->used, max_bytes - (c->used - start));
    auto n = stream->read({c->data.get() + c->used, room});
    if (!n) return fail(n.error());
    if (*n == 0) break;
    c->used += *n;
  }
  const chunk& c = chunks_[current_];
  return std::span<const uint8_t>(c.data.get() + start, c.used - start);
}

void fetch_arena::reset() {
  response.clear();
  for (auto& c : chunks_) c.used = 0;
  current_ = 0;
}

size_t fetch_arena::chunk_capacity() const {
  size_t n = 0;
  for (const auto& c : chunks_) n += c.capacity;
  return n;
}

std::shared_ptr<fetch_arena> fetch_arena_pool::take() {
  std::unique_ptr<fetch_arena> arena;
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      arena = std::move(idle_.back());
      idle_.pop_back();
    } else {
      ++created_;
    }
  }
  if (!arena) arena = std::make_unique<fetch_arena>();
  arena->reset();
  return std::shared_ptr<fetch_arena>(
      arena.release(), [pool = shared_from_this()](fetch_arena* a) { pool->give_back(a); });
}

void fetch_arena_pool::give_back(fetch_arena* arena) {
  std::unique_ptr<fetch_arena> owned(arena);
  std::lock_guard lock(mutex_);
  if (idle_.size() < max_idle) idle_.push_back(std::move(owned));
}

size_t fetch_arena_pool::idle() const {
  std::lock_guard lock(mutex_);
  return idle_.size();
}

size_t fetch_arena_pool::created() const {
  std::lock_guard lock(mutex_);
  return created_;
}

}  // namespace tarn::client
