// An application of tarn's installed client library: sends N records to a topic and prints
// where each landed. Built outside tarn's tree (examples/CMakeLists.txt, or pkg-config):
//
//   produce BOOTSTRAP TOPIC COUNT
//
// Prints "delivered <partition> <offset> <value>" per record, then "done N", and exits non-zero
// when a record was not delivered.
#include <tarn/producer.h>

#include <cstdio>
#include <future>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s BOOTSTRAP TOPIC COUNT\n", argv[0]);
    return 2;
  }
  auto producer = tarn::client::producer::create(
      {{"bootstrap.servers", argv[1]}, {"acks", "all"}, {"linger.ms", "5"}});
  if (!producer) {
    std::fprintf(stderr, "%s\n", producer.error().message.c_str());
    return 1;
  }
  const int count = std::stoi(argv[3]);
  std::vector<std::string> values;
  std::vector<std::future<tarn::client::delivery_result>> delivered;
  for (int i = 0; i < count; ++i) values.push_back("record-" + std::to_string(i));
  for (const std::string& value : values) {
    tarn::client::producer_record record;
    record.topic = argv[2];
    record.value = value;
    delivered.push_back((*producer)->send(record));
  }
  (*producer)->flush();
  int failed = 0;
  for (int i = 0; i < count; ++i) {
    auto metadata = delivered[i].get();
    if (!metadata) {
      std::fprintf(stderr, "record %d: %s\n", i, metadata.error().message.c_str());
      ++failed;
      continue;
    }
    std::printf("delivered %d %lld %s\n", metadata->partition,
                static_cast<long long>(metadata->offset), values[i].c_str());
  }
  (*producer)->close();
  std::printf("done %d\n", count - failed);
  return failed == 0 ? 0 : 1;
}
