// A small blocking Kafka client over one socket, for the console tools (`tarn consume`): frames
// a request with the tarn::protocol codecs, writes it, reads the one response. It negotiates
// versions with ApiVersions on connect. Not for the data path of a producer (src/client is).
#pragma once

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/result.h"
#include "protocol/headers.h"
#include "protocol/messages/request_header.h"
#include "protocol/reader.h"
#include "protocol/writer.h"

namespace tarn::tools {

class kafka_client {
 public:
  // Connects to "host:port" and exchanges ApiVersions (v3, falling back to v0).
  static result<std::unique_ptr<kafka_client>, std::string> connect(const std::string& address,
                                                                    std::string client_id);

  // The highest version of `Req` both sides serve, or -1.
  template <typename Req>
  int16_t version_for() const {
    auto it = versions_.find(Req::api_key);
    if (it == versions_.end()) return -1;
    const int16_t hi = std::min<int16_t>(it->second.second, Req::max_version);
    const int16_t lo = std::max<int16_t>(it->second.first, Req::min_version);
    return hi >= lo ? hi : -1;
  }

  // Sends `request` at `version` and returns the response body bytes (after the header);
  // decode them with Resp::decode. The buffer is valid until the next call.
  template <typename Req>
  result<std::span<const uint8_t>, std::string> call(const Req& request, int16_t version) {
    std::vector<uint8_t> frame;
    protocol::writer w(frame);
    w.write_int32(0);
    protocol::request_header header;
    header.request_api_key = Req::api_key;
    header.request_api_version = version;
    header.correlation_id = ++correlation_id_;
    header.client_id = client_id_;
    header.encode(w, protocol::request_header_version(Req::api_key, version));
    request.encode(w, version);
    return exchange(frame, protocol::response_header_version(Req::api_key, version));
  }

 private:
  kafka_client() : socket_(io_) {}
  result<std::span<const uint8_t>, std::string> exchange(std::vector<uint8_t>& frame,
                                                         int16_t response_header_version);

  asio::io_context io_;
  asio::ip::tcp::socket socket_;
  std::string client_id_;
  int32_t correlation_id_ = 0;
  std::vector<uint8_t> response_;
  std::map<int16_t, std::pair<int16_t, int16_t>> versions_;
};

}  // namespace tarn::tools
