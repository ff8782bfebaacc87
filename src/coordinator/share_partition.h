// One share-partition's delivery state (KIP-932, Kafka 4.4's SharePartition): the share-partition
// start offset (SPSO), end offset (SPEO) and, between them, every in-flight record with its state,
// delivery count and acquisition lock. Pure state machine: time is passed in, lock expiry happens
// when an operation (or expire_locks) sees a deadline in the past, so unit tests need no clock.
//
//          acquire (delivery count + 1, lock until now + record.lock.duration.ms)
//   Available ─────────────────────────────► Acquired ──ACCEPT──► Acknowledged ─┐
//      ▲                                      │  │ │                              │ SPSO moves
//      └── RELEASE / lock expiry / member ────┘  │ └─REJECT, GAP──► Archived ─────┤ over the
//          left, while delivery count < limit    │                     ▲          │ finished prefix
//                                                └── the same at the ──┘          ▼
//                                                    delivery-count limit     (forgotten)
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/share_state.h"
#include "protocol/error_codes.h"

namespace tarn::coordinator {

// Kafka's RecordState ids (what Kafka persists in __share_group_state and shows in logs).
enum class record_state : int8_t { available = 0, acquired = 1, acknowledged = 2, archived = 4 };

// The AcknowledgeTypes of ShareFetch/ShareAcknowledge (RENEW from v2, KIP-1222).
enum class acknowledge_type : int8_t { gap = 0, accept = 1, release = 2, reject = 3, renew = 4 };

struct share_partition_config {
  int32_t record_lock_duration_ms = 30000;  // group.share.record.lock.duration.ms
  int32_t delivery_count_limit = 5;         // group.share.delivery.count.limit
  int32_t max_record_locks = 2000;          // group.share.partition.max.record.locks
  // share.renew.acknowledge.enable: false makes a RENEW INVALID_RECORD_STATE, as Kafka's
  // SharePartition ("Renewing acquisition locks is not enabled for the group.").
  bool renew_acknowledge_enabled = true;
};

// A record batch as read from the log: its offsets, and whether it is a control batch
// (transaction markers are never delivered: archived as they are passed) or, for a group with
// share.isolation.level=read_committed, a batch of an aborted transaction (archived the same
// way, as Kafka's SharePartition archives them).
struct fetched_batch {
  int64_t base_offset = 0;
  int64_t last_offset = 0;
  bool is_control = false;
  bool aborted = false;
  bool never_delivered() const { return is_control || aborted; }
};

// share.isolation.level=read_committed: which batches read (below the last stable offset) belong
// to aborted transactions, the way Kafka's consumer filters a read_committed fetch and its
// SharePartition filters what it acquires. Given the aborted transactions overlapping the read
// (producer id, first offset; storage's collect_aborted_txns), each batch is asked in log order.
class aborted_batch_filter {
 public:
  struct aborted_transaction {
    int64_t producer_id = -1;
    int64_t first_offset = 0;
  };
  explicit aborted_batch_filter(std::vector<aborted_transaction> aborted);
  // True for a transactional data batch of a producer whose aborted transaction is open at its
  // offset; the producer's control batch (its ABORT marker) closes that transaction.
  bool aborted(int64_t base_offset, int64_t producer_id, bool is_transactional, bool is_control);

 private:
  std::vector<aborted_transaction> pending_;  // by first offset, not reached yet
  size_t next_ = 0;
  std::vector<int64_t> open_;  // producers inside an aborted transaction
};

// What ShareFetch answers as AcquiredRecords: consecutive offsets with one delivery count.
struct acquired_range {
  int64_t first_offset = 0;
  int64_t last_offset = 0;
  int16_t delivery_count = 0;
  bool operator==(const acquired_range&) const = default;
};

// One AcknowledgementBatch: one type for the whole range, or one per offset.
struct acknowledgement_batch {
  int64_t first_offset = 0;
  int64_t last_offset = 0;
  std::vector<int8_t> acknowledge_types;
};

// The checks Kafka's KafkaApis makes on a partition's acknowledgement batches before they reach
// the share-partition: first <= last, batches in ascending order (a batch may not start below
// the previous one's last offset), one type or one per offset, types within 0..max_type
// (3, or 4 when RENEW is allowed). INVALID_REQUEST when one fails, else NONE.
protocol::error_code validate_acknowledgement_batches(
    std::span<const acknowledgement_batch> batches, int8_t max_type);

// ShareFetch's ShareAcquireMode (v2; v1 requests are batch_optimized, Kafka's default).
enum class share_acquire_mode : int8_t { batch_optimized = 0, record_limit = 1 };

class share_partition {
 public:
  struct record_view {
    record_state state = record_state::available;
    int16_t delivery_count = 0;
    std::string member_id;  // the holder while Acquired
    int64_t lock_deadline_ms = 0;
  };

  share_partition(share_partition_config config, int64_t start_offset)
      : config_(config), start_offset_(start_offset), available_from_(start_offset) {}

  // A share-partition as __share_group_state left it: SPSO and the persisted batches (offsets
  // between them that no batch covers are Available, never delivered). At most
  // max_restored_records records are taken back in flight (a bound on what a corrupt record can
  // make us allocate); tarn never keeps more than group.share.partition.max.record.locks.
  static constexpr int64_t max_restored_records = int64_t{1} << 20;
  static share_partition restore(share_partition_config config, int64_t start_offset,
                                 std::span<const state_batch> batches);

  // What Kafka persists of the in-flight records (share_state.h): runs from the SPSO of one
  // state and delivery count; an Acquired record is written as Available with its count, so
  // after a crash it comes back with the delivery that was under way counted.
  std::vector<state_batch> persisted_batches() const;

  int64_t start_offset() const { return start_offset_; }
  int64_t end_offset() const { return start_offset_ + static_cast<int64_t>(records_.size()); }
  size_t in_flight() const { return records_.size(); }
  const share_partition_config& config() const { return config_; }
  void set_config(const share_partition_config& c) { config_ = c; }

  // Where the next fetch should read: the first Available in-flight record, else the SPEO while
  // fewer than max_record_locks records are in flight; nullopt when nothing can be acquired.
  std::optional<int64_t> next_fetch_offset(int64_t now_ms);
  // At most how many records a fetch reading from `offset` (next_fetch_offset's answer) can
  // acquire now: the Available ones from there to the SPEO, and what the record locks leave past
  // it. A ShareFetch reads no more of the log than that needs.
  int64_t acquirable_from(int64_t offset) const;

  // Acquires for `member` what the batches read from the log hold, in order, up to max_records
  // records: Available in-flight records, then new ones past the SPEO (offsets the log skips are
  // archived, control batches too). Returns the acquired offsets as ranges. In
  // batch_optimized mode (ShareFetch's ShareAcquireMode 0, Kafka's default) a log batch whose new
  // records were begun is taken to its end, past max_records and the record-lock limit, as Kafka's
  // SharePartition rounds both up to the batch's last offset: a member is never handed part of a
  // batch whose rest it must parse and skip, and which is read and sent again to the next one.
  // record_limit (1) stops at max_records exactly.
  std::vector<acquired_range> acquire(std::string_view member_id,
                                      std::span<const fetched_batch> batches, int32_t max_records,
                                      int64_t now_ms,
                                      share_acquire_mode mode = share_acquire_mode::record_limit);

  // Applies one partition's acknowledgements, all or nothing: every offset must be in flight and
  // Acquired by `member_id` (with its lock not expired), else INVALID_RECORD_STATE and nothing
  // changes. Batches must have passed validate_acknowledgement_batches.
  protocol::error_code acknowledge(std::string_view member_id,
                                   std::span<const acknowledgement_batch> batches, int64_t now_ms);

  // The member's share session closed or it left the group: what it holds goes back (Available,
  // or Archived at the delivery-count limit), as Kafka's releaseAcquiredRecords. True when it
  // held something.
  bool release_member(std::string_view member_id, int64_t now_ms);

  // Releases every record whose acquisition lock passed its deadline.
  void expire_locks(int64_t now_ms);
  // The earliest lock deadline (to wake a waiting fetch), or nullopt when nothing is Acquired.
  std::optional<int64_t> next_lock_deadline() const;

  // Moves the SPSO to `offset` when the log no longer holds the records below it (retention,
  // DeleteRecords) or an AlterShareGroupOffsets resets it: everything below is forgotten.
  void reset_start_offset(int64_t offset);

  // A change that may have to be taken back: the coordinator applies an operation, writes it to
  // __share_group_state and undoes it when the write fails. begin_change() starts a journal of
  // what the operations after it overwrite or drop of the records in flight then (records added
  // past the SPEO need none: undo cuts them off), so undo costs what the change touched, not a
  // copy of the share-partition. keep() ends the journal; undo() puts the state of
  // begin_change() back.
  void begin_change();
  void keep() { journal_.reset(); }
  void undo();

  // Whether the state persisted (persisted_batches, the SPSO) may have changed since
  // mark_persisted(): the share coordinator writes nothing for a share-partition that did not
  // change, and so does not compute its batches on every fetch.
  bool changed_since_persisted() const { return dirty_; }
  void mark_persisted() { dirty_ = false; }

  std::optional<record_view> record(int64_t offset) const;
  // Records Acquired now (for tests and describe).
  size_t acquired_count() const;
  // In-flight records whose delivery is complete (Acknowledged or Archived): what Kafka's lag
  // leaves out besides the records below the SPSO.
  size_t finished_count() const;

 private:
  struct in_flight_record {
    record_state state = record_state::available;
    int16_t delivery_count = 0;
    int64_t lock_deadline_ms = 0;
    // The member holding it while Acquired: one string per acquire() shared by every record it
    // took, so a record costs no allocation of its own.
    std::shared_ptr<const std::string> holder;
    bool held_by(std::string_view member_id) const { return holder && *holder == member_id; }
  };
  struct change_journal {
    int64_t start_offset = 0;  // the SPSO and SPEO at begin_change()
    int64_t end_offset = 0;
    std::vector<std::pair<int64_t, in_flight_record>> saved;  // (offset, value before), in order
  };

  // records_[i] about to change: journaled first when a change is open.
  in_flight_record& mutable_record(size_t i);
  void pop_front_record();
  void give_back(int64_t offset, in_flight_record& r);
  void advance_start();
  // A record left Acquired (acknowledged, released, expired, given back, dropped): the earliest
  // deadline may have been its, so it is now only a bound.
  void lock_released() { deadline_exact_ = false; }

  share_partition_config config_;
  int64_t start_offset_;
  std::deque<in_flight_record> records_;  // records_[i] is offset start_offset_ + i
  std::optional<change_journal> journal_;
  // Every operation expires locks first, and a fetch's wait asks for the next deadline: with up
  // to max_record_locks records in flight and many members fetching, scanning them each time was
  // a broker's CPU with 16 consumers on one partition. No Acquired record has a deadline before
  // earliest_deadline_ (INT64_MAX: none Acquired); when deadline_exact_, one has it (or none is
  // Acquired), else it is only a bound and next_lock_deadline() scans once to make it exact.
  mutable int64_t earliest_deadline_ = INT64_MAX;
  mutable bool deadline_exact_ = true;
  // No record before this offset is Available (next_fetch_offset searches from here).
  int64_t available_from_;
  bool dirty_ = true;  // see changed_since_persisted()
};

}  // namespace tarn::coordinator
