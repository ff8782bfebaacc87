// The public share consumer (include/tarn/share_consumer.h): KafkaShareConsumer's properties
// parsed into a share_consumer_config, every call handed to the share-group member, its errors as
// consumer_error.
#include "tarn/share_consumer.h"

#include "client/share_group_consumer.h"

namespace tarn::client {

namespace {

consumer_error public_error(const client_error& e) { return {e.code, e.message}; }

}  // namespace

result<std::unique_ptr<share_consumer>, config_error> share_consumer::create(
    const std::vector<std::pair<std::string, std::string>>& properties) {
  share_consumer_config config;
  for (const auto& [key, value] : properties) {
    if (auto set = config.set(key, value); !set) return fail(config_error{key, value, set.error()});
  }
  if (config.bootstrap_servers.empty()) {
    return fail(config_error{"bootstrap.servers", "",
                             "Missing required configuration \"bootstrap.servers\" which has no "
                             "default value."});
  }
  if (config.group_id.empty()) {
    return fail(config_error{"group.id", "",
                             "Missing required configuration \"group.id\" which has no default "
                             "value."});
  }
  auto impl = share_group_consumer::create(std::move(config));
  if (!impl) return fail(config_error{"bootstrap.servers", "", impl.error().message});
  return std::unique_ptr<share_consumer>(new share_consumer(std::move(*impl)));
}

share_consumer::share_consumer(std::unique_ptr<share_group_consumer> impl)
    : impl_(std::move(impl)) {}
share_consumer::~share_consumer() = default;

void share_consumer::subscribe(std::vector<std::string> topics) {
  impl_->subscribe(std::move(topics));
}
std::vector<std::string> share_consumer::subscription() const { return impl_->subscription(); }

result<std::vector<consumer_record>, consumer_error> share_consumer::poll(
    std::chrono::milliseconds timeout) {
  std::vector<consumer_record> out;
  if (auto r = impl_->poll(out, timeout); !r) return fail(public_error(r.error()));
  return out;
}

result<size_t, consumer_error> share_consumer::poll(consumer_records& records,
                                                    std::chrono::milliseconds timeout) {
  if (auto r = impl_->poll(records, timeout); !r) return fail(public_error(r.error()));
  return records.size();
}

result<void, consumer_error> share_consumer::acknowledge(const consumer_record& record,
                                                         acknowledge_type type) {
  return acknowledge(record.topic, record.partition, record.offset, type);
}

result<void, consumer_error> share_consumer::acknowledge(const consumer_record_view& record,
                                                         acknowledge_type type) {
  return acknowledge(std::string(record.topic), record.partition, record.offset, type);
}

result<void, consumer_error> share_consumer::acknowledge(const std::string& topic,
                                                         int32_t partition, int64_t offset,
                                                         acknowledge_type type) {
  if (auto r = impl_->acknowledge({topic, partition}, offset, static_cast<int8_t>(type)); !r) {
    return fail(public_error(r.error()));
  }
  return {};
}

result<std::map<topic_partition, std::optional<consumer_error>>, consumer_error>
share_consumer::commit_sync() {
  auto r = impl_->commit_sync();
  if (!r) return fail(public_error(r.error()));
  std::map<topic_partition, std::optional<consumer_error>> out;
  for (const auto& [tp, e] : *r) {
    out[tp] = e ? std::optional<consumer_error>(public_error(*e)) : std::nullopt;
  }
  return out;
}

void share_consumer::commit_async() { impl_->commit_async(); }

void share_consumer::set_acknowledgement_commit_callback(acknowledgement_commit_callback callback) {
  impl_->set_callback(std::move(callback));
}

result<void, consumer_error> share_consumer::close() {
  if (auto r = impl_->close(); !r) return fail(public_error(r.error()));
  return {};
}

void share_consumer::wakeup() { impl_->wakeup(); }
std::string share_consumer::member_id() const { return impl_->member_id(); }
std::vector<topic_partition> share_consumer::assignment() const { return impl_->assignment(); }
std::optional<int32_t> share_consumer::acquisition_lock_timeout_ms() const {
  return impl_->acquisition_lock_timeout_ms();
}

}  // namespace tarn::client
