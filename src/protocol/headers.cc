// Header-version rules and request-header decoding (see headers.h).
#include "protocol/headers.h"

namespace tarn::protocol {

namespace {
bool is_flexible(int16_t api_key, int16_t api_version) {
  const api_info* api = find_api(api_key);
  return api != nullptr && api->flexible_from >= 0 && api_version >= api->flexible_from;
}
}  // namespace

int16_t request_header_version(int16_t api_key, int16_t api_version) {
  return is_flexible(api_key, api_version) ? 2 : 1;
}

int16_t response_header_version(int16_t api_key, int16_t api_version) {
  if (api_key == api_versions_key) return 0;
  return is_flexible(api_key, api_version) ? 1 : 0;
}

result<request_header, decode_error> decode_request_header(reader& r) {
  reader peek = r;  // api key and version are the first four bytes of every header version
  int16_t api_key = peek.read_int16();
  int16_t api_version = peek.read_int16();
  if (!peek.ok()) return fail(peek.error());
  return request_header::decode(r, request_header_version(api_key, api_version));
}

}  // namespace tarn::protocol
