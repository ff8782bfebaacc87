// InitProducerId (key 22): hands an idempotent producer its producer id and epoch.
//
// Versions served: 0-5 (v6, 2PC, is unstable in Kafka 4.4 and not advertised).
// Behaviour:
//   - TransactionalId null (idempotent producer): a new producer id with epoch 0, whatever
//     ProducerId/ProducerEpoch (v3+) say, as Kafka's TransactionCoordinator does for a null id.
//   - Producer ids are unique across restarts: they are reserved in blocks of 1000 (as Kafka's
//     controller hands out blocks) and the end of the reserved range is kept in
//     `<log.dir>/tarn-producer-ids` (one decimal number, written crash-safely before the block is
//     used). A restart starts at the next block, so an id never names two producers, and a
//     partition's retained producer state can never match a new producer.
//   - Errors, decided in init_producer_id_error(): a non-null TransactionalId is
//     COORDINATOR_NOT_AVAILABLE (tarn has no transaction coordinator); a failure to persist the
//     block is UNKNOWN_SERVER_ERROR. ProducerId -1 and epoch -1 on failure, as Kafka.
//   - A body that does not decode closes the connection.
// Not supported: transactions; quotas (ThrottleTimeMs 0).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <map>
#include <mutex>

#include "broker/handler.h"
#include "broker/topic_handler_util.h"
#include "protocol/error_codes.h"
#include "protocol/messages/init_producer_id_request.h"
#include "protocol/messages/init_producer_id_response.h"
#include "storage/io.h"

namespace tarn::broker {

namespace {

using protocol::error_code;

constexpr int64_t producer_id_block_size = 1000;
constexpr const char* producer_ids_file_name = "tarn-producer-ids";

enum class init_producer_id_errc { transactional, persist_failed };

// The one place that decides the wire error of this API.
error_code init_producer_id_error(init_producer_id_errc e) {
  switch (e) {
    case init_producer_id_errc::transactional:
      return error_code::coordinator_not_available;
    case init_producer_id_errc::persist_failed:
      return error_code::unknown_server_error;
  }
  return error_code::unknown_server_error;
}

// Producer ids of one log directory.
class producer_id_allocator {
 public:
  explicit producer_id_allocator(std::string path) : path_(std::move(path)) {}

  result<int64_t, std::string> next() {
    std::lock_guard guard(mu_);
    if (!loaded_) {
      auto text = storage::read_small_file(path_, 64);
      if (text) {
        int64_t v = 0;
        auto [p, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
        if (ec != std::errc() || v < 0) return fail(fmt::format("{} is corrupt", path_));
        next_ = block_end_ = v;
      }
      loaded_ = true;
    }
    if (next_ == block_end_) {
      const int64_t end = block_end_ + producer_id_block_size;
      if (auto w = storage::write_file_atomic(path_, fmt::format("{}\n", end)); !w) {
        return fail(w.error().message);
      }
      block_end_ = end;
    }
    return next_++;
  }

 private:
  std::mutex mu_;
  std::string path_;
  bool loaded_ = false;
  int64_t next_ = 0;
  int64_t block_end_ = 0;
};

producer_id_allocator& allocator_for(const std::string& log_dir) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<producer_id_allocator>> allocators;
  std::lock_guard guard(mu);
  auto& a = allocators[log_dir];
  if (!a) a = std::make_unique<producer_id_allocator>(log_dir + "/" + producer_ids_file_name);
  return *a;
}

asio::awaitable<handler_outcome> handle_init_producer_id(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::init_producer_id_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: InitProducerId v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad InitProducerId request"};
  }
  protocol::init_producer_id_response reply;
  auto refuse = [&](init_producer_id_errc e) {
    reply.error_code = static_cast<int16_t>(init_producer_id_error(e));
    reply.producer_id = -1;
    reply.producer_epoch = -1;
  };
  if (decoded->transactional_id.has_value()) {
    refuse(init_producer_id_errc::transactional);
    co_return encode_response(reply, version);
  }
  auto id = allocator_for(request.services.config.log_dirs.front()).next();
  if (!id) {
    spdlog::error("InitProducerId: cannot reserve producer ids: {}", id.error());
    refuse(init_producer_id_errc::persist_failed);
    co_return encode_response(reply, version);
  }
  reply.producer_id = *id;
  reply.producer_epoch = 0;
  co_return encode_response(reply, version);
}

}  // namespace

void register_init_producer_id_handler(handler_registry& registry) {
  registry.register_handler(
      protocol::init_producer_id_request::api_key, protocol::init_producer_id_request::min_version,
      protocol::init_producer_id_request::max_version, handle_init_producer_id);
}

}  // namespace tarn::broker
