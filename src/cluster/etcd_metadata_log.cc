// etcd_metadata_log: the metadata journal in etcd (etcd_metadata_log.h): entries under
// <prefix>log/<20-digit offset>, appended by create-if-absent transactions, followed by a watch.
#include "cluster/etcd_metadata_log.h"

#include <fmt/format.h>

namespace tarn::cluster {

using storage::storage_error;

namespace {

storage_error etcd_failure(std::string_view what, const etcd::etcd_error& e) {
  return {storage::storage_errc::io_error, fmt::format("etcd: {}: {}", what, e.message)};
}

std::span<const uint8_t> as_bytes(const std::string& s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace

etcd_metadata_log::etcd_metadata_log(etcd_metadata_options options)
    : options_(std::move(options)), log_prefix_(options_.prefix + "log/") {}

etcd_metadata_log::~etcd_metadata_log() { watch_.reset(); }

std::string etcd_metadata_log::entry_key(int64_t offset) const {
  // Zero-padded: etcd orders keys as bytes, so the offsets read back in order.
  return fmt::format("{}{:020d}", log_prefix_, offset);
}

result<std::unique_ptr<etcd_metadata_log>, storage_error> etcd_metadata_log::open(
    etcd_metadata_options options) {
  std::unique_ptr<etcd_metadata_log> log(new etcd_metadata_log(std::move(options)));
  auto client = etcd::etcd_client::create(log->options_.client);
  if (!client) return fail(etcd_failure("connect", client.error()));
  log->client_ = std::move(*client);

  auto entries = log->client_->range(log->log_prefix_, etcd::prefix_end(log->log_prefix_));
  if (!entries) return fail(etcd_failure("read the metadata log", entries.error()));
  {
    std::lock_guard g(log->mu_);
    for (const auto& kv : entries->kvs) {
      auto applied = log->apply_entry(kv.key, kv.value);
      if (!applied) return fail(applied.error());
      if (!*applied) {
        return fail(storage::corrupt(
            fmt::format("etcd: metadata log entry {} is out of order (next offset {})", kv.key,
                        log->image_.next_offset)));
      }
    }
  }
  // Follow from the revision of that read: every entry written after it arrives by the watch.
  etcd_metadata_log* self = log.get();
  log->watch_ = std::make_unique<etcd::etcd_watch>(
      log->options_.client, log->log_prefix_, etcd::prefix_end(log->log_prefix_),
      entries->revision + 1, [self](const etcd::watch_response& w) { self->on_watch(w); },
      [self](const etcd::etcd_error& e) {
        std::lock_guard g(self->mu_);
        self->follow_error_ = "etcd: the metadata log's watch stopped: " + e.message;
      });
  return log;
}

result<bool, storage_error> etcd_metadata_log::apply_entry(const std::string& key,
                                                           const std::string& bytes) {
  auto d = decode_entry(as_bytes(bytes));
  if (d.status != decode_status::ok || d.bytes != bytes.size()) {
    return fail(storage::corrupt(
        fmt::format("etcd: metadata log entry {} is not a valid change ({})", key,
                    d.status == decode_status::incomplete ? "truncated" : d.message)));
  }
  if (key != entry_key(d.entry.offset)) {
    return fail(storage::corrupt(
        fmt::format("etcd: metadata log entry {} holds offset {}", key, d.entry.offset)));
  }
  if (d.entry.offset < image_.next_offset) return true;   // applied already (our own append)
  if (d.entry.offset > image_.next_offset) return false;  // a gap: not the next change
  for (const auto& r : d.entry.records) image_.apply(r);
  image_.next_offset = d.entry.offset + 1;
  for (const auto& listener : on_remote_change_) listener(d.entry);
  return true;
}

void etcd_metadata_log::on_watch(const etcd::watch_response& w) {
  std::lock_guard g(mu_);
  if (!follow_error_.empty()) return;
  for (const auto& e : w.events) {
    if (e.type != etcd::watch_event::kind::put) continue;  // entries are never deleted yet
    auto applied = apply_entry(e.kv.key, e.kv.value);
    if (!applied) {
      follow_error_ = applied.error().message;
      return;
    }
    if (!*applied) {
      follow_error_ = fmt::format("etcd: metadata log entry {} arrived before offset {}", e.kv.key,
                                  image_.next_offset);
      return;
    }
  }
}

result<void, storage_error> etcd_metadata_log::append(std::vector<metadata_record> records) {
  if (!follow_error_.empty())
    return fail(storage_error{storage::storage_errc::io_error, follow_error_});
  metadata_entry entry{image_.next_offset, std::move(records)};
  const std::vector<uint8_t> bytes = encode_entry(entry);
  if (bytes.size() - entry_header_bytes > max_entry_bytes) {
    return fail(storage_error{storage::storage_errc::invalid_argument,
                              "metadata change too large for one entry"});
  }
  const std::string key = entry_key(entry.offset);
  etcd::txn_request t;
  t.compares.push_back(
      {key, etcd::compare::target_kind::create_revision, etcd::compare::result_kind::equal, 0, {}});
  t.success.push_back(etcd::request_op::put(
      key, std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size())));
  auto r = client_->txn(t);
  if (!r) return fail(etcd_failure("append to the metadata log", r.error()));
  if (!r->succeeded) {
    return fail(storage_error{
        storage::storage_errc::io_error,
        fmt::format("etcd: metadata log offset {} was written by another writer first",
                    entry.offset)});
  }
  // Applied now, under the lock the watch needs, so the watch finds it applied when its own
  // copy of this entry arrives.
  for (const auto& rec : entry.records) image_.apply(rec);
  image_.next_offset = entry.offset + 1;
  return {};
}

bool etcd_metadata_log::catch_up() {
  if (!follow_error_.empty()) return false;
  const int64_t before = image_.next_offset;
  auto entries = client_->range(entry_key(before), etcd::prefix_end(log_prefix_));
  if (!entries) return false;
  for (const auto& kv : entries->kvs) {
    auto applied = apply_entry(kv.key, kv.value);
    if (!applied) {
      follow_error_ = applied.error().message;
      return false;
    }
    if (!*applied) break;  // a gap: the watch brings the rest in order
  }
  return image_.next_offset > before;
}

void etcd_metadata_log::on_remote_change(std::function<void(const metadata_entry&)> handler) {
  std::lock_guard g(mu_);
  on_remote_change_.push_back(std::move(handler));
}

std::string etcd_metadata_log::follow_error() const {
  std::lock_guard g(mu_);
  return follow_error_;
}

result<std::unique_ptr<etcd_metadata_store>, storage_error> etcd_metadata_store::open(
    etcd_metadata_options options, std::set<storage::uuid> followed) {
  const int32_t node_id = options.node_id;
  auto log = etcd_metadata_log::open(std::move(options));
  if (!log) return fail(log.error());
  etcd_metadata_log* raw = log->get();
  std::unique_ptr<etcd_metadata_store> store(new etcd_metadata_store(
      raw, std::unique_ptr<metadata_journal>(std::move(*log)), node_id, std::move(followed)));
  // Configs other brokers change reach the observer as this broker's own do.
  raw->on_remote_change([s = store.get()](const metadata_entry& entry) {
    s->note_config_changes(config_resources_of(entry.records));
  });
  return store;
}

}  // namespace tarn::cluster
