// The share consumer's acknowledgement bookkeeping and batch encoding (share_acknowledgements.h).
#include "client/share_acknowledgements.h"

#include <algorithm>
#include <iterator>

namespace tarn::client {

std::vector<ack_batch> build_ack_batches(std::vector<std::pair<int64_t, int8_t>> acks) {
  // Stable: of two acknowledgements of one offset the later wins.
  std::stable_sort(acks.begin(), acks.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::pair<int64_t, int8_t>> unique;
  unique.reserve(acks.size());
  for (const auto& a : acks) {
    if (!unique.empty() && unique.back().first == a.first) {
      unique.back().second = a.second;
    } else {
      unique.push_back(a);
    }
  }
  std::vector<ack_batch> out;
  for (size_t i = 0; i < unique.size();) {
    size_t j = i + 1;
    bool one_type = true;
    while (j < unique.size() && unique[j].first == unique[j - 1].first + 1) {
      one_type = one_type && unique[j].second == unique[i].second;
      ++j;
    }
    ack_batch b;
    b.first_offset = unique[i].first;
    b.last_offset = unique[j - 1].first;
    if (one_type) {
      b.types.push_back(unique[i].second);
    } else {
      for (size_t k = i; k < j; ++k) b.types.push_back(unique[k].second);
    }
    out.push_back(std::move(b));
    i = j;
  }
  return out;
}

void share_acknowledgements::delivered(const topic_partition& tp, int64_t offset) {
  delivered_[tp].insert_or_assign(offset, none);
}

bool share_acknowledgements::acknowledge(const topic_partition& tp, int64_t offset, int8_t type) {
  auto p = delivered_.find(tp);
  if (p == delivered_.end()) return false;
  auto r = p->second.find(offset);
  if (r == p->second.end()) return false;
  r->second = type;
  return true;
}

void share_acknowledgements::acknowledge_all(int8_t type) {
  for (auto& [tp, records] : delivered_) {
    for (auto& [offset, t] : records) {
      if (t == none) t = type;
    }
  }
}

size_t share_acknowledgements::unacknowledged() const {
  size_t n = 0;
  for (const auto& [tp, records] : delivered_) {
    for (const auto& [offset, t] : records) n += t == none ? 1 : 0;
  }
  return n;
}

void share_acknowledgements::collect() {
  for (auto p = delivered_.begin(); p != delivered_.end();) {
    auto& records = p->second;
    for (auto r = records.begin(); r != records.end();) {
      if (r->second < 0) {
        ++r;
        continue;
      }
      pending_[p->first].emplace_back(r->first, r->second);
      if (r->second == ack_renew) {
        r->second = renewed;
        ++r;
      } else {
        r = records.erase(r);
      }
    }
    p = records.empty() ? delivered_.erase(p) : std::next(p);
  }
}

std::vector<std::pair<int64_t, int8_t>> share_acknowledgements::take(const topic_partition& tp) {
  auto it = pending_.find(tp);
  if (it == pending_.end()) return {};
  auto out = std::move(it->second);
  pending_.erase(it);
  return out;
}

bool share_acknowledgements::has_renew(const std::vector<std::pair<int64_t, int8_t>>& acks) {
  return std::any_of(acks.begin(), acks.end(), [](const auto& a) { return a.second == ack_renew; });
}

}  // namespace tarn::client
