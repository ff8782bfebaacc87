// libFuzzer target for log recovery (issue 9): the input becomes a partition directory after an
// unclean shutdown (a .log file, and optionally garbage .index/.timeindex files), the log is
// opened with recovery, and what survives must hold Kafka's invariants: every remaining batch
// passes its CRC and header checks, offsets increase, the file is whole batches, the log end
// offset follows the last batch, the indexes on disk point at batch starts inside the log, and a
// read at every batch's offsets finds that batch. Any violation aborts.
//
// Input layout: byte 0 holds flags (bit 0: write an .index, bit 1: write a .timeindex, bit 2: a
// second segment file after the first); byte 1 the length (0-255) of the garbage index bytes
// taken from the input's end; the rest is the .log file.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "record/record_batch.h"
#include "storage/log.h"
#include "storage/log_segment.h"

namespace {

namespace fs = std::filesystem;
using tarn::record::record_batch_view;

[[noreturn]] void violated(const char* what) {
  std::fprintf(stderr, "segment_recovery_fuzz: invariant violated: %s\n", what);
  std::abort();
}

void check(bool ok, const char* what) {
  if (!ok) violated(what);
}

void write(const fs::path& p, std::span<const uint8_t> bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

std::vector<uint8_t> read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

int64_t be(std::span<const uint8_t> b, size_t pos, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v = (v << 8) | b[pos + i];
  if (n == 4) return static_cast<int32_t>(static_cast<uint32_t>(v));
  return static_cast<int64_t>(v);
}

struct batch_at {
  int64_t position;
  int64_t base_offset;
  int64_t last_offset;
};

// Checks one segment file after recovery; returns its batches.
std::vector<batch_at> check_segment(const fs::path& dir, int64_t segment_base, int64_t& prev_last) {
  const auto log_bytes = read(dir / tarn::storage::segment_file_name(segment_base, ".log"));
  std::vector<batch_at> batches;
  tarn::record::batch_reader reader(log_bytes);
  record_batch_view batch;
  while (reader.next(batch)) {
    check(tarn::record::validate_batch(batch, tarn::record::offset_rule::stored).has_value(),
          "a remaining batch fails validate_batch (CRC or header)");
    check(batch.base_offset() > prev_last, "batch offsets do not increase");
    check(batch.base_offset() >= segment_base, "batch below its segment's base offset");
    check(batch.last_offset() >= batch.base_offset(), "last offset below base offset");
    prev_last = batch.last_offset();
    batches.push_back({static_cast<int64_t>(batch.bytes().data() - log_bytes.data()),
                       batch.base_offset(), batch.last_offset()});
  }
  check(reader.stop() == tarn::record::batch_stop::end, "the .log has bytes after its last batch");

  // .index: 8-byte entries (relative offset, position), offsets and positions increasing, each
  // at the start of a batch whose offsets cover the entry.
  const auto index = read(dir / tarn::storage::segment_file_name(segment_base, ".index"));
  check(index.size() % 8 == 0, ".index size is not a multiple of 8");
  int64_t prev_offset = -1, prev_pos = -1;
  for (size_t i = 0; i + 8 <= index.size(); i += 8) {
    const int64_t offset = segment_base + be(index, i, 4);
    const int64_t pos = be(index, i + 4, 4);
    if (offset == segment_base && pos == 0 && i > 0)
      violated(".index has a zero entry after the first");
    check(offset > prev_offset && pos > prev_pos, ".index entries do not increase");
    prev_offset = offset;
    prev_pos = pos;
    bool found = false;
    for (const auto& b : batches) {
      if (b.position == pos) {
        check(offset >= b.base_offset && offset <= b.last_offset,
              ".index entry offset outside the batch it points at");
        found = true;
      }
    }
    check(found, ".index entry does not point at a batch start");
  }
  // .timeindex: 12-byte entries (timestamp, relative offset), both non-decreasing, offsets
  // inside the segment.
  const auto time_index = read(dir / tarn::storage::segment_file_name(segment_base, ".timeindex"));
  check(time_index.size() % 12 == 0, ".timeindex size is not a multiple of 12");
  int64_t prev_ts = INT64_MIN, prev_rel = -1;
  for (size_t i = 0; i + 12 <= time_index.size(); i += 12) {
    const int64_t ts = be(time_index, i, 8);
    const int64_t offset = segment_base + be(time_index, i + 8, 4);
    check(ts >= prev_ts && offset >= prev_rel, ".timeindex entries decrease");
    prev_ts = ts;
    prev_rel = offset;
    check(!batches.empty() && offset <= batches.back().last_offset,
          ".timeindex entry past the segment's last offset");
  }
  return batches;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t flags = data[0];
  size_t garbage = data[1];
  std::span<const uint8_t> rest(data + 2, size - 2);
  garbage = std::min(garbage, rest.size());
  const auto index_garbage = rest.subspan(rest.size() - garbage);
  auto log_bytes = rest;

  static const fs::path root = [] {
    char pattern[] = "/tmp/tarn-segment-recovery-fuzz-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) std::abort();
    return fs::path(pattern);
  }();
  const fs::path dir = root / "t-0";
  fs::remove_all(dir);
  fs::create_directories(dir);

  // With bit 2 the input is split in two segments: the first at offset 0, the second at the
  // first batch's next offset (or 1), so recovery also has to drop or keep a later segment.
  if (flags & 4) {
    size_t half = log_bytes.size() / 2;
    int64_t second_base = 1;
    if (log_bytes.size() >= 12) {
      tarn::record::batch_reader r(log_bytes.first(half));
      record_batch_view b;
      while (r.next(b)) second_base = std::max<int64_t>(second_base, b.next_offset());
      if (second_base <= 0) second_base = 1;
    }
    write(dir / tarn::storage::segment_file_name(0, ".log"), log_bytes.first(half));
    write(dir / tarn::storage::segment_file_name(second_base, ".log"), log_bytes.subspan(half));
    if (flags & 1)
      write(dir / tarn::storage::segment_file_name(second_base, ".index"), index_garbage);
  } else {
    write(dir / tarn::storage::segment_file_name(0, ".log"), log_bytes);
  }
  if (flags & 1) write(dir / tarn::storage::segment_file_name(0, ".index"), index_garbage);
  if (flags & 2) write(dir / tarn::storage::segment_file_name(0, ".timeindex"), index_garbage);

  tarn::storage::log_options options;
  options.dir = dir;
  options.tp = {"t", 0};
  options.config.segment_bytes = 1 << 20;
  options.config.index_interval_bytes = 64;  // many index entries from small inputs
  options.config.segment_index_bytes = 4096;
  options.had_clean_shutdown = false;
  options.recovery_point = 0;
  options.now = 1000;
  tarn::storage::recovery_report report;
  auto opened = tarn::storage::log::open(options, &report);
  if (!opened) return 0;  // refusing to open is allowed (an error value), crashing is not
  auto& log = **opened;
  const int64_t leo = log.log_end_offset();
  const auto bases = log.segment_base_offsets();
  check(!bases.empty(), "a log without segments");

  // Every batch can be read back through the log at its base and last offsets.
  std::vector<batch_at> all;
  {
    int64_t prev_last = -1;
    // Indexes are trimmed to their entries at close; check the files after closing.
    std::vector<std::vector<batch_at>> per_segment;
    auto closed = log.close();
    check(closed.has_value(), "close failed after a successful open");
    for (size_t s = 0; s < bases.size(); ++s) {
      auto batches = check_segment(dir, bases[s], prev_last);
      all.insert(all.end(), batches.begin(), batches.end());
    }
    check(all.empty() ? leo >= 0 : leo == all.back().last_offset + 1,
          "log end offset is not the last batch's next offset");
  }
  opened->reset();

  // Reopen cleanly (as after a clean shutdown) and read every batch through the log.
  options.had_clean_shutdown = true;
  options.recovery_point = leo;
  auto reopened = tarn::storage::log::open(options, nullptr);
  check(reopened.has_value(), "a recovered log does not reopen");
  auto& again = **reopened;
  check(again.log_end_offset() == leo, "log end offset changed on a clean reopen");
  for (const auto& b : all) {
    for (int64_t offset : {b.base_offset, b.last_offset}) {
      if (offset < again.log_start_offset()) continue;
      auto r = again.read(offset, 1, true);
      check(r.has_value(), "reading a recovered batch failed");
      check(r->slice.has_value() && r->slice->length > 0, "no bytes for a recovered batch");
      std::vector<uint8_t> bytes(static_cast<size_t>(r->slice->length));
      check(tarn::storage::read_slice(*r->slice, bytes).has_value(), "read_slice failed");
      record_batch_view v(bytes);
      check(v.has_header() && v.base_offset() <= offset && v.last_offset() >= offset,
            "a read does not start with the batch holding the offset");
      check(v.crc_matches(), "a read served a batch failing its CRC");
    }
  }
  (void)again.close();
  return 0;
}
