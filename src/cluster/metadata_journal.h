// The ordered, durable sequence of metadata changes a metadata_store is built on, and the image
// its changes built: the local metadata log on one node (metadata_log.h), a log kept in etcd in
// a cluster (etcd_metadata_log.h). The store computes each change from the image and appends it.
#pragma once

#include <mutex>
#include <vector>

#include "base/result.h"
#include "cluster/metadata_image.h"
#include "storage/storage_error.h"

namespace tarn::cluster {

class metadata_journal {
 public:
  virtual ~metadata_journal() = default;
  // The journal's lock, held around reads of image() and around append(): a journal that learns
  // of changes made elsewhere (etcd's watch) applies them under it too.
  virtual std::unique_lock<std::mutex> lock() = 0;
  virtual const metadata_image& image() const = 0;
  // Appends one change durably (it applies whole or not at all), then applies it to the image.
  virtual result<void, storage::storage_error> append(std::vector<metadata_record> records) = 0;
  // After append() failed: when the reason is that another writer appended first (a journal
  // shared by several brokers), applies the changes this journal had not seen yet and returns
  // true, so the caller can decide again on the newer image. Under lock(). A journal with one
  // writer (the local log) never loses a race: false.
  virtual bool catch_up() { return false; }
};

}  // namespace tarn::cluster
