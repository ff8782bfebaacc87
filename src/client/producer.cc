// The producer front end: picks the partition (explicit, murmur2 of the key, or sticky),
// appends to the accumulator, and wakes the sender when a batch is ready to go.
#include "tarn/producer.h"

#include <fmt/format.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>

#include "client/metadata_cache.h"
#include "client/partitioner.h"
#include "client/producer_config.h"
#include "client/record_accumulator.h"
#include "client/sender.h"
#include "client/transaction_manager.h"
#include "client/txn_requests.h"

namespace tarn::client {
namespace {

// What the calling thread last sent to: the producer (by an id never reused), the topic, its
// metadata as of the cache's version, and its sticky partitioner. A send() to the same topic as
// the thread's previous one, with no metadata update in between, then takes neither the metadata
// cache's lock nor the sticky partitioners' (with the shared_ptr copy, about a tenth of the
// application thread's time at 100 B records).
struct topic_hint {
  uint64_t producer = 0;
  uint64_t version = 0;
  std::string topic;
  std::shared_ptr<const topic_metadata> metadata;
  sticky_partitioner* sticky = nullptr;
};
thread_local topic_hint hint;
std::atomic<uint64_t> next_producer_id{1};

// A transactional producer: the partition the calling thread last sent to, in which
// transaction (the manager's generation). A send to it skips the transaction manager's lock.
struct txn_hint {
  uint64_t producer = 0;
  uint64_t generation = 0;
  std::string topic;
  int32_t partition = -1;
};
thread_local txn_hint txn_partition_hint;

producer_error closed_error() {
  return producer_error{producer_errc::producer_closed, 0, false,
                        "Cannot perform operation after producer has been closed"};
}

producer_error not_transactional(std::string_view operation) {
  return producer_error{producer_errc::invalid_state, 0, false,
                        fmt::format("Cannot use {} without a transactional.id", operation)};
}

}  // namespace

struct producer::impl {
  explicit impl(const producer_config& c)
      : config(c),
        accumulator(accumulator_config::from(c)),
        txn(c.transactional_id ? std::make_unique<transaction_manager>(*c.transactional_id,
                                                                       c.transaction_timeout_ms)
                               : nullptr),
        requests(c.transactional_id ? std::make_unique<txn_requests>(c, *c.transactional_id)
                                    : nullptr),
        io(c, accumulator, metadata, txn.get()),
        seed(std::random_device{}()) {
    // KIP-794: the sender's ready() reports each topic's partition load; keyless records then
    // switch to lightly loaded partitions more often.
    accumulator.set_partition_load_listener(
        [this](const std::string& topic, std::optional<partition_load> load) {
          sticky_for(topic).set_load(std::move(load));
        });
  }

  // The topic's metadata (nullptr while unknown), through the thread's hint.
  bool hint_names(std::string_view topic) const {
    return hint.producer == id && hint.topic == topic;
  }

  const topic_metadata* known_topic(std::string_view name) {
    const uint64_t version = metadata.version();  // before the read: the hint is at least this new
    if (hint.version == version && hint_names(name)) return hint.metadata.get();
    auto found = metadata.topic(name);
    if (!found) return nullptr;
    hint.producer = id;
    hint.version = version;
    hint.topic.assign(name);
    hint.metadata = std::move(found);
    hint.sticky = nullptr;
    return hint.metadata.get();
  }

  // The topic's sticky partitioner, through the thread's hint when it names this topic.
  sticky_partitioner& sticky_through_hint(std::string_view topic) {
    if (hint_names(topic)) {
      if (!hint.sticky) hint.sticky = &sticky_for(topic);
      return *hint.sticky;
    }
    return sticky_for(topic);
  }

  sticky_partitioner& sticky_for(std::string_view topic) {
    std::lock_guard lock(sticky_mutex);
    auto it = sticky.find(topic);
    if (it == sticky.end()) {
      it = sticky
               .emplace(std::string(topic),
                        std::make_unique<sticky_partitioner>(config.batch_size, seed++))
               .first;
    }
    return *it->second;
  }

  // `callback` is moved from only when the record was appended; on an error the caller still
  // has it to report the error.
  result<void, producer_error> append(const producer_record& record, delivery_callback&& callback);

  // Transactional: adds the partition to the transaction before its first record goes in
  // (AddPartitionsToTxn, blocking for the round trip), or fails the send when no transaction
  // is open or it has failed.
  result<void, producer_error> ensure_in_transaction(std::string_view topic, int32_t partition);
  // A failed coordinator request: applied to the state machine, returned to the caller.
  producer_error apply(const txn_request_error& e) {
    if (e.kind == txn_error_kind::abortable || e.kind == txn_error_kind::fatal) {
      txn->set_error(e.kind, e.error);
      if (auto last = txn->last_error()) return *last;
    }
    return e.error;
  }

  producer_config config;
  metadata_cache metadata;
  record_accumulator accumulator;
  std::unique_ptr<transaction_manager> txn;  // before io, which points at it
  std::unique_ptr<txn_requests> requests;
  sender io;
  std::mutex sticky_mutex;
  std::map<std::string, std::unique_ptr<sticky_partitioner>, std::less<>> sticky;
  uint64_t seed;
  const uint64_t id = next_producer_id.fetch_add(1);  // for topic_hint
  std::mutex close_mutex;
  bool closed = false;
};

result<std::unique_ptr<producer>, config_error> producer::create(
    const std::vector<std::pair<std::string, std::string>>& properties) {
  auto config = parse_producer_config(properties);
  if (!config) return fail(config.error());
  if (config->security.tls()) {
    // An unreadable CA, certificate or key is a configuration error, found before any send.
    if (auto ctx = make_ssl_context(config->security); !ctx) {
      const std::string& why = ctx.error();
      return fail(config_error{why.substr(0, why.find(' ')), "", why});
    }
  }
  auto p = std::unique_ptr<producer>(new producer(std::make_unique<impl>(*config)));
  p->impl_->io.start();
  return p;
}

producer::producer(std::unique_ptr<impl> impl) : impl_(std::move(impl)) {}

producer::~producer() { close(); }

result<void, producer_error> producer::impl::append(const producer_record& record,
                                                    delivery_callback&& callback) {
  using clock = std::chrono::steady_clock;
  if (accumulator.closed()) {
    return fail(producer_error{producer_errc::producer_closed, 0, false,
                               "Cannot perform operation after producer has been closed"});
  }
  // No steady-clock read unless send() has to wait for metadata or the record opens a batch
  // (append_time): clock reads were a fifth of `tarn perf produce`'s profile.
  const topic_metadata* topic = known_topic(record.topic);
  const bool enough =
      topic && !topic->partitions.empty() &&
      (!record.partition || *record.partition < static_cast<int32_t>(topic->partitions.size()));
  std::shared_ptr<const topic_metadata> waited_for;  // keeps `topic` alive when waited for
  if (!enough) {
    io.wakeup();
    const auto max_block = std::chrono::milliseconds(config.max_block_ms);
    auto waited = metadata.wait_for_topic(record.topic, record.partition, clock::now() + max_block,
                                          max_block);
    if (!waited) return fail(waited.error());
    waited_for = std::move(*waited);
    topic = waited_for.get();
  }
  const append_time now;  // the clock, read only if the record opens a batch
  const auto count = static_cast<int32_t>(topic->partitions.size());
  // (Not value_or: it would read the clock for a record that has its timestamp.)
  const timestamp_ms timestamp = record.timestamp_ms
                                     ? *record.timestamp_ms
                                     : std::chrono::duration_cast<std::chrono::milliseconds>(
                                           std::chrono::system_clock::now().time_since_epoch())
                                           .count();
  std::optional<record::bytes_view> key, value;
  if (record.key) key = record::as_bytes(*record.key);
  if (record.value) value = record::as_bytes(*record.value);
  std::vector<record::record_header> headers;
  headers.reserve(record.headers.size());
  for (const auto& h : record.headers) {
    record::record_header header{record::as_bytes(h.key), std::nullopt};
    if (h.value) header.value = record::as_bytes(*h.value);
    headers.push_back(header);
  }

  std::optional<partition_id> partition;
  if (record.partition) {
    if (*record.partition < 0) {
      return fail(producer_error{
          producer_errc::invalid_record, 0, false,
          fmt::format("Invalid partition given with record: {} is not in the range [0...{}).",
                      *record.partition, count)});
    }
    partition = *record.partition;
  } else if (key && !config.partitioner_ignore_keys) {
    partition = partition_for_key(*key, count);
  } else if (count == 1) {
    // The sticky partitioner of a single partition always draws it: no counting of its bytes
    // (an atomic add a record) and no abort before a new batch.
    partition = 0;
  }
  if (partition) {
    if (txn) {
      if (auto in = ensure_in_transaction(record.topic, *partition); !in) return fail(in.error());
    }
    auto appended = accumulator.append(record.topic, *partition, timestamp, key, value, headers,
                                       std::move(callback), now);
    if (!appended) return fail(appended.error());
    if (appended->new_batch || appended->batch_full) io.wakeup_for_data();
    return {};
  }
  // Keyless: the sticky partitioner, switching before a record would open a new batch when the
  // current partition has had its batch.size (Java's abortOnNewBatch / partitionChanged).
  sticky_partitioner& sticky = sticky_through_hint(record.topic);
  for (int attempt = 0; attempt < 2; ++attempt) {
    const partition_id p = sticky.current(count, topic->available);
    if (txn) {
      if (auto in = ensure_in_transaction(record.topic, p); !in) return fail(in.error());
    }
    auto appended =
        accumulator.append(record.topic, p, timestamp, key, value, headers, std::move(callback),
                           now, /*abort_on_new_batch=*/attempt == 0);
    if (!appended) return fail(appended.error());
    if (appended->aborted_for_new_batch) {
      sticky.update(p, 0, /*enable_switch=*/true, count, topic->available);
      continue;
    }
    sticky.update(p, static_cast<int32_t>(appended->appended_bytes), appended->batch_full, count,
                  topic->available);
    if (appended->new_batch || appended->batch_full) io.wakeup_for_data();
    return {};
  }
  return {};  // unreachable: the second attempt never aborts
}

result<void, producer_error> producer::impl::ensure_in_transaction(std::string_view topic,
                                                                   int32_t partition) {
  auto& h = txn_partition_hint;
  const uint64_t generation = txn->generation();
  if (h.producer == id && h.generation == generation && h.partition == partition &&
      h.topic == topic) {
    return {};
  }
  topic_partition tp{std::string(topic), partition};
  auto needed = txn->needs_add(tp);
  if (!needed) return fail(needed.error());
  if (*needed) {
    auto added = requests->add_partitions(txn->identity(), {tp});
    if (!added) return fail(apply(added.error()));
    txn->partition_added(tp);
  }
  h.producer = id;
  h.generation = generation;
  h.topic.assign(topic);
  h.partition = partition;
  return {};
}

result<void, producer_error> producer::send_async(const producer_record& record,
                                                  delivery_callback callback) {
  auto appended = impl_->append(record, std::move(callback));
  if (!appended && callback) {
    record_metadata m{std::string(record.topic), record.partition.value_or(-1), -1, -1};
    callback(m, &appended.error());  // not moved from: the record was not appended
  }
  return appended;
}

std::future<delivery_result> producer::send(const producer_record& record,
                                            delivery_callback callback) {
  auto promise = std::make_shared<std::promise<delivery_result>>();
  auto future = promise->get_future();
  delivery_callback report = [promise, callback = std::move(callback)](const record_metadata& m,
                                                                       const producer_error* e) {
    if (callback) callback(m, e);
    if (e) {
      promise->set_value(fail(*e));
    } else {
      promise->set_value(m);
    }
  };
  auto appended = impl_->append(record, std::move(report));
  if (!appended) {
    record_metadata m{std::string(record.topic), record.partition.value_or(-1), -1, -1};
    report(m, &appended.error());  // not moved from: the record was not appended
  }
  return future;
}

void producer::flush() {
  const uint64_t flush = impl_->accumulator.begin_flush();
  impl_->io.wakeup();
  impl_->accumulator.await_flush_completion(flush);
}

void producer::close(std::chrono::milliseconds timeout) {
  std::lock_guard lock(impl_->close_mutex);
  if (impl_->closed) return;
  impl_->closed = true;
  impl_->accumulator.close();
  const auto now = std::chrono::steady_clock::now();
  const auto deadline = timeout >= std::chrono::hours(24 * 365)
                            ? std::chrono::steady_clock::time_point::max()
                            : now + timeout;
  impl_->io.close(deadline);
}

}  // namespace tarn::client

namespace tarn::client {

result<void, producer_error> producer::init_transactions() {
  auto& i = *impl_;
  if (!i.txn) return fail(not_transactional("initTransactions"));
  if (i.accumulator.closed()) return fail(closed_error());
  if (auto begun = i.txn->begin_init(); !begun) return begun;
  auto identity = i.requests->init_producer_id(i.txn->transaction_timeout_ms(), {});
  if (!identity) return fail(i.apply(identity.error()));  // timed out: still initializing
  i.accumulator.set_producer_identity(*identity);
  i.txn->complete_init(*identity);
  return {};
}

result<void, producer_error> producer::begin_transaction() {
  if (!impl_->txn) return fail(not_transactional("beginTransaction"));
  return impl_->txn->begin_transaction();
}

result<void, producer_error> producer::send_offsets_to_transaction(
    const std::vector<partition_offset>& offsets, const consumer_group_metadata& group) {
  auto& i = *impl_;
  if (!i.txn) return fail(not_transactional("sendOffsetsToTransaction"));
  if (i.accumulator.closed()) return fail(closed_error());
  if (auto ok = i.txn->check_in_transaction("sendOffsetsToTransaction"); !ok) return ok;
  if (group.group_id.empty()) {
    return fail(producer_error{producer_errc::invalid_state, 0, false,
                               "sendOffsetsToTransaction needs a group id"});
  }
  if (offsets.empty()) return {};  // as Java: nothing to add, no request
  const producer_identity identity = i.txn->identity();
  if (auto added = i.requests->add_offsets(identity, group.group_id); !added) {
    return fail(i.apply(added.error()));
  }
  i.txn->offsets_added();
  if (auto committed = i.requests->txn_offset_commit(identity, offsets, group); !committed) {
    return fail(i.apply(committed.error()));
  }
  return {};
}

result<void, producer_error> producer::commit_transaction() {
  auto& i = *impl_;
  if (!i.txn) return fail(not_transactional("commitTransaction"));
  if (i.accumulator.closed()) return fail(closed_error());
  if (auto begun = i.txn->begin_commit(); !begun) return begun;
  flush();
  // A record of the transaction failed while flushing: the transaction is abortable now.
  if (i.txn->state() != txn_state::committing_transaction) {
    return i.txn->begin_commit();  // returns the error state's error
  }
  if (i.txn->transaction_started()) {
    if (auto ended = i.requests->end_txn(i.txn->identity(), true); !ended) {
      return fail(i.apply(ended.error()));
    }
  }
  i.txn->complete_end_txn();
  return {};
}

result<void, producer_error> producer::abort_transaction() {
  auto& i = *impl_;
  if (!i.txn) return fail(not_transactional("abortTransaction"));
  if (i.accumulator.closed()) return fail(closed_error());
  if (auto begun = i.txn->begin_abort(); !begun) return begun;
  // Records not sent yet fail; those in flight complete (either way the abort hides them).
  const size_t gaps = i.io.abort_undrained(
      {producer_errc::abortable, 0, false, "Failing batch since transaction was aborted"});
  if (gaps > 0) i.txn->require_epoch_bump();
  flush();
  if (i.txn->transaction_started()) {
    if (auto ended = i.requests->end_txn(i.txn->identity(), false); !ended) {
      return fail(i.apply(ended.error()));
    }
  }
  if (i.txn->epoch_bump_needed()) {
    // A sequence gap (a batch failed after it took its sequence): the same producer id's next
    // epoch restarts every partition at sequence 0 (KIP-360).
    auto bumped = i.requests->init_producer_id(i.txn->transaction_timeout_ms(), i.txn->identity());
    if (!bumped) return fail(i.apply(bumped.error()));
    i.io.reset_producer_state(*bumped);
    i.txn->epoch_bumped(*bumped);
  }
  i.txn->complete_end_txn();
  return {};
}

}  // namespace tarn::client
