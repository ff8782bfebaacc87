// Kafka's `.txnindex` files: one per segment (`<20-digit base offset>.txnindex`), the aborted
// transactions whose ABORT marker is in that segment, in marker order. Each entry is 34 bytes,
// big-endian: version int16 (0), producerId int64, firstOffset int64, lastOffset int64,
// lastStableOffset int64 (Kafka's AbortedTxn, TransactionIndex). Format: docs/transactions.md.
// A file is only appended to; a torn last entry (a crash mid-write) is ignored on read.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "base/result.h"
#include "storage/producer_state.h"
#include "storage/storage_error.h"

namespace tarn::storage {

inline constexpr size_t txn_index_entry_size = 34;
inline constexpr int16_t txn_index_version = 0;

std::array<uint8_t, txn_index_entry_size> encode_txn_index_entry(const aborted_txn& txn);
// The entries of a file's bytes; corrupt on an unknown version. A trailing partial entry is
// ignored.
result<std::vector<aborted_txn>, storage_error> decode_txn_index(std::span<const uint8_t> bytes);

// Reads `path` (a missing file is empty).
result<std::vector<aborted_txn>, storage_error> read_txn_index(const std::filesystem::path& path);
// Appends one entry to `path` (created if missing) and fsyncs it.
result<void, storage_error> append_txn_index(const std::filesystem::path& path,
                                             const aborted_txn& txn);
// Writes `entries` as the whole of `path` (created or truncated) and fsyncs it: the log cleaner's
// "<base>.txnindex.cleaned".
result<void, storage_error> write_txn_index(const std::filesystem::path& path,
                                            std::span<const aborted_txn> entries);

}  // namespace tarn::storage
