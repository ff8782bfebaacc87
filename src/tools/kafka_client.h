// A minimal blocking Kafka request client for the command-line tools: one TCP connection,
// one request at a time, the generated protocol codecs for bodies and headers. Not a producer
// or consumer (that is src/client); just enough for admin requests such as `tarn topics`.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "protocol/headers.h"
#include "protocol/reader.h"
#include "protocol/writer.h"

namespace tarn::tools {

class kafka_client {
 public:
  // Connects to the first reachable "host:port" of a comma-separated bootstrap list.
  static result<std::unique_ptr<kafka_client>, std::string> connect(
      const std::string& bootstrap, std::chrono::milliseconds timeout = std::chrono::seconds(30));
  ~kafka_client();
  kafka_client(const kafka_client&) = delete;
  kafka_client& operator=(const kafka_client&) = delete;

  // Sends one request (header + body) and returns the response body (after the header).
  result<std::span<const uint8_t>, std::string> round_trip(int16_t api_key, int16_t api_version,
                                                           std::span<const uint8_t> body,
                                                           std::vector<uint8_t>& buffer);

 private:
  explicit kafka_client(int fd, std::chrono::milliseconds timeout) : fd_(fd), timeout_(timeout) {}
  result<void, std::string> write_all(std::span<const uint8_t> bytes);
  result<void, std::string> read_exact(uint8_t* out, size_t n);

  int fd_ = -1;
  std::chrono::milliseconds timeout_;
  int32_t next_correlation_id_ = 1;
};

// Sends `request` at `version` and decodes the response, which borrows `buffer` (keep it alive
// as long as the response).
template <class Response, class Request>
result<Response, std::string> call(kafka_client& client, const Request& request, int16_t version,
                                   std::vector<uint8_t>& buffer) {
  std::vector<uint8_t> body;
  body.reserve(request.encoded_size(version));
  protocol::writer w(body);
  request.encode(w, version);
  auto bytes = client.round_trip(Request::api_key, version, body, buffer);
  if (!bytes) return fail(bytes.error());
  protocol::reader r(*bytes);
  auto decoded = Response::decode(r, version);
  if (!decoded) {
    return fail(std::string("cannot decode ") + std::string(Response::kafka_name) + ": " +
                std::string(protocol::describe(decoded.error().code)));
  }
  return std::move(*decoded);
}

}  // namespace tarn::tools
