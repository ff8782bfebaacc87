// The cleaner's offset map: see offset_map.h. Kafka's SkimpyOffsetMap is the model (MD5 there,
// MurmurHash3's 128-bit variant here: the map needs a well-spread 16-byte digest, not a
// cryptographic one, and Murmur is several times faster).
#include "storage/offset_map.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "storage/io.h"

namespace tarn::storage {
namespace {

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

uint64_t fmix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

uint64_t load_le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// MurmurHash3_x64_128 (Austin Appleby's public-domain algorithm), seed 0.
void murmur3_128(std::span<const uint8_t> data, uint64_t out[2]) {
  constexpr uint64_t c1 = 0x87c37b91114253d5ULL;
  constexpr uint64_t c2 = 0x4cf5ad432745937fULL;
  const size_t len = data.size();
  const size_t blocks = len / 16;
  uint64_t h1 = 0;
  uint64_t h2 = 0;
  const uint8_t* p = data.data();
  for (size_t i = 0; i < blocks; ++i) {
    uint64_t k1 = load_le64(p + i * 16);
    uint64_t k2 = load_le64(p + i * 16 + 8);
    k1 *= c1;
    k1 = rotl(k1, 31);
    k1 *= c2;
    h1 ^= k1;
    h1 = rotl(h1, 27);
    h1 += h2;
    h1 = h1 * 5 + 0x52dce729;
    k2 *= c2;
    k2 = rotl(k2, 33);
    k2 *= c1;
    h2 ^= k2;
    h2 = rotl(h2, 31);
    h2 += h1;
    h2 = h2 * 5 + 0x38495ab5;
  }
  const uint8_t* tail = p + blocks * 16;
  uint64_t k1 = 0;
  uint64_t k2 = 0;
  const size_t rest = len & 15;
  for (size_t i = rest; i > 8; --i) k2 = (k2 << 8) | tail[i - 1];
  if (rest > 8) {
    k2 *= c2;
    k2 = rotl(k2, 33);
    k2 *= c1;
    h2 ^= k2;
  }
  for (size_t i = std::min<size_t>(rest, 8); i > 0; --i) k1 = (k1 << 8) | tail[i - 1];
  if (rest > 0) {
    k1 *= c1;
    k1 = rotl(k1, 31);
    k1 *= c2;
    h1 ^= k1;
  }
  h1 ^= len;
  h2 ^= len;
  h1 += h2;
  h2 += h1;
  h1 = fmix(h1);
  h2 = fmix(h2);
  h1 += h2;
  h2 += h1;
  out[0] = h1;
  out[1] = h2;
}

int32_t load_be32(const uint8_t* p) {
  return static_cast<int32_t>((uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
                              (uint32_t{p[2]} << 8) | uint32_t{p[3]});
}

}  // namespace

result<std::unique_ptr<offset_map>, storage_error> offset_map::create(size_t memory_bytes) {
  std::unique_ptr<offset_map> m(new offset_map());
  m->slots_ = std::max<int64_t>(1, static_cast<int64_t>(memory_bytes / entry_bytes));
  m->table_slots_ = std::min(m->slots_, initial_table_slots);
  m->mapped_bytes_ = static_cast<size_t>(m->slots_) * entry_bytes;
  for (uint8_t** memory : {&m->slots_memory_, &m->spare_memory_}) {
    // The spare is needed only when the table can grow.
    if (memory == &m->spare_memory_ && m->table_slots_ == m->slots_) break;
    void* p = ::mmap(nullptr, m->mapped_bytes_, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return fail(io_error("mmap", "log cleaner dedupe buffer", errno));
    *memory = static_cast<uint8_t*>(p);
  }
  return m;
}

offset_map::~offset_map() {
  if (slots_memory_ != nullptr) ::munmap(slots_memory_, mapped_bytes_);
  if (spare_memory_ != nullptr) ::munmap(spare_memory_, mapped_bytes_);
}

offset_map::key_hash offset_map::hash_of(std::span<const uint8_t> key) {
  uint64_t h[2];
  murmur3_128(key, h);
  key_hash out;
  for (int i = 0; i < 8; ++i) {
    out.bytes[i] = static_cast<uint8_t>(h[0] >> (56 - 8 * i));
    out.bytes[8 + i] = static_cast<uint8_t>(h[1] >> (56 - 8 * i));
  }
  return out;
}

size_t offset_map::position_of(const key_hash& hash, int64_t attempt) const {
  // SkimpyOffsetMap.positionOf: the first attempts read different 4-byte windows of the hash,
  // later ones step linearly from the last window.
  const int64_t window = std::min<int64_t>(attempt, hash_bytes - 4);
  const int64_t probe =
      int64_t{load_be32(hash.bytes + window)} + std::max<int64_t>(0, attempt - (hash_bytes - 4));
  const int64_t slot = (probe & 0x7fffffffffffffffLL) % table_slots_;
  return static_cast<size_t>(slot) * entry_bytes;
}

namespace {

// Native-order word loads: slots are compared for equality only, so byte order does not matter,
// and three word compares beat memcmp calls on the probe path.
uint64_t word_at(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

bool same_hash(const uint8_t* slot, const uint8_t* hash) {
  return word_at(slot) == word_at(hash) && word_at(slot + 8) == word_at(hash + 8);
}

}  // namespace

bool offset_map::is_empty(size_t position) const {
  const uint8_t* slot = slots_memory_ + position;
  return (word_at(slot) | word_at(slot + 8) | word_at(slot + 16)) == 0;
}

uint8_t* offset_map::find_slot(const key_hash& hash) {
  for (int64_t attempt = 0;; ++attempt) {
    const size_t pos = position_of(hash, attempt);
    // The caller stops before the map is full (load factor < 1), so a free slot exists.
    if (is_empty(pos) || same_hash(slots_memory_ + pos, hash.bytes)) return slots_memory_ + pos;
    ++probes_;
  }
}

void offset_map::grow() {
  const int64_t old_slots = table_slots_;
  uint8_t* old = slots_memory_;
  slots_memory_ = spare_memory_;
  // Doubling while the new table is at most a quarter of the capacity, then the capacity at once:
  // a rehash holds both tables, so its peak stays under 1.25 x the buffer (doubling into the
  // capacity from just under it would hold nearly two buffers).
  table_slots_ = old_slots * 2 <= slots_ / 4 ? old_slots * 2 : slots_;
  for (int64_t i = 0; i < old_slots; ++i) {
    const uint8_t* entry = old + static_cast<size_t>(i) * entry_bytes;
    if ((word_at(entry) | word_at(entry + 8) | word_at(entry + 16)) == 0) continue;
    key_hash hash;
    std::memcpy(hash.bytes, entry, hash_bytes);
    std::memcpy(find_slot(hash), entry, entry_bytes);
  }
  // The old table's pages go back to the kernel and read as zeros: the next spare.
  const size_t old_bytes = static_cast<size_t>(old_slots) * entry_bytes;
  if (::madvise(old, old_bytes, MADV_DONTNEED) != 0) std::memset(old, 0, old_bytes);
  spare_memory_ = old;
}

void offset_map::put(std::span<const uint8_t> key, offset_t offset) {
  const key_hash hash = hash_of(key);
  ++lookups_;
  uint8_t* slot = find_slot(hash);
  if (is_empty(static_cast<size_t>(slot - slots_memory_))) {
    if (table_slots_ < slots_ && (entries_ + 1) * 2 > table_slots_) {
      grow();
      slot = find_slot(hash);
    }
    std::memcpy(slot, hash.bytes, hash_bytes);
    ++entries_;
  }
  for (int i = 0; i < 8; ++i) {
    slot[hash_bytes + i] = static_cast<uint8_t>(static_cast<uint64_t>(offset) >> (56 - 8 * i));
  }
  latest_offset_ = offset;
}

offset_t offset_map::get(std::span<const uint8_t> key) const {
  const key_hash hash = hash_of(key);
  ++lookups_;
  // A full map has no empty slot to stop at: give up after visiting every slot once.
  for (int64_t attempt = 0; attempt < table_slots_ + static_cast<int64_t>(hash_bytes); ++attempt) {
    const size_t pos = position_of(hash, attempt);
    if (is_empty(pos)) return -1;
    const uint8_t* slot = slots_memory_ + pos;
    if (same_hash(slot, hash.bytes)) {
      uint64_t v = 0;
      for (int i = 0; i < 8; ++i) v = (v << 8) | slot[hash_bytes + i];
      return static_cast<offset_t>(v);
    }
    ++probes_;
  }
  return -1;
}

void offset_map::clear() {
  // Private anonymous pages read back as zeros after MADV_DONTNEED: the map is empty and holds
  // no resident memory, without a 128 MiB memset per cleaning.
  const size_t used = static_cast<size_t>(table_slots_) * entry_bytes;
  if (entries_ > 0 && ::madvise(slots_memory_, used, MADV_DONTNEED) != 0) {
    std::memset(slots_memory_, 0, used);
  }
  table_slots_ = std::min(slots_, initial_table_slots);
  entries_ = 0;
  latest_offset_ = -1;
  lookups_ = 0;
  probes_ = 0;
}

}  // namespace tarn::storage
