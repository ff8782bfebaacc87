// The metadata journal of a cluster, kept in etcd: each change is one entry (the local log's
// framing and records, metadata_records.h) under <prefix>log/<offset>, written by a transaction
// that succeeds only if no entry has that offset yet, so writers agree on one order and a writer
// with a stale image (a deposed controller) cannot append. Every broker reads the entries at open
// and then follows a watch on them, applying each change in order to its image.
//
// Thread-safety: as metadata_journal (the watch applies under lock()).
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cluster/etcd_client.h"
#include "cluster/metadata_journal.h"
#include "cluster/metadata_store.h"

namespace tarn::cluster {

struct etcd_metadata_options {
  etcd::client_options client;
  std::string prefix;    // the cluster's keys, e.g. "/tarn/<cluster.id>/"
  int32_t node_id = -1;  // this broker: the leader recorded for the topics it creates
};

class etcd_metadata_log final : public metadata_journal {
 public:
  // Reads every entry and starts following new ones. Fails when etcd is unreachable or an entry
  // is not a valid change at its offset.
  static result<std::unique_ptr<etcd_metadata_log>, storage::storage_error> open(
      etcd_metadata_options options);
  ~etcd_metadata_log() override;

  std::unique_lock<std::mutex> lock() override { return std::unique_lock(mu_); }
  const metadata_image& image() const override { return image_; }
  // Fails (io_error) when etcd is unreachable, or when another writer took the offset first
  // (the watch then brings that change in; the caller decides again on the newer image).
  result<void, storage::storage_error> append(std::vector<metadata_record> records) override;
  // Reads the entries from the image's next offset on and applies them (what the watch would
  // bring a moment later); true when it applied at least one.
  bool catch_up() override;

  // Adds a listener called under lock() after each change written by another broker was
  // applied (on the watch's thread, or in catch_up()'s caller); it must not take lock().
  void on_remote_change(std::function<void(const metadata_entry&)> handler);
  // Why the journal stopped following etcd (an entry it could not apply, a compacted watch), or
  // "" while it follows.
  std::string follow_error() const;

  std::string entry_key(int64_t offset) const;

 private:
  explicit etcd_metadata_log(etcd_metadata_options options);
  // Decodes and applies one entry's bytes at the image's next offset (under mu_).
  result<bool, storage::storage_error> apply_entry(const std::string& key,
                                                   const std::string& bytes);
  void on_watch(const etcd::watch_response& w);

  etcd_metadata_options options_;
  std::string log_prefix_;
  std::unique_ptr<etcd::etcd_client> client_;
  mutable std::mutex mu_;
  metadata_image image_;
  std::vector<std::function<void(const metadata_entry&)>> on_remote_change_;
  std::string follow_error_;
  std::unique_ptr<etcd::etcd_watch> watch_;  // last: stopped first, while the rest still exists
};

// The metadata seam over etcd: journal_metadata_store on an etcd_metadata_log.
class etcd_metadata_store final : public journal_metadata_store {
 public:
  // `followed_topics`: the topics this broker follows (docs/cluster.md, "Replication"), loaded
  // like its own.
  static result<std::unique_ptr<etcd_metadata_store>, storage::storage_error> open(
      etcd_metadata_options options, std::set<storage::uuid> followed_topics = {});
  etcd_metadata_log& log() { return *log_; }

 private:
  etcd_metadata_store(etcd_metadata_log* log, std::unique_ptr<metadata_journal> owned,
                      int32_t node_id, std::set<storage::uuid> followed)
      : journal_metadata_store(std::move(owned)), log_(log) {
    local_leader_ = node_id;
    followed_here_ = std::move(followed);
  }
  etcd_metadata_log* log_;  // the journal the base owns
};

}  // namespace tarn::cluster
