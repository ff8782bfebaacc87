// An application of tarn's installed client library: reads COUNT records of a topic's partition
// 0 from its beginning and prints them. Built outside tarn's tree (examples/CMakeLists.txt, or
// pkg-config):
//
//   consume BOOTSTRAP TOPIC COUNT
//
// Prints "consumed <offset> <value>" per record, then "done N"; exits non-zero when fewer than
// COUNT records arrived within 30 seconds.
#include <tarn/consumer.h>

#include <chrono>
#include <cstdio>
#include <string>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s BOOTSTRAP TOPIC COUNT\n", argv[0]);
    return 2;
  }
  auto consumer = tarn::client::consumer::create({{"bootstrap.servers", argv[1]}});
  if (!consumer) {
    std::fprintf(stderr, "%s\n", consumer.error().message.c_str());
    return 1;
  }
  const tarn::client::topic_partition partition{argv[2], 0};
  (*consumer)->assign({partition});
  (*consumer)->seek(partition, tarn::client::offset_beginning);
  const int count = std::stoi(argv[3]);
  int seen = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (seen < count && std::chrono::steady_clock::now() < deadline) {
    auto records = (*consumer)->poll(std::chrono::milliseconds(500), count - seen);
    if (!records) {
      std::fprintf(stderr, "%s\n", records.error().message.c_str());
      return 1;
    }
    for (const auto& r : *records) {
      std::printf("consumed %lld %s\n", static_cast<long long>(r.offset),
                  r.value ? r.value->c_str() : "<null>");
      ++seen;
    }
  }
  (*consumer)->close();
  std::printf("done %d\n", seen);
  return seen == count ? 0 : 1;
}
