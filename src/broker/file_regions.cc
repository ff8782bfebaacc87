// Splicing stored record slices into an encoded answer as file regions (file_regions.h).
#include "broker/file_regions.h"

#include <cstdint>

namespace tarn::broker {

namespace {

void put_be32(std::vector<uint8_t>& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
}

void put_uvarint(std::vector<uint8_t>& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}

}  // namespace

std::optional<response> splice_file_regions(const response& plain,
                                            std::span<const records_splice> splices,
                                            bool flexible) {
  const size_t empty_len = flexible ? 1 : 4;
  size_t last_end = 0;
  for (const auto& s : splices) {
    if (s.at < last_end || s.at + empty_len > plain.body.size()) return std::nullopt;
    const uint8_t* b = plain.body.data() + s.at;
    const bool ok = flexible ? b[0] == 1 : (b[0] | b[1] | b[2] | b[3]) == 0;
    if (!ok) return std::nullopt;
    last_end = s.at + empty_len;
  }
  response out;
  out.body.reserve(plain.body.size() + splices.size() * 4);
  size_t from = 0;
  for (const auto& s : splices) {
    out.body.insert(out.body.end(), plain.body.begin() + static_cast<std::ptrdiff_t>(from),
                    plain.body.begin() + static_cast<std::ptrdiff_t>(s.at));
    const auto length = static_cast<uint32_t>(s.slice->length);
    if (flexible) {
      put_uvarint(out.body, uint64_t{length} + 1);
    } else {
      put_be32(out.body, length);
    }
    out.file_regions.push_back({s.slice->file, s.slice->file->fd.get(), s.slice->position,
                                static_cast<size_t>(s.slice->length), out.body.size()});
    from = s.at + empty_len;
  }
  out.body.insert(out.body.end(), plain.body.begin() + static_cast<std::ptrdiff_t>(from),
                  plain.body.end());
  return out;
}

}  // namespace tarn::broker
