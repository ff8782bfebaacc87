// libFuzzer target for tarn dump-log's formatting: the input is the bytes of a segment file
// (00000000000000000000.log), dumped with --deep-iteration --print-data-log into a null stream,
// and with --transaction-log-decoder when the input's size is odd (its keys and values then go
// through the __transaction_state decoder).
// Whatever the bytes, the dump must end without a crash, a sanitizer report or an unbounded
// allocation (decompression is bounded at 1 MiB here). Seeds: fuzz/corpus/dump_log_fuzz.
#include <cstdint>
#include <cstdlib>
#include <ostream>
#include <span>
#include <streambuf>

#include "tools/dump_log.h"

namespace {

class null_buffer : public std::streambuf {
 protected:
  int_type overflow(int_type c) override { return traits_type::not_eof(c); }
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  null_buffer buffer;
  std::ostream null_stream(&buffer);
  tarn::tools::dump_log_options options;
  options.deep_iteration = true;
  options.print_data_log = true;
  options.transaction_log_decoder = size % 2 == 1;
  options.max_uncompressed_bytes = 1024 * 1024;
  bool fatal = false;
  const int code = tarn::tools::dump_log_segment("00000000000000000000.log", {data, size}, options,
                                                 null_stream, null_stream, fatal);
  if (code != tarn::tools::dump_ok && code != tarn::tools::dump_error) std::abort();
  if (fatal && code == tarn::tools::dump_ok) std::abort();
  return 0;
}
