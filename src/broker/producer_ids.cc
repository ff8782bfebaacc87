// Producer ids reserved in blocks (see producer_ids.h).
#include "broker/producer_ids.h"

#include <fmt/format.h>

#include <charconv>
#include <map>
#include <memory>
#include <mutex>

#include "storage/io.h"

namespace tarn::broker {

namespace {

constexpr int64_t producer_id_block_size = 1000;
constexpr const char* producer_ids_file_name = "tarn-producer-ids";

// Producer ids of one log directory.
class producer_id_allocator {
 public:
  explicit producer_id_allocator(std::string path) : path_(std::move(path)) {}

  result<int64_t, std::string> next() {
    std::lock_guard guard(mu_);
    if (!loaded_) {
      auto text = storage::read_small_file(path_, 64);
      if (text) {
        int64_t v = 0;
        auto [p, ec] = std::from_chars(text->data(), text->data() + text->size(), v);
        if (ec != std::errc() || v < 0) return fail(fmt::format("{} is corrupt", path_));
        next_ = block_end_ = v;
      }
      loaded_ = true;
    }
    if (next_ == block_end_) {
      const int64_t end = block_end_ + producer_id_block_size;
      if (auto w = storage::write_file_atomic(path_, fmt::format("{}\n", end)); !w) {
        return fail(w.error().message);
      }
      block_end_ = end;
    }
    return next_++;
  }

 private:
  std::mutex mu_;
  std::string path_;
  bool loaded_ = false;
  int64_t next_ = 0;
  int64_t block_end_ = 0;
};

producer_id_allocator& allocator_for(const std::string& log_dir) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<producer_id_allocator>> allocators;
  std::lock_guard guard(mu);
  auto& a = allocators[log_dir];
  if (!a) a = std::make_unique<producer_id_allocator>(log_dir + "/" + producer_ids_file_name);
  return *a;
}

}  // namespace

result<int64_t, std::string> next_producer_id(const std::string& log_dir) {
  return allocator_for(log_dir).next();
}

}  // namespace tarn::broker
