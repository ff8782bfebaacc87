// libFuzzer target for the protocol decoders: the first byte picks an API (by index into the API
// table, plus the two headers), the second a version within the schema's range, the rest is the
// body. Every request and response type at every version is reachable. A successful decode is
// re-encoded and decoded again, and the two encodings must agree (decode/encode are inverses
// on whatever the decoder accepts). Seeds: fuzz/corpus/protocol_fuzz/ (from the golden files).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "protocol/headers.h"
#include "protocol/messages.h"

namespace {

using namespace tarn::protocol;

template <typename M>
void check(std::span<const uint8_t> body, int16_t version) {
  reader r(body);
  auto decoded = M::decode(r, version);
  if (!decoded) return;
  std::vector<uint8_t> once;
  writer w1(once);
  decoded->encode(w1, version);
  if (once.size() != decoded->encoded_size(version)) std::abort();
  reader r2(once);
  auto again = M::decode(r2, version);
  if (!again || r2.remaining() != 0) std::abort();
  std::vector<uint8_t> twice;
  writer w2(twice);
  again->encode(w2, version);
  if (once != twice) std::abort();
}

template <typename M>
void check_any_version(uint8_t selector, std::span<const uint8_t> body) {
  int16_t span = M::max_version - M::min_version + 1;
  check<M>(body, static_cast<int16_t>(M::min_version + selector % span));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  // Byte 0: bit 0 request/response, the rest an index into all_apis (+ 2 header slots).
  size_t slot = (data[0] >> 1) % (all_apis.size() + 1);
  bool response = data[0] & 1;
  std::span<const uint8_t> body(data + 2, size - 2);
  if (slot == all_apis.size()) {
    if (response) {
      check_any_version<response_header>(data[1], body);
    } else {
      check_any_version<request_header>(data[1], body);
      reader r(body);
      (void)decode_request_header(r);
    }
    return 0;
  }
  visit_api(all_apis[slot].api_key, [&]<typename Req, typename Resp>() {
    if (response) {
      check_any_version<Resp>(data[1], body);
    } else {
      check_any_version<Req>(data[1], body);
    }
  });
  return 0;
}
