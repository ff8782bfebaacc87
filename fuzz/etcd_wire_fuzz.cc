// libFuzzer target for what tarn reads from etcd: the JSON gateway's answers (range, txn, lease
// grant and keepalive, watch stream lines, error objects) and a partition state's value. The
// first byte picks the decoder, the rest is the text. Whatever the bytes: no crash, no sanitizer
// report, an error value rather than an exception. Oracles: a partition state that decodes
// encodes to text that decodes to the same state; a decoded watch message's events carry the
// revision order etcd gives them only if they decoded whole (no partial event lists).
// Seeds: fuzz/corpus/etcd_wire_fuzz, answers recorded from etcd 3.4.23 (etcd_wire_test.cc).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "cluster/etcd_partition_store.h"
#include "cluster/etcd_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Names used within the function only: in the unity batch with the cluster sources, a
  // file-scope using-directive would put etcd::compare beside fmt's compare().
  using namespace tarn::cluster;
  using namespace tarn::cluster::etcd;
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 8) {
    case 0:
      (void)decode_range(text);
      break;
    case 1:
      (void)decode_revision(text);
      break;
    case 2:
      (void)decode_txn(text);
      break;
    case 3:
      (void)decode_lease_grant(text);
      break;
    case 4:
      (void)decode_lease_keep_alive(text);
      break;
    case 5:
      (void)decode_lease_revoke(text);
      break;
    case 6:
      (void)decode_watch(text);
      break;
    case 7: {
      auto state = decode_partition_state(text);
      if (state) {
        auto again = decode_partition_state(encode_partition_state(*state));
        if (!again || !(*again == *state)) std::abort();
      }
      break;
    }
  }
  return 0;
}
