// Producer-id sources: a file's blocks on one node, etcd's in a cluster (see producer_ids.h).
#include "broker/producer_ids.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <mutex>

#include "cluster/producer_id_blocks.h"
#include "storage/io.h"

namespace tarn::broker {

namespace {

constexpr int64_t producer_id_block_size = 1000;
constexpr const char* producer_ids_file_name = "tarn-producer-ids";

// Producer ids of one log directory.
class file_producer_ids final : public producer_id_source {
 public:
  explicit file_producer_ids(std::string path) : path_(std::move(path)) {}

  result<int64_t, protocol::error_code> next() override {
    auto id = take();
    if (!id) {
      spdlog::error("cannot reserve producer ids: {}", id.error());
      return fail(protocol::error_code::unknown_server_error);
    }
    return *id;
  }

 private:
  result<int64_t, std::string> take() {
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

  std::mutex mu_;
  std::string path_;
  bool loaded_ = false;
  int64_t next_ = 0;
  int64_t block_end_ = 0;
};

class cluster_producer_ids final : public producer_id_source {
 public:
  explicit cluster_producer_ids(std::unique_ptr<cluster::producer_id_blocks> blocks)
      : blocks_(std::move(blocks)) {}
  result<int64_t, protocol::error_code> next() override { return blocks_->next(); }

 private:
  std::unique_ptr<cluster::producer_id_blocks> blocks_;
};

}  // namespace

std::unique_ptr<producer_id_source> make_file_producer_ids(std::string log_dir) {
  return std::make_unique<file_producer_ids>(log_dir + "/" + producer_ids_file_name);
}

std::unique_ptr<producer_id_source> make_cluster_producer_ids(
    std::unique_ptr<cluster::producer_id_blocks> blocks) {
  return std::make_unique<cluster_producer_ids>(std::move(blocks));
}

}  // namespace tarn::broker
