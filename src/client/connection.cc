// A broker connection: connect with a deadline, TLS, ApiVersions, SASL, in-order request/response
// pipelining, request timeouts.
#include "client/connection.h"

#include <fmt/format.h>

#include "client/wire.h"
#include "protocol/error_codes.h"
#include "protocol/messages/api_versions_request.h"
#include "protocol/messages/api_versions_response.h"
#include "protocol/messages/sasl_authenticate_request.h"
#include "protocol/messages/sasl_authenticate_response.h"
#include "protocol/messages/sasl_handshake_request.h"
#include "protocol/messages/sasl_handshake_response.h"

namespace tarn::client {

broker_connection::broker_connection(asio::io_context& io, int32_t node, broker_address address,
                                     std::string client_id,
                                     std::chrono::milliseconds request_timeout,
                                     std::chrono::milliseconds connect_timeout,
                                     std::shared_ptr<asio::ssl::context> tls,
                                     security_config security)
    : io_(io),
      node_(node),
      address_(std::move(address)),
      client_id_(std::move(client_id)),
      request_timeout_(request_timeout),
      connect_timeout_(connect_timeout),
      socket_(io),
      tls_context_(std::move(tls)),
      security_(std::move(security)),
      resolver_(io),
      timer_(io) {}

broker_connection::~broker_connection() = default;

void broker_connection::connect(std::function<void(const std::string* error)> done) {
  state_ = state::connecting;
  auto self = shared_from_this();
  timer_.expires_after(connect_timeout_);
  timer_.async_wait([self](const std::error_code& ec) {
    if (!ec && self->state_ == state::connecting) {
      self->close(fmt::format("connection to {}:{} not established within {} ms",
                              self->address_.host, self->address_.port,
                              self->connect_timeout_.count()));
    }
  });
  resolver_.async_resolve(
      address_.host, std::to_string(address_.port),
      [self, done](const std::error_code& ec, asio::ip::tcp::resolver::results_type results) {
        if (self->state_ != state::connecting) {
          std::string why = "connection closed while resolving";
          return done(&why);
        }
        if (ec) {
          std::string why = fmt::format("cannot resolve {}: {}", self->address_.host, ec.message());
          self->close(why);
          return done(&why);
        }
        asio::async_connect(
            self->socket_, results,
            [self, done](const std::error_code& ec, const asio::ip::tcp::endpoint&) {
              if (self->state_ != state::connecting) {
                std::string why = fmt::format("cannot connect to {}:{}: timed out",
                                              self->address_.host, self->address_.port);
                return done(&why);
              }
              if (ec) {
                std::string why = fmt::format("cannot connect to {}:{}: {}", self->address_.host,
                                              self->address_.port, ec.message());
                self->close(why);
                return done(&why);
              }
              std::error_code ignored;
              self->socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
              if (self->tls_context_) return self->handshake(done);
              self->read_size();
              self->send_api_versions(done);
            });
      });
}

void broker_connection::send_api_versions(std::function<void(const std::string* error)> done) {
  // v3 first (as librdkafka); a broker that does not know it answers v0 with its own range.
  auto attempt = std::make_shared<std::function<void(int16_t)>>();
  auto self = shared_from_this();
  *attempt = [self, done, attempt](int16_t version) {
    protocol::api_versions_request request;
    request.client_software_name = "tarn";
    request.client_software_version = "0.1.0";
    self->send(
        [request, version, self](int32_t correlation_id) {
          return frame_request(request, version, correlation_id, self->client_id_);
        },
        true,
        [self, done, attempt, version](result<std::span<const uint8_t>, std::string> response) {
          // `attempt` refers to itself (for the retry at a lower version): every way out but the
          // retry must break that cycle, or the connection it holds is never freed.
          if (!response) {
            *attempt = nullptr;
            return done(&response.error());
          }
          auto body = decode_response<protocol::api_versions_response>(*response, version);
          if (!body) {
            *attempt = nullptr;
            self->close(body.error());
            return done(&body.error());
          }
          if (body->error_code == code(protocol::error_code::unsupported_version) && version > 0) {
            int16_t next = 0;
            for (const auto& api : body->api_keys) {
              if (api.api_key == api_versions_versions.api_key) {
                next = std::min<int16_t>(api.max_version, version - 1);
              }
            }
            return (*attempt)(std::max<int16_t>(next, 0));
          }
          if (body->error_code != 0) {
            *attempt = nullptr;
            std::string why = fmt::format("ApiVersions failed with error {}", body->error_code);
            self->close(why);
            return done(&why);
          }
          for (const auto& api : body->api_keys) {
            self->broker_versions_[api.api_key] = {api.min_version, api.max_version};
          }
          *attempt = nullptr;  // break the self-reference
          if (self->security_.sasl()) return self->authenticate(done);
          self->become_ready(done);
        });
  };
  (*attempt)(api_versions_versions.max_version);
}

void broker_connection::handshake(connect_callback done) {
  tls_.emplace(socket_, *tls_context_);
  if (auto p = prepare_ssl(tls_->native_handle(), address_.host, security_); !p) {
    return fail_authentication(p.error(), done);
  }
  auto self = shared_from_this();
  tls_->async_handshake(asio::ssl::stream_base::client, [self, done](const std::error_code& ec) {
    if (self->state_ != state::connecting) {
      std::string why = fmt::format("SSL handshake with {}:{} timed out", self->address_.host,
                                    self->address_.port);
      return done(&why);
    }
    if (ec) {
      const long verify = SSL_get_verify_result(self->tls_->native_handle());
      std::string why =
          verify != X509_V_OK
              ? fmt::format("SSL handshake with {}:{} failed: broker certificate verify failed: {}",
                            self->address_.host, self->address_.port,
                            X509_verify_cert_error_string(verify))
              : fmt::format("SSL handshake with {}:{} failed: {}", self->address_.host,
                            self->address_.port, ec.message());
      return self->fail_authentication(why, done);
    }
    self->read_size();
    self->send_api_versions(done);
  });
}

void broker_connection::authenticate(connect_callback done) {
  auto self = shared_from_this();
  send(
      [self](int32_t correlation_id) {
        protocol::sasl_handshake_request request;
        request.mechanism = sasl_mechanism_name(self->security_.mechanism);
        return frame_request(request, 1, correlation_id, self->client_id_);
      },
      true,
      [self, done](result<std::span<const uint8_t>, std::string> response) {
        if (!response) return done(&response.error());
        auto body = decode_response<protocol::sasl_handshake_response>(*response, 1);
        if (!body) {
          self->close(body.error());
          return done(&body.error());
        }
        if (body->error_code != 0) {
          std::string enabled;
          for (auto m : body->mechanisms) enabled += (enabled.empty() ? "" : ", ") + std::string(m);
          return self->fail_authentication(
              fmt::format("the broker {}:{} does not enable SASL mechanism {} (enabled: {})",
                          self->address_.host, self->address_.port,
                          sasl_mechanism_name(self->security_.mechanism), enabled),
              done);
        }
        self->sasl_step(std::make_shared<sasl_session>(self->security_), {}, done);
      });
}

void broker_connection::sasl_step(std::shared_ptr<sasl_session> session, std::string server_message,
                                  connect_callback done) {
  auto failed = [this](std::string_view why) {
    return fmt::format("SASL {} authentication with {}:{} failed: {}",
                       sasl_mechanism_name(security_.mechanism), address_.host, address_.port, why);
  };
  auto next = session->next(server_message);
  if (!next) return fail_authentication(failed(next.error()), done);
  if (!next->has_value()) return become_ready(done);
  auto self = shared_from_this();
  send(
      [self, message = std::move(**next)](int32_t correlation_id) {
        protocol::sasl_authenticate_request request;
        request.auth_bytes = std::span<const uint8_t>(
            reinterpret_cast<const uint8_t*>(message.data()), message.size());
        return frame_request(request, 1, correlation_id, self->client_id_);
      },
      true,
      [self, session, done, failed](result<std::span<const uint8_t>, std::string> response) {
        if (!response) return done(&response.error());
        auto body = decode_response<protocol::sasl_authenticate_response>(*response, 1);
        if (!body) {
          self->close(body.error());
          return done(&body.error());
        }
        if (body->error_code != 0) {
          return self->fail_authentication(failed(body->error_message.value_or("(no message)")),
                                           done);
        }
        self->sasl_step(session,
                        std::string(reinterpret_cast<const char*>(body->auth_bytes.data()),
                                    body->auth_bytes.size()),
                        done);
      });
}

void broker_connection::become_ready(const connect_callback& done) {
  state_ = state::ready;
  timer_.cancel();
  arm_timer();
  done(nullptr);
}

void broker_connection::fail_authentication(const std::string& why, const connect_callback& done) {
  authentication_failed_ = true;
  close(why);
  done(&why);
}

int16_t broker_connection::version_for(int16_t api_key, int16_t our_min, int16_t our_max) const {
  auto it = broker_versions_.find(api_key);
  if (it == broker_versions_.end()) return -1;
  return negotiate_version({api_key, our_min, our_max}, it->second.first, it->second.second);
}

void broker_connection::send(std::function<std::vector<uint8_t>(int32_t)> build,
                             bool expect_response, response_handler handler) {
  if (state_ == state::closed || state_ == state::idle) {
    handler(fail(std::string("connection is not open")));
    return;
  }
  const int32_t correlation_id = next_correlation_id_++;
  if (next_correlation_id_ < 0) next_correlation_id_ = 0;
  if (expect_response) {
    write_queue_.push_back({build(correlation_id), nullptr});
    in_flight_.push_back(
        {correlation_id, std::chrono::steady_clock::now() + request_timeout_, std::move(handler)});
    arm_timer();
  } else {
    write_queue_.push_back({build(correlation_id), std::move(handler)});
    ++unanswered_writes_;
  }
  write_next();
}

void broker_connection::write_next() {
  if (writing_ || corked_ > 0 || write_queue_.empty() || state_ == state::closed) return;
  writing_ = true;
  // Everything queued goes in one write (a gather of the requests, in order).
  write_buffers_.clear();
  for (const auto& w : write_queue_) write_buffers_.push_back(asio::buffer(w.bytes));
  writes_in_progress_ = write_queue_.size();
  ++writes_;
  auto self = shared_from_this();
  on_stream([&](auto& stream) {
    asio::async_write(stream, write_buffers_, [self](const std::error_code& ec, size_t) {
      self->writing_ = false;
      if (self->state_ == state::closed) return;
      if (ec) return self->close("write failed: " + ec.message());
      // The written entries leave the queue before any handler runs: a handler may send again.
      std::vector<response_handler> written;
      for (size_t i = 0; i < self->writes_in_progress_; ++i) {
        if (auto& done = self->write_queue_.front().on_written) written.push_back(std::move(done));
        self->write_queue_.pop_front();
      }
      self->writes_in_progress_ = 0;
      self->unanswered_writes_ -= written.size();
      for (auto& done : written) done(std::span<const uint8_t>());
      self->write_next();
    });
  });
}

void broker_connection::read_size() {
  auto self = shared_from_this();
  on_stream([&](auto& stream) {
    asio::async_read(stream, asio::buffer(size_bytes_), [self](const std::error_code& ec, size_t) {
      if (self->state_ == state::closed) return;
      if (ec) return self->close("read failed: " + ec.message());
      const uint32_t size = uint32_t{self->size_bytes_[0]} << 24 |
                            uint32_t{self->size_bytes_[1]} << 16 |
                            uint32_t{self->size_bytes_[2]} << 8 | uint32_t{self->size_bytes_[3]};
      if (size < 4 || size > static_cast<uint32_t>(max_response_bytes)) {
        return self->close(fmt::format("invalid response size {}", size));
      }
      self->read_body(size);
    });
  });
}

void broker_connection::read_body(uint32_t size) {
  body_.resize(size);
  auto self = shared_from_this();
  on_stream([&](auto& stream) {
    asio::async_read(stream, asio::buffer(body_), [self](const std::error_code& ec, size_t) {
      if (self->state_ == state::closed) return;
      if (ec) return self->close("read failed: " + ec.message());
      auto correlation_id = peek_correlation_id(self->body_);
      if (self->in_flight_.empty() || !correlation_id ||
          self->in_flight_.front().correlation_id != *correlation_id) {
        return self->close("response with an unexpected correlation id");
      }
      auto handler = std::move(self->in_flight_.front().handler);
      self->in_flight_.pop_front();
      handler(std::span<const uint8_t>(self->body_));
      if (self->state_ != state::closed) self->read_size();
    });
  });
}

void broker_connection::arm_timer() {
  // One wait at a time, for the oldest request's deadline. Deadlines grow in the order requests
  // are sent, so a wait that fires after its request was answered re-arms for the new oldest:
  // re-arming on every response would cost a cancelled handler and a timer update each.
  if (state_ != state::ready || timer_armed_ || in_flight_.empty()) return;
  timer_armed_ = true;
  timer_.expires_at(in_flight_.front().deadline);
  auto self = shared_from_this();
  timer_.async_wait([self](const std::error_code& ec) {
    self->timer_armed_ = false;
    if (ec || self->state_ == state::closed) return;
    if (!self->in_flight_.empty() &&
        self->in_flight_.front().deadline <= std::chrono::steady_clock::now()) {
      return self->close(fmt::format("request timed out after {} ms (request.timeout.ms)",
                                     self->request_timeout_.count()));
    }
    self->arm_timer();
  });
}

void broker_connection::close(const std::string& reason) {
  if (state_ == state::closed) return;
  state_ = state::closed;
  std::error_code ignored;
  socket_.close(ignored);
  resolver_.cancel();
  timer_.cancel();
  auto failed = std::move(in_flight_);
  in_flight_.clear();
  auto unwritten = std::move(write_queue_);
  write_queue_.clear();
  unanswered_writes_ = 0;
  for (auto& p : failed) p.handler(fail(reason));
  for (auto& w : unwritten) {
    if (w.on_written) w.on_written(fail(reason));
  }
}

}  // namespace tarn::client
