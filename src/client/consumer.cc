// The public consumer (include/tarn/consumer.h): the Java consumer's properties parsed into a
// group_consumer_config, every call handed to the group consumer, its errors as consumer_error.
#include "tarn/consumer.h"

#include "client/group_consumer.h"

namespace tarn::client {

namespace {

consumer_error public_error(const client_error& e) { return {e.code, e.message}; }

}  // namespace

result<std::unique_ptr<consumer>, config_error> consumer::create(
    const std::vector<std::pair<std::string, std::string>>& properties) {
  group_consumer_config config;
  for (const auto& [key, value] : properties) {
    if (auto set = config.set(key, value); !set) return fail(config_error{key, value, set.error()});
  }
  if (config.bootstrap_servers.empty()) {
    return fail(config_error{"bootstrap.servers", "",
                             "Missing required configuration \"bootstrap.servers\" which has no "
                             "default value."});
  }
  auto impl = group_consumer::create(std::move(config));
  if (!impl) {
    return fail(config_error{"bootstrap.servers", "", impl.error().message});
  }
  return std::unique_ptr<consumer>(new consumer(std::move(*impl)));
}

consumer::consumer(std::unique_ptr<group_consumer> impl) : impl_(std::move(impl)) {}
consumer::~consumer() = default;

void consumer::subscribe(std::vector<std::string> topics, rebalance_listener listener) {
  impl_->subscribe(std::move(topics), std::move(listener));
}
void consumer::assign(std::vector<topic_partition> partitions) {
  impl_->assign(std::move(partitions));
}
void consumer::seek(const topic_partition& partition, int64_t offset) {
  // offset_end and offset_beginning are the group consumer's ListOffsets specs.
  static_assert(offset_end == latest_offset_spec && offset_beginning == earliest_offset_spec);
  impl_->seek(partition, offset);
}

result<std::vector<consumer_record>, consumer_error> consumer::poll(
    std::chrono::milliseconds timeout, size_t max_records) {
  auto records = impl_->poll(timeout, max_records);
  if (!records) return fail(public_error(records.error()));
  return std::move(*records);
}

result<size_t, consumer_error> consumer::poll(std::vector<consumer_record>& records,
                                              std::chrono::milliseconds timeout,
                                              size_t max_records) {
  if (auto r = impl_->poll(records, timeout, max_records); !r) return fail(public_error(r.error()));
  return records.size();
}

result<size_t, consumer_error> consumer::poll(consumer_records& records,
                                              std::chrono::milliseconds timeout,
                                              size_t max_records) {
  if (auto r = impl_->poll(records, timeout, max_records); !r) return fail(public_error(r.error()));
  return records.size();
}

result<void, consumer_error> consumer::commit_sync() {
  if (auto r = impl_->commit_sync(); !r) return fail(public_error(r.error()));
  return {};
}

result<void, consumer_error> consumer::commit_sync(
    const std::map<topic_partition, int64_t>& offsets) {
  if (auto r = impl_->commit_sync(offsets); !r) return fail(public_error(r.error()));
  return {};
}

void consumer::commit_async(offset_commit_callback callback) {
  impl_->commit_async(std::move(callback));
}

void consumer::commit_async(const std::map<topic_partition, int64_t>& offsets,
                            offset_commit_callback callback) {
  impl_->commit_async(offsets, std::move(callback));
}

result<std::map<topic_partition, int64_t>, consumer_error> consumer::committed(
    const std::vector<topic_partition>& partitions) {
  auto r = impl_->committed(partitions);
  if (!r) return fail(public_error(r.error()));
  return std::move(*r);
}

result<std::map<topic_partition, std::optional<offset_and_timestamp>>, consumer_error>
consumer::offsets_for_times(const std::map<topic_partition, int64_t>& timestamps) {
  auto r = impl_->offsets_for_times(timestamps);
  if (!r) return fail(public_error(r.error()));
  return std::move(*r);
}

result<std::map<topic_partition, int64_t>, consumer_error> consumer::beginning_offsets(
    const std::vector<topic_partition>& partitions) {
  auto r = impl_->list_offsets(partitions, offset_beginning);
  if (!r) return fail(public_error(r.error()));
  return std::move(*r);
}

result<std::map<topic_partition, int64_t>, consumer_error> consumer::end_offsets(
    const std::vector<topic_partition>& partitions) {
  auto r = impl_->list_offsets(partitions, offset_end);
  if (!r) return fail(public_error(r.error()));
  return std::move(*r);
}

void consumer::pause(const std::vector<topic_partition>& partitions) { impl_->pause(partitions); }
void consumer::resume(const std::vector<topic_partition>& partitions) { impl_->resume(partitions); }
std::vector<topic_partition> consumer::paused() const { return impl_->paused(); }

result<void, consumer_error> consumer::close() {
  if (auto r = impl_->close(); !r) return fail(public_error(r.error()));
  return {};
}

void consumer::wakeup() { impl_->wakeup(); }
std::vector<topic_partition> consumer::assignment() const { return impl_->assignment(); }
std::optional<int64_t> consumer::position(const topic_partition& partition) const {
  return impl_->position(partition);
}

}  // namespace tarn::client
