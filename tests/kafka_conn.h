// A connection that speaks Kafka through tarn's generated codecs, for integration tests that
// hand-build requests (error branches, hostile input): encode a request at a version, send it
// with a header of the right version, decode the answer.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "protocol/reader.h"
#include "protocol/writer.h"
#include "test_util.h"

namespace tarn::test {

template <class M>
constexpr bool is_flexible(int16_t version) {
  return M::flexible_from >= 0 && version >= M::flexible_from;
}

template <class Req>
std::vector<uint8_t> body_of(const Req& req, int16_t version) {
  std::vector<uint8_t> body;
  protocol::writer w(body);
  req.encode(w, version);
  return body;
}

// A decoded response together with the frame its string and byte views borrow (moving keeps the
// frame's buffer where it is; copying would not, so it is move-only).
template <class Resp>
struct reply {
  reply() = default;
  reply(reply&&) = default;
  reply& operator=(reply&&) = default;
  reply(const reply&) = delete;
  reply& operator=(const reply&) = delete;

  std::vector<uint8_t> frame;
  std::optional<Resp> body;
  int32_t correlation_id = -1;

  explicit operator bool() const { return body.has_value(); }
  const Resp* operator->() const { return &*body; }
};

template <class Resp>
reply<Resp> decode_reply(std::optional<std::vector<uint8_t>> frame, int16_t version) {
  reply<Resp> out;
  if (!frame || frame->size() < 4) return out;
  out.frame = std::move(*frame);
  out.correlation_id = get_int32(out.frame, 0);
  // ApiVersions answers with header v0 at every version (a client that asked too new a version
  // must still read it); the others' flexible versions carry the header's tagged fields.
  const size_t header = is_flexible<Resp>(version) && Resp::api_key != 18 ? 5 : 4;
  if (out.frame.size() < header) return out;
  protocol::reader r(std::span<const uint8_t>(out.frame).subspan(header));
  auto decoded = Resp::decode(r, version);
  if (decoded) out.body = std::move(*decoded);
  return out;
}

// One connection speaking the generated codecs; counts what it sends into *sent.
class kafka_conn {
 public:
  kafka_conn(uint16_t port, size_t* sent) : c_(port), sent_(sent) {}

  bool connected() const { return c_.connected(); }
  raw_client& raw() { return c_; }

  bool send_frame(const std::vector<uint8_t>& frame) {
    if (sent_ != nullptr) *sent_ += frame.size();
    return c_.send_bytes(frame);
  }

  template <class Req>
  int32_t send(const Req& req, int16_t version, std::optional<std::string> client_id = "hostile") {
    const int32_t id = next_id_++;
    const auto body = body_of(req, version);
    if (!send_frame(request_frame(Req::api_key, version, id, body, is_flexible<Req>(version),
                                  std::move(client_id)))) {
      return -1;
    }
    return id;
  }

  template <class Resp>
  reply<Resp> receive(int16_t version, std::chrono::milliseconds timeout = event_timeout) {
    return decode_reply<Resp>(c_.read_frame(timeout), version);
  }

  template <class Resp, class Req>
  reply<Resp> call(const Req& req, int16_t version,
                   std::chrono::milliseconds timeout = event_timeout) {
    const int32_t id = send(req, version);
    auto r = receive<Resp>(version, timeout);
    EXPECT_TRUE(r) << Req::kafka_name << " v" << version << " not answered";
    if (r) {
      EXPECT_EQ(r.correlation_id, id);
    }
    return r;
  }

 private:
  raw_client c_;
  size_t* sent_;
  int32_t next_id_ = 1;
};

}  // namespace tarn::test
