// Connection: frame reading with the size check before any allocation, in-order response
// writing, idle timeout and the two ways to end (stop_reading for a clean shutdown, close); the
// TLS handshake and reads/writes through the ssl stream, and the SASL gate before authentication
// (docs/security.md).
#include "broker/connection.h"

#include <spdlog/spdlog.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <asio/bind_cancellation_slot.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/post.hpp>
#include <asio/redirect_error.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#include <cstring>

#include "broker/broker_metrics.h"
#include "broker/throttle.h"
#include "security/tls_context.h"

namespace tarn::broker {

namespace {

// Bytes read from the socket at a time; frames up to this size cost one allocation each.
constexpr size_t read_buffer_bytes = 64 * 1024;
// Responses gathered into one write.
constexpr size_t max_buffers_per_write = 128;
constexpr size_t max_bytes_per_write = 4 * 1024 * 1024;

void put_be32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

int32_t get_be32(const uint8_t* p) {
  return static_cast<int32_t>((uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
                              (uint32_t{p[2]} << 8) | uint32_t{p[3]});
}

}  // namespace

wakeup::wakeup(const asio::any_io_executor& executor)
    : timer_(executor, asio::steady_timer::time_point::max()) {}

asio::awaitable<void> wakeup::wait() {
  asio::error_code ec;  // operation_aborted is the notification itself
  co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

void wakeup::notify() { timer_.cancel(); }

connection::connection(asio::ip::tcp::socket socket, connection_info info,
                       broker_services& services, std::function<void(connection&)> on_closed,
                       const listener_runtime* listener, std::shared_ptr<asio::ssl::context> tls)
    : socket_(std::move(socket)),
      tls_context_(std::move(tls)),
      listener_(listener),
      info_(std::move(info)),
      services_(services),
      on_closed_(std::move(on_closed)),
      writer_wakeup_(socket_.get_executor()),
      reader_wakeup_(socket_.get_executor()),
      idle_timer_(socket_.get_executor()),
      mute_timer_(socket_.get_executor()),
      last_activity_(std::chrono::steady_clock::now()),
      read_buffer_(std::make_unique_for_overwrite<uint8_t[]>(read_buffer_bytes)) {
  if (tls_context_) {
    tls_ = std::make_unique<asio::ssl::stream<asio::ip::tcp::socket&>>(socket_, *tls_context_);
  }
  if (listener_ != nullptr && listener_->sasl) {
    sasl_ = std::make_unique<security::sasl_authenticator>(listener_->sasl,
                                                           listener_->scram_credentials);
    info_.sasl = sasl_.get();
  }
}

void connection::start() {
  auto self = shared_from_this();
  auto executor = socket_.get_executor();
  asio::co_spawn(
      executor, [self]() { return self->write_loop(self); }, asio::detached);
  if (services_.config.connections_max_idle_ms > 0) {
    asio::co_spawn(
        executor, [self]() { return self->idle_watchdog(self); }, asio::detached);
  }
  asio::co_spawn(
      executor, [self]() { return self->read_loop(self); }, asio::detached);
}

void connection::stop_reading() {
  if (closed_ || reading_done_) return;
  reading_done_ = true;
  draining_ = true;
  // Half-closing the receive side completes the pending read with end-of-stream, so the reader
  // stops without disturbing a write in progress.
  asio::error_code ec;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_receive, ec);
  mute_timer_.cancel();
  reader_wakeup_.notify();
  writer_wakeup_.notify();
}

void connection::close(const std::string& reason) {
  if (closed_) return;
  closed_ = true;
  reading_done_ = true;
  spdlog::debug("connection {} from {} closed: {}", info_.id, info_.peer, reason);
  asio::error_code ec;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  socket_.close(ec);
  idle_timer_.cancel();
  mute_timer_.cancel();
  for (auto& s : slots_) {
    if (!s->done) s->cancel.emit(asio::cancellation_type::terminal);
  }
  writer_wakeup_.notify();
  reader_wakeup_.notify();
  if (on_closed_) on_closed_(*this);
}

asio::awaitable<void> connection::read_loop([[maybe_unused]] std::shared_ptr<connection> self) {
  const size_t max_in_flight = static_cast<size_t>(services_.config.queued_max_requests);
  if (tls_ && !co_await tls_handshake()) co_return;
  while (!reading_done_) {
    // Before authentication requests are taken one at a time, as Kafka's authenticator does:
    // each decides which request may come next (and whether the next frame is a raw token).
    while (sasl_ && !sasl_->complete() && !slots_.empty() && !reading_done_) {
      co_await reader_wakeup_.wait();
    }
    // Backpressure: a client that pipelines more than queued.max.requests waits for answers.
    while (slots_.size() >= max_in_flight && !reading_done_) co_await reader_wakeup_.wait();
    if (reading_done_) break;
    while (std::chrono::steady_clock::now() < mute_until_ && !reading_done_) {
      // Throttled by a quota: the socket is not read, so TCP holds the client back too.
      mute_timer_.expires_at(mute_until_);
      asio::error_code ec;
      co_await mute_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    if (reading_done_) break;
    auto frame = co_await read_frame();
    if (!frame && !draining_ && !reading_done_) {
      // The client closed (or reset) its side. Kafka clients never half-close, so like Kafka we
      // drop what is in flight rather than keep handlers running for nobody.
      close("end of stream");
      co_return;
    }
    if (!frame || reading_done_) break;
    // A request read while an earlier answer was still being made, that then muted the
    // connection, waits out the mute before it is handled: Kafka would not have read it yet.
    while (std::chrono::steady_clock::now() < mute_until_ && !reading_done_) {
      mute_timer_.expires_at(mute_until_);
      asio::error_code ec;
      co_await mute_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    if (reading_done_) break;
    dispatch(std::move(*frame));
  }
  reading_done_ = true;
  writer_wakeup_.notify();
}

asio::awaitable<bool> connection::fill(size_t min_bytes) {
  while (read_end_ - read_begin_ < min_bytes) {
    if (read_begin_ == read_end_) {
      read_begin_ = read_end_ = 0;
    } else if (read_buffer_bytes - read_begin_ < min_bytes) {
      std::memmove(read_buffer_.get(), read_buffer_.get() + read_begin_, read_end_ - read_begin_);
      read_end_ -= read_begin_;
      read_begin_ = 0;
    }
    asio::error_code ec;
    const auto into = asio::buffer(read_buffer_.get() + read_end_, read_buffer_bytes - read_end_);
    size_t n = 0;
    if (tls_) {
      n = co_await tls_read_some(into, ec);
    } else {
      n = co_await socket_.async_read_some(into, asio::redirect_error(asio::use_awaitable, ec));
    }
    if (ec) {
      if (ec != asio::error::eof && ec != asio::ssl::error::stream_truncated && !closed_) {
        spdlog::debug("connection {} from {}: read failed: {}", info_.id, info_.peer, ec.message());
      }
      co_return false;
    }
    read_end_ += n;
    last_activity_ = std::chrono::steady_clock::now();
  }
  co_return true;
}

asio::awaitable<bool> connection::reserve_request_memory(int64_t bytes) {
  request_memory* pool = services_.request_memory_pool;
  if (pool == nullptr || !pool->bounded()) co_return true;
  // Kafka mutes the channel when its memory pool is empty; here the reader waits, so the
  // socket's receive buffer fills and TCP flow control holds the client back.
  std::weak_ptr<connection> weak = weak_from_this();
  auto executor = socket_.get_executor();
  auto wake = [weak, executor] {
    asio::post(executor, [weak] {
      if (auto c = weak.lock()) c->reader_wakeup_.notify();
    });
  };
  bool waiting = false;
  while (!pool->try_reserve(bytes, wake)) {
    if (!waiting) {
      // Once per held request, not per wake-up that finds the budget spent again: it is how an
      // operator (and the overload test) sees that this client's socket is no longer read.
      spdlog::debug(
          "connection {} from {}: waiting for request memory before reading a {}-byte request "
          "({} of queued.max.request.bytes={} in use)",
          info_.id, info_.peer, bytes, pool->used_bytes(),
          services_.config.queued_max_request_bytes);
      waiting = true;
    }
    co_await reader_wakeup_.wait();
    if (reading_done_ || closed_) co_return false;
  }
  next_lease_ = request_memory_lease(pool, bytes);
  co_return true;
}

asio::awaitable<std::optional<frame_buffer>> connection::read_frame() {
  if (!co_await fill(4)) co_return std::nullopt;
  const int32_t size = get_be32(read_buffer_.get() + read_begin_);
  int32_t max_size = services_.config.socket_request_max_bytes;
  if (sasl_ && !sasl_->complete()) {
    // sasl.server.max.receive.size: an unauthenticated client cannot make the broker allocate
    // more than this (Kafka: InvalidReceiveException, the connection closed).
    max_size = std::min(max_size, sasl_->settings().server_max_receive_size);
    if (size < 0 || size > max_size) {
      // Kafka fails the authentication: the close comes after the failed-authentication delay
      // (measured against Kafka 4.4.0), and nothing is read or allocated meanwhile.
      spdlog::warn(
          "closing connection {} from {}: Invalid receive (size = {} larger than {}) before "
          "SASL authentication (sasl.server.max.receive.size)",
          info_.id, info_.peer, size, max_size);
      close_after_delay("pre-authentication request too large");
      co_return std::nullopt;
    }
  }
  if (size < 0 || size > max_size) {
    // Checked before anything is allocated for the frame; Kafka closes the connection too.
    spdlog::warn(
        "closing connection {} from {}: request size {} is outside [0, {}] "
        "(socket.request.max.bytes)",
        info_.id, info_.peer, size, max_size);
    close("request size out of range");
    co_return std::nullopt;
  }
  read_begin_ += 4;
  if (!co_await reserve_request_memory(size)) co_return std::nullopt;
  frame_buffer frame;
  frame.size = static_cast<size_t>(size);
  const size_t buffered = read_end_ - read_begin_;
  if (buffered >= frame.size) {
    frame.data = std::make_unique_for_overwrite<uint8_t[]>(frame.size);
    std::memcpy(frame.data.get(), read_buffer_.get() + read_begin_, frame.size);
    read_begin_ += frame.size;
    co_return frame;
  }
  // The frame is not all here: its buffer is allocated at its full size now, and the rest is
  // read straight into it. Growing it as bytes came (64 KiB, 128 KiB, ... 1 MiB) copied what had
  // come each time: 4% of the broker's CPU under 1 MiB produce requests (docs/benchmarks.md).
  // Its bytes are already counted against queued.max.request.bytes (reserved above), and an
  // untouched allocation is address space, not memory: the pages become resident as the bytes
  // arrive, so a peer announcing a large frame and sending little still makes us hold little.
  // Kafka's NetworkReceive also allocates the whole frame once its size is read.
  frame.data = std::make_unique_for_overwrite<uint8_t[]>(frame.size);
  std::memcpy(frame.data.get(), read_buffer_.get() + read_begin_, buffered);
  read_begin_ = read_end_ = 0;
  size_t filled = buffered;
  const size_t capacity = frame.size;
  // A frame larger than the read buffer takes with its last bytes at most the next frame's size
  // (into the empty read buffer), not up to 64 KiB of the next frame: that frame is then most
  // likely large too, and its bytes go straight into its own buffer instead of through the read
  // buffer and a copy (1.4% of the broker's CPU under 1 MiB produce requests, and one read fewer
  // a request). After a small frame the next read fills the read buffer as before, so pipelined
  // small requests still come many to a read.
  const size_t tail = !tls_ && frame.size >= read_buffer_bytes ? 4 : 0;
  while (filled < frame.size) {
    asio::error_code ec;
    const auto into = asio::buffer(frame.data.get() + filled, capacity - filled);
    size_t n = 0;
    if (tls_) {
      n = co_await tls_read_some(into, ec);
    } else if (tail > 0) {
      const std::array<asio::mutable_buffer, 2> into_and_next{
          into, asio::buffer(read_buffer_.get(), tail)};
      n = co_await socket_.async_read_some(into_and_next,
                                           asio::redirect_error(asio::use_awaitable, ec));
      if (!ec && n > capacity - filled) {
        read_end_ = n - (capacity - filled);
        n = capacity - filled;
      }
    } else {
      n = co_await socket_.async_read_some(into, asio::redirect_error(asio::use_awaitable, ec));
    }
    if (ec) {
      if (!closed_) {
        spdlog::debug("connection {} from {}: stream ended inside a {}-byte request: {}", info_.id,
                      info_.peer, frame.size, ec.message());
      }
      co_return std::nullopt;
    }
    filled += n;
    last_activity_ = std::chrono::steady_clock::now();
  }
  co_return frame;
}

void connection::push_done(int32_t correlation_id, uint8_t header_version,
                           handler_outcome outcome) {
  auto s = std::make_unique<slot>();
  s->correlation_id = correlation_id;
  s->response_header_version = header_version;
  s->done = true;
  s->outcome = std::move(outcome);
  slots_.push_back(std::move(s));
  writer_wakeup_.notify();
}

void connection::dispatch(frame_buffer frame) {
  // Requests answered without a handler give their bytes back at once (the frame is dropped
  // here); handled ones keep them in their slot until the answer is written.
  request_memory_lease lease = std::move(next_lease_);
  if (sasl_ && sasl_->expects_raw_token()) {
    dispatch_raw_token(std::move(frame));
    return;
  }
  auto prefix = peek_request_prefix(frame.bytes());
  if (!prefix) {
    spdlog::warn("closing connection {} from {}: {}-byte request is too short for a header",
                 info_.id, info_.peer, frame.size);
    reading_done_ = true;
    push_done(0, 0, close_connection{"truncated request header"});
    return;
  }
  if (sasl_) {
    std::string why;
    constexpr int16_t sasl_handshake_key = 17;
    if (sasl_->complete() && prefix->api_key == sasl_handshake_key &&
        sasl_->begin_reauthentication()) {
      spdlog::debug("connection {} from {}: re-authenticating {} (KIP-368)", info_.id, info_.peer,
                    sasl_->principal().to_string());
    }
    if (!sasl_->complete()) {
      if (!sasl_->admit(prefix->api_key, &why)) {
        // Kafka closes at once, without an answer (measured against Kafka 4.4.0: ~10 ms).
        spdlog::info("Failed authentication with {} (channelId={}) ({})", info_.peer, info_.id,
                     why);
        reading_done_ = true;
        push_done(prefix->correlation_id, 0, close_connection{why});
        return;
      }
    } else if (auto expires = sasl_->session_expires_at();
               expires && std::chrono::steady_clock::now() > *expires) {
      // KIP-368: a session past connections.max.reauth.ms (or its OAUTHBEARER token's exp)
      // that was not re-authenticated.
      spdlog::info(
          "closing connection {} from {}: SASL session expired (connections.max.reauth.ms or the "
          "token's expiry) and was not re-authenticated",
          info_.id, info_.peer);
      reading_done_ = true;
      push_done(prefix->correlation_id, 0, close_connection{"SASL session expired"});
      return;
    }
  }
  const handler_entry* entry = services_.handlers.find(prefix->api_key);
  if (entry == nullptr || prefix->api_version < entry->min_version ||
      prefix->api_version > entry->max_version) {
    constexpr int16_t api_versions_key = 18;
    if (entry != nullptr && prefix->api_key == api_versions_key &&
        prefix->api_version > entry->max_version) {
      // KIP-511: answer in the v0 layout with error 35 and our ApiVersions range, so the client
      // retries with a version we serve. The body is not parsed.
      spdlog::info(
          "connection {} from {}: ApiVersions v{} is above our v{}; answering v0 with "
          "UNSUPPORTED_VERSION",
          info_.id, info_.peer, prefix->api_version, entry->max_version);
      push_done(prefix->correlation_id, 0, unsupported_api_versions_outcome(services_.handlers));
      return;
    }
    spdlog::warn("closing connection {} from {}: {} (api key {} version {})", info_.id, info_.peer,
                 entry == nullptr ? "unsupported API" : "unsupported version", prefix->api_key,
                 prefix->api_version);
    reading_done_ = true;
    push_done(prefix->correlation_id, 0, close_connection{"unsupported API or version"});
    return;
  }
  auto header = parse_request_header(frame.bytes());
  if (!header) {
    spdlog::warn("closing connection {} from {}: bad request header (api key {} version {}): {}",
                 info_.id, info_.peer, prefix->api_key, prefix->api_version, header.error());
    reading_done_ = true;
    push_done(prefix->correlation_id, 0, close_connection{"bad request header"});
    return;
  }
  auto s = std::make_unique<slot>();
  s->correlation_id = header->correlation_id;
  s->response_header_version = response_header_version(header->api_key, header->api_version);
  s->memory = std::move(lease);
  s->api_key = header->api_key;
  s->api_version = header->api_version;
  s->read_at = std::chrono::steady_clock::now();
  slot* raw = s.get();
  slots_.push_back(std::move(s));
  request_context request{std::move(*header), std::move(frame), info_, services_};
  asio::co_spawn(socket_.get_executor(),
                 run_handler(shared_from_this(), entry, std::move(request), raw),
                 asio::bind_cancellation_slot(raw->cancel.slot(), asio::detached));
}

asio::awaitable<void> connection::run_handler(std::shared_ptr<connection> self,
                                              const handler_entry* entry, request_context request,
                                              slot* s) {
  handler_outcome outcome;
  s->started_at = std::chrono::steady_clock::now();
  request.started_at = s->started_at;
  try {
    outcome = co_await entry->handle(request);
  } catch (const std::exception& e) {
    // Handlers return errors as values; an exception here is a bug or a cancellation on close.
    if (!self->closed_) {
      spdlog::error("connection {} from {}: handler for api key {} v{} failed: {}", info_.id,
                    info_.peer, request.header.api_key, request.header.api_version, e.what());
    }
    outcome = close_connection{"handler failed"};
  }
  // Every API's answer is charged to the client's request quota here, once (KIP-124).
  if (!self->closed_) apply_request_quota(request, outcome);
  if (sasl_ && sasl_->complete() && info_.principal != sasl_->principal()) {
    info_.principal = sasl_->principal();  // SaslAuthenticate just succeeded
  }
  s->outcome = std::move(outcome);
  s->throttle_ms = request.throttle_ms;
  s->close_after = request.close_after_response;
  s->done = true;
  s->done_at = std::chrono::steady_clock::now();
  writer_wakeup_.notify();
}

void connection::record_written(size_t count) {
  broker_metrics* metrics = services_.metrics;
  if (metrics == nullptr) return;
  const auto now = std::chrono::steady_clock::now();
  for (size_t i = 0; i < count && i < slots_.size(); ++i) {
    const slot& s = *slots_[i];
    if (s.api_key < 0) continue;
    metrics->record_request(s.api_key, s.api_version, s.read_at, s.started_at, s.done_at, now);
  }
}

asio::awaitable<void> connection::write_loop([[maybe_unused]] std::shared_ptr<connection> self) {
  std::vector<asio::const_buffer> buffers;
  while (!closed_) {
    buffers.clear();
    size_t ready = 0;
    size_t bytes = 0;
    const close_connection* close_after = nullptr;
    bool close_once_written = false;  // a failed authentication's answer is among them
    slot* with_regions = nullptr;     // a response with file regions goes out on its own
    for (auto& s : slots_) {
      if (!s->done) break;
      if (auto* r = std::get_if<response>(&s->outcome)) {
        if (!r->file_regions.empty() && ready > 0) break;  // next round
        const size_t head_size = s->raw ? 4 : s->response_header_version == 1 ? 9 : 8;
        const size_t frame_size = head_size - 4 + r->size();
        if (frame_size > INT32_MAX) {
          spdlog::error("connection {} from {}: response of {} bytes is too large", info_.id,
                        info_.peer, frame_size);
          close("response too large");
          co_return;
        }
        put_be32(s->head.data(), static_cast<uint32_t>(frame_size));
        put_be32(s->head.data() + 4, static_cast<uint32_t>(s->correlation_id));
        s->head[8] = 0;  // response header v1: no tagged fields
        ++ready;
        if (!r->file_regions.empty()) {
          with_regions = s.get();
          break;
        }
        buffers.push_back(asio::buffer(s->head.data(), head_size));
        if (!r->body.empty()) buffers.push_back(asio::buffer(r->body));
        bytes += head_size + r->body.size();
        if (s->close_after) {
          close_once_written = true;
          break;
        }
      } else if (auto* c = std::get_if<close_connection>(&s->outcome)) {
        close_after = c;
        break;
      } else {
        ++ready;
      }
      if (buffers.size() >= max_buffers_per_write || bytes >= max_bytes_per_write) break;
    }
    if (!buffers.empty()) {
      asio::error_code ec;
      if (tls_) {
        co_await tls_write_all(buffers, ec);
      } else {
        co_await asio::async_write(socket_, buffers, asio::redirect_error(asio::use_awaitable, ec));
      }
      if (ec) {
        if (!closed_) {
          spdlog::debug("connection {} from {}: write failed: {}", info_.id, info_.peer,
                        ec.message());
        }
        close("write failed");
        co_return;
      }
      last_activity_ = std::chrono::steady_clock::now();
    }
    if (with_regions != nullptr) {
      if (!co_await write_with_regions(*with_regions)) {
        close("write failed");
        co_return;
      }
      last_activity_ = std::chrono::steady_clock::now();
    }
    if (close_after != nullptr) {
      close(close_after->reason);
      co_return;
    }
    if (close_once_written) {
      close("authentication failed");
      co_return;
    }
    if (ready > 0) {
      int32_t throttle_ms = 0;
      for (size_t i = 0; i < ready; ++i)
        throttle_ms = std::max(throttle_ms, slots_[i]->throttle_ms);
      if (throttle_ms > 0) {
        mute_until_ = std::max(
            mute_until_, std::chrono::steady_clock::now() + std::chrono::milliseconds(throttle_ms));
      }
      record_written(ready);
      slots_.erase(slots_.begin(), slots_.begin() + static_cast<std::ptrdiff_t>(ready));
      reader_wakeup_.notify();
      continue;
    }
    if (reading_done_ && slots_.empty()) {
      close("no more requests");
      co_return;
    }
    co_await writer_wakeup_.wait();
  }
}

asio::awaitable<bool> connection::write_with_regions(slot& s) {
  const auto& r = std::get<response>(s.outcome);
  const size_t head_size = s.response_header_version == 1 ? 9 : 8;
  asio::error_code ec;
  size_t from = 0;
  bool head_sent = false;
  for (const file_region& region : r.file_regions) {
    std::array<asio::const_buffer, 2> parts{
        asio::buffer(s.head.data(), head_sent ? 0 : head_size),
        asio::buffer(r.body.data() + from, region.body_offset - from)};
    if (tls_) {
      co_await tls_write_all(parts, ec);
    } else {
      co_await asio::async_write(socket_, parts, asio::redirect_error(asio::use_awaitable, ec));
    }
    if (ec) co_return false;
    head_sent = true;
    from = region.body_offset;
    // Not one co_await over a conditional expression: GCC 12 miscompiles the temporaries of
    // a co_await inside ?: (the frame was freed twice).
    bool sent = false;
    if (tls_) {
      sent = co_await send_file_region_tls(region);
    } else {
      sent = co_await send_file_region(region);
    }
    if (!sent) co_return false;
  }
  std::array<asio::const_buffer, 2> parts{asio::buffer(s.head.data(), head_sent ? 0 : head_size),
                                          asio::buffer(r.body.data() + from, r.body.size() - from)};
  if (tls_) {
    co_await tls_write_all(parts, ec);
  } else {
    co_await asio::async_write(socket_, parts, asio::redirect_error(asio::use_awaitable, ec));
  }
  co_return !ec;
}

asio::awaitable<bool> connection::send_file_region(const file_region& region) {
  // sendfile(2) from the page cache straight to the socket; the socket is non-blocking, so a
  // full send buffer means waiting for writability and continuing.
  asio::error_code ec;
  if (!socket_.native_non_blocking()) socket_.native_non_blocking(true, ec);
  if (ec) co_return false;
  off_t offset = static_cast<off_t>(region.position);
  size_t left = region.length;
  while (left > 0) {
    const ssize_t n = ::sendfile(socket_.native_handle(), region.fd, &offset, left);
    if (n > 0) {
      left -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      co_await socket_.async_wait(asio::ip::tcp::socket::wait_write,
                                  asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return false;
      continue;
    }
    // n == 0: the file is shorter than the region (it cannot be, segments only grow); an error.
    spdlog::warn("connection {} from {}: sendfile stopped with {} bytes left: {}", info_.id,
                 info_.peer, left, n == 0 ? "end of file" : std::strerror(errno));
    co_return false;
  }
  co_return true;
}

asio::awaitable<bool> connection::send_file_region_tls(const file_region& region) {
  // sendfile would bypass the encryption: read the region and write it through the ssl stream,
  // a bounded chunk at a time (kTLS would allow sendfile again; not done).
  constexpr size_t chunk_bytes = 256 * 1024;
  std::vector<uint8_t> chunk(std::min(chunk_bytes, region.length));
  off_t offset = static_cast<off_t>(region.position);
  size_t left = region.length;
  while (left > 0) {
    const size_t want = std::min(left, chunk.size());
    const ssize_t n = ::pread(region.fd, chunk.data(), want, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      spdlog::warn("connection {} from {}: reading a file region stopped with {} bytes left: {}",
                   info_.id, info_.peer, left, n == 0 ? "end of file" : std::strerror(errno));
      co_return false;
    }
    asio::error_code ec;
    co_await asio::async_write(*tls_, asio::buffer(chunk.data(), static_cast<size_t>(n)),
                               asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return false;
    offset += n;
    left -= static_cast<size_t>(n);
  }
  co_return true;
}

asio::awaitable<size_t> connection::tls_read_some(asio::mutable_buffer buffer,
                                                  asio::error_code& ec) {
  co_return co_await tls_->async_read_some(buffer, asio::redirect_error(asio::use_awaitable, ec));
}

asio::awaitable<void> connection::tls_write_all(std::span<const asio::const_buffer> buffers,
                                                asio::error_code& ec) {
  size_t total = 0;
  for (const auto& b : buffers) total += b.size();
  if (buffers.size() == 1 || total == 0) {
    co_await asio::async_write(*tls_, buffers, asio::redirect_error(asio::use_awaitable, ec));
    co_return;
  }
  tls_write_buffer_.resize(total);
  size_t at = 0;
  for (const auto& b : buffers) {
    std::memcpy(tls_write_buffer_.data() + at, b.data(), b.size());
    at += b.size();
  }
  co_await asio::async_write(*tls_, asio::buffer(tls_write_buffer_),
                             asio::redirect_error(asio::use_awaitable, ec));
  if (tls_write_buffer_.capacity() > 1024 * 1024) {
    std::vector<uint8_t>().swap(tls_write_buffer_);  // a large answer's buffer is not kept
  }
}

asio::awaitable<bool> connection::tls_handshake() {
  asio::error_code ec;
  co_await tls_->async_handshake(asio::ssl::stream_base::server,
                                 asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    if (!closed_) {
      // Kafka logs this at INFO: "Failed authentication with /ip (channelId=...) (SSL handshake
      // failed)".
      spdlog::info("Failed authentication with {} (channelId={}) (SSL handshake failed: {})",
                   info_.peer, info_.id, ec.message());
      close("TLS handshake failed");
    }
    co_return false;
  }
  last_activity_ = std::chrono::steady_clock::now();
  auto dn = security::peer_subject_dn(tls_->native_handle());
  if (dn && listener_ != nullptr && listener_->principal_mapper &&
      listener_->security.protocol == security::security_protocol::ssl) {
    // DefaultKafkaPrincipalBuilder: an SSL connection with a client certificate is
    // User:<the subject DN through ssl.principal.mapping.rules>.
    auto name = listener_->principal_mapper->name_for(*dn);
    if (!name) {
      spdlog::info("Failed authentication with {} (channelId={}) (No rules apply to {})",
                   info_.peer, info_.id, *dn);
      close("no principal mapping rule applies");
      co_return false;
    }
    info_.principal = security::kafka_principal::user(*name);
  }
  spdlog::debug("connection {} from {}: TLS {} with {}, principal {}", info_.id, info_.peer,
                SSL_get_version(tls_->native_handle()), SSL_get_cipher_name(tls_->native_handle()),
                info_.principal.to_string());
  co_return true;
}

void connection::close_after_delay(const std::string& reason) {
  // Kafka delays the close of a failed authentication (connection.failed.authentication.delay.ms)
  // so that a client retrying at once cannot make the broker spin; nothing more is read.
  reading_done_ = true;
  auto s = std::make_unique<slot>();
  slot* raw = s.get();
  slots_.push_back(std::move(s));
  const int32_t delay_ms = sasl_ ? sasl_->settings().failed_authentication_delay_ms : 0;
  asio::co_spawn(
      socket_.get_executor(),
      [self = shared_from_this(), raw, delay_ms, reason]() -> asio::awaitable<void> {
        asio::steady_timer timer(self->socket_.get_executor());
        timer.expires_after(std::chrono::milliseconds(delay_ms));
        asio::error_code ec;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (self->closed_) co_return;
        raw->outcome = close_connection{reason};
        raw->done = true;
        self->writer_wakeup_.notify();
      },
      asio::detached);
}

void connection::dispatch_raw_token(frame_buffer frame) {
  // SaslHandshake v0's framing: the token is the whole frame, the answer a bare size-prefixed
  // token. A failure has no answer in this framing: the connection closes after the delay.
  auto answer = sasl_->authenticate(frame.bytes(), std::chrono::steady_clock::now());
  if (answer.error_code != 0) {
    spdlog::info("Failed authentication with {} (channelId={}) ({})", info_.peer, info_.id,
                 answer.error_message.value_or(""));
    close_after_delay("authentication failed");
    return;
  }
  if (sasl_->complete()) info_.principal = sasl_->principal();
  auto s = std::make_unique<slot>();
  s->raw = true;
  s->done = true;
  s->outcome = response(std::move(answer.token));
  slots_.push_back(std::move(s));
  writer_wakeup_.notify();
}

asio::awaitable<void> connection::idle_watchdog([[maybe_unused]] std::shared_ptr<connection> self) {
  const auto idle = std::chrono::milliseconds(services_.config.connections_max_idle_ms);
  while (!closed_) {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_activity_ < idle) {
      idle_timer_.expires_at(last_activity_ + idle);
    } else if (!slots_.empty()) {
      idle_timer_.expires_after(idle);  // a request in progress is not idleness
    } else {
      spdlog::info(
          "closing connection {} from {}: idle for more than {} ms "
          "(connections.max.idle.ms)",
          info_.id, info_.peer, idle.count());
      close("idle");
      co_return;
    }
    asio::error_code ec;
    co_await idle_timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }
}

}  // namespace tarn::broker
