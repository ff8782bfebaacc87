// The group coordinator's shards, request dispatch, offsets, persistence and load
// (group_coordinator.h). The classic rebalance protocol lives in classic_group.cc.
#include "coordinator/group_coordinator.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <tuple>

#include "coordinator/classic_group.h"
#include "coordinator/combining_mutex.h"
#include "coordinator/consumer_group.h"
#include "coordinator/group_records.h"
#include "coordinator/wire_ids.h"
#include "record/batch_builder.h"

namespace tarn::coordinator {

using protocol::error_code;

int32_t partition_for(std::string_view group_id, int32_t partitions) {
  // Java's String.hashCode: s[0]*31^(n-1) + ... over UTF-16 code units, in int32 arithmetic.
  uint32_t h = 0;
  auto add = [&](uint32_t unit) { h = h * 31u + unit; };
  for (size_t i = 0; i < group_id.size();) {
    const auto c = static_cast<uint8_t>(group_id[i]);
    uint32_t cp = c;
    size_t len = 1;
    if (c >= 0xf0 && i + 3 < group_id.size()) {
      cp = ((c & 0x07u) << 18) | ((static_cast<uint8_t>(group_id[i + 1]) & 0x3fu) << 12) |
           ((static_cast<uint8_t>(group_id[i + 2]) & 0x3fu) << 6) |
           (static_cast<uint8_t>(group_id[i + 3]) & 0x3fu);
      len = 4;
    } else if (c >= 0xe0 && i + 2 < group_id.size()) {
      cp = ((c & 0x0fu) << 12) | ((static_cast<uint8_t>(group_id[i + 1]) & 0x3fu) << 6) |
           (static_cast<uint8_t>(group_id[i + 2]) & 0x3fu);
      len = 3;
    } else if (c >= 0xc0 && i + 1 < group_id.size()) {
      cp = ((c & 0x1fu) << 6) | (static_cast<uint8_t>(group_id[i + 1]) & 0x3fu);
      len = 2;
    }
    if (cp >= 0x10000) {
      cp -= 0x10000;
      add(0xd800u + (cp >> 10));
      add(0xdc00u + (cp & 0x3ffu));
    } else {
      add(cp);
    }
    i += len;
  }
  const auto hash = static_cast<int32_t>(h);
  // Kafka's Utils.abs: Integer.MIN_VALUE maps to 0.
  const int32_t abs = hash == INT32_MIN ? 0 : (hash < 0 ? -hash : hash);
  return abs % partitions;
}

using topic_offsets = std::map<std::pair<std::string, int32_t>, offset_and_metadata>;

struct shard {
  int32_t partition = 0;
  // Held for every state change of the shard's groups; a hot OffsetCommit that finds it held is
  // handed to the holder instead of blocking its network thread (combining_mutex.h).
  combining_mutex mu;
  bool loaded = false;
  // __consumer_offsets was deleted, or (in a cluster) this broker does not lead the partition:
  // the shard holds nothing and answers NOT_COORDINATOR until the topic exists again or this
  // broker leads it (Kafka unloads the partition).
  bool unloaded = false;
  // Grows with every load and unload: a load that finds it changed when its replay ends was
  // overtaken (the leadership moved meanwhile) and installs nothing.
  uint64_t generation = 0;
  // A group id names a classic group or a KIP-848 consumer group, never both.
  std::map<std::string, std::unique_ptr<classic_group>, std::less<>> classic;
  std::map<std::string, std::unique_ptr<consumer_group>, std::less<>> consumer;
  std::map<std::string, topic_offsets, std::less<>> offsets;
  // TxnOffsetCommit's offsets, by producer id then group: committed by the producer's COMMIT
  // marker on this partition, dropped by its ABORT (Kafka's pendingTransactionalOffsets).
  std::map<int64_t, std::map<std::string, topic_offsets, std::less<>>> pending_txn;
  // The coordinator's per-group configs (consumer.*), handed to every group_context.
  const consumer_group_configs* group_configs = nullptr;
};

namespace {

// A transaction's marker reached the shard's partition: its pending offsets take effect or go.
void complete_pending(shard& s, int64_t producer_id, bool commit) {
  auto it = s.pending_txn.find(producer_id);
  if (it == s.pending_txn.end()) return;
  if (commit) {
    for (auto& [group, offsets] : it->second) {
      auto& committed = s.offsets[group];
      for (auto& [tp, om] : offsets) committed[tp] = std::move(om);
    }
  }
  s.pending_txn.erase(it);
}

// Whether an open transaction holds a TxnOffsetCommit of the group's partition: OffsetFetch
// with RequireStable answers UNSTABLE_OFFSET_COMMIT for it (Kafka's
// hasPendingTransactionalOffsets), so a consumer that takes over after an exactly-once producer
// waits for the transaction's end instead of starting from the offset before it.
bool has_pending_offset(const shard& s, std::string_view group, const std::string& topic,
                        int32_t partition) {
  for (const auto& [producer_id, groups] : s.pending_txn) {
    auto g = groups.find(group);
    if (g != groups.end() && g->second.contains({topic, partition})) return true;
  }
  return false;
}

}  // namespace

namespace {

// Runs f(shard, ctx) with the shard's lock already held; `deferred` gets the callbacks to run
// once it is released.
template <class F>
auto run_locked(shard& s, const group_config& config, const metadata_view& metadata,
                offsets_log& log, int64_t now_ms, std::vector<std::function<void()>>& deferred,
                F&& f) {
  group_context ctx{now_ms, config, metadata, nullptr, deferred};
  ctx.group_configs = s.group_configs;
  ctx.write = [&log, &s, &ctx, now_ms](std::vector<coordinator_record> records) -> error_code {
    if (records.empty()) return error_code::none;
    if (!log.partitions()) {
      auto created = log.ensure_topic();
      if (!created) return created.error();
    }
    record::batch_builder_config bc;
    // The records' own size (a bound on each record's varint framing included): the builder
    // reserves batch_size up front, so SIZE_MAX would map 16 MiB for a batch of a few KiB.
    size_t bytes = record::record_batch_overhead + 64;
    for (const auto& r : records) bytes += r.key.size() + (r.value ? r.value->size() : 0) + 40;
    bc.batch_size = bytes;
    bc.base_sequence = 0;  // as Kafka's coordinator runtime builds them (producer id stays -1)
    if (ctx.txn_producer_id >= 0) {  // TxnOffsetCommit: pending until the producer's marker
      bc.producer_id = ctx.txn_producer_id;
      bc.producer_epoch = ctx.txn_producer_epoch;
      bc.transactional = true;
    }
    record::batch_builder builder(bc);
    for (const auto& r : records) {
      std::optional<record::bytes_view> value;
      if (r.value) value = record::bytes_view(*r.value);
      if (builder.try_append(now_ms, record::bytes_view(r.key), value) !=
          record::append_result::appended) {
        return error_code::record_list_too_large;
      }
    }
    auto batch = builder.build();
    if (!batch) return error_code::unknown_server_error;
    auto appended = log.append(s.partition, std::move(*batch),
                               ctx.txn_producer_id >= 0 ? ctx.txn_markers_before : std::nullopt);
    if (!appended) return appended.error();
    return error_code::none;
  };
  return f(s, ctx);
}

// Runs f(shard, ctx) under the shard's lock, then the callbacks it deferred.
template <class F>
auto run_in_shard(shard& s, const group_config& config, const metadata_view& metadata,
                  offsets_log& log, int64_t now_ms, F&& f) {
  std::vector<std::function<void()>> deferred;
  using R = decltype(run_locked(s, config, metadata, log, now_ms, deferred, f));
  if constexpr (std::is_void_v<R>) {
    {
      std::lock_guard lock(s.mu);
      run_locked(s, config, metadata, log, now_ms, deferred, f);
    }
    for (auto& d : deferred) d();
  } else {
    std::optional<R> out;
    {
      std::lock_guard lock(s.mu);
      out.emplace(run_locked(s, config, metadata, log, now_ms, deferred, f));
    }
    for (auto& d : deferred) d();
    return std::move(*out);
  }
}

// What a shard that is not loaded answers.
error_code not_loaded_error(const shard& s) {
  return s.unloaded ? error_code::not_coordinator : error_code::coordinator_load_in_progress;
}

// Kafka's convertToClassicGroup after the last member of the consumer protocol leaves: the
// consumer group's tombstones and the classic group's GroupMetadata in one batch, then the
// classic group rebalances (its members get REBALANCE_IN_PROGRESS and rejoin).
error_code downgrade(shard& sh, const std::string& group_id, const std::string& leaving_member_id,
                     group_context& ctx) {
  auto cg = sh.consumer.find(group_id);
  if (cg == sh.consumer.end()) return error_code::none;
  auto classic =
      classic_group::from_consumer_group(*cg->second, leaving_member_id, ctx.metadata, ctx.now_ms);
  std::vector<coordinator_record> records;
  cg->second->delete_records(records);
  records.push_back(group_metadata_record(*classic));
  if (auto e = ctx.write(std::move(records)); e != error_code::none) {
    return append_error_to_response_error(e);
  }
  sh.consumer.erase(cg);
  classic->rebalance(ctx);
  sh.classic[group_id] = std::move(classic);
  return error_code::none;
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

group_coordinator::group_coordinator(group_config config, offsets_log& log,
                                     const metadata_view& metadata)
    : config_(std::move(config)), log_(log), metadata_(metadata) {
  const int32_t n = log_.partitions().value_or(config_.offsets_topic_num_partitions);
  for (int32_t p = 0; p < n; ++p) {
    auto s = std::make_unique<shard>();
    s->partition = p;
    s->group_configs = &group_configs_;
    shards_.push_back(std::move(s));
  }
}

group_coordinator::~group_coordinator() = default;

shard* group_coordinator::shard_for(std::string_view group_id) {
  return shards_[static_cast<size_t>(partition_for(group_id, static_cast<int32_t>(shards_.size())))]
      .get();
}

// --- Load --------------------------------------------------------------------------------------

namespace {

// Replays `partition` of __consumer_offsets into `s` (whose maps are empty): offsets, pending
// transactional offsets, classic groups from their GroupMetadata, consumer groups from their
// records. What Kafka's CoordinatorLoaderImpl does for one partition.
void replay_partition(shard& s, offsets_log& log, int64_t now_ms) {
  std::map<std::string, std::optional<classic_group_snapshot>> groups;
  auto replayed = log.replay(s.partition, [&](const offsets_record& r) {
    if (r.marker_commit) {
      complete_pending(s, r.producer_id, *r.marker_commit);
      return;
    }
    auto decoded = decode_record(r.key, r.value);
    if (!decoded) return;  // unknown or corrupt record: skipped, as Kafka skips unknown types
    if (auto* oc = std::get_if<loaded_offset_commit>(&*decoded);
        oc != nullptr && r.producer_id >= 0) {
      // A TxnOffsetCommit: pending until its marker (later in this replay, or never).
      if (oc->value) {
        s.pending_txn[r.producer_id][oc->group_id][{oc->topic, oc->partition}] = *oc->value;
      }
      if (!groups.count(oc->group_id)) groups[oc->group_id] = std::nullopt;
    } else if (oc != nullptr) {
      auto& offsets = s.offsets[oc->group_id];
      if (oc->value) {
        offsets[{oc->topic, oc->partition}] = *oc->value;
      } else {
        offsets.erase({oc->topic, oc->partition});
        if (offsets.empty()) s.offsets.erase(oc->group_id);
      }
      if (!groups.count(oc->group_id)) groups[oc->group_id] = std::nullopt;
    } else if (auto* gm = std::get_if<loaded_group_metadata>(&*decoded)) {
      if (gm->value) {
        groups[gm->group_id] = std::move(gm->value);
        s.consumer.erase(gm->group_id);  // the id became a classic group again
      } else {
        groups.erase(gm->group_id);
      }
    } else if (auto* cg = std::get_if<loaded_consumer_group_record>(&*decoded)) {
      auto& g = s.consumer[cg->group_id];
      if (!g) g = std::make_unique<consumer_group>(cg->group_id);
      (void)g->replay(cg->record_type, r.key, r.value);
      if (r.value) groups.erase(cg->group_id);  // the id became a consumer group
      if (g->dead()) s.consumer.erase(cg->group_id);
    }
  });
  (void)replayed;
  for (auto& [id, snapshot] : groups) {
    if (!snapshot && !s.offsets.count(id)) continue;
    if (s.consumer.count(id)) continue;  // offsets of a consumer group
    auto g = std::make_unique<classic_group>(id, now_ms);
    if (snapshot) g->restore(std::move(*snapshot), now_ms);
    s.classic[id] = std::move(g);
  }
}

}  // namespace

void group_coordinator::load(int64_t now_ms) {
  const bool exists = log_.partitions().has_value();
  for (auto& sp : shards_) {
    shard& s = *sp;
    std::lock_guard lock(s.mu);
    if (exists) replay_partition(s, log_, now_ms);
    s.loaded = true;
  }
  last_expiry_check_ms_ = now_ms;
  loaded_.store(true, std::memory_order_release);
}

void group_coordinator::start_unowned(int64_t now_ms) {
  placed_by_leadership_.store(true, std::memory_order_release);
  for (auto& sp : shards_) {
    std::lock_guard lock(sp->mu);
    sp->loaded = false;
    sp->unloaded = true;
  }
  last_expiry_check_ms_ = now_ms;
  loaded_.store(true, std::memory_order_release);
}

bool group_coordinator::load_partition(int32_t partition, int64_t now_ms) {
  if (partition < 0 || static_cast<size_t>(partition) >= shards_.size()) return false;
  shard& s = *shards_[static_cast<size_t>(partition)];
  uint64_t generation = 0;
  {
    // Loading: its groups answer COORDINATOR_LOAD_IN_PROGRESS (not the shard's lock: the replay
    // runs without it, so requests are answered meanwhile instead of waiting).
    std::lock_guard lock(s.mu);
    if (s.loaded) return true;
    generation = ++s.generation;
    s.unloaded = false;
  }
  shard fresh;
  fresh.partition = partition;
  replay_partition(fresh, log_, now_ms);
  std::lock_guard lock(s.mu);
  if (s.generation != generation) return false;  // unloaded (or reloaded) meanwhile
  s.classic = std::move(fresh.classic);
  s.consumer = std::move(fresh.consumer);
  s.offsets = std::move(fresh.offsets);
  s.pending_txn = std::move(fresh.pending_txn);
  s.loaded = true;
  return true;
}

void group_coordinator::unload_partition(int32_t partition, int64_t now_ms) {
  if (partition < 0 || static_cast<size_t>(partition) >= shards_.size()) return;
  run_in_shard(*shards_[static_cast<size_t>(partition)], config_, metadata_, log_, now_ms,
               [&](shard& sh, group_context& ctx) {
                 // Kafka's onResignation: waiting JoinGroup/SyncGroup get NOT_COORDINATOR (the
                 // members find the new coordinator), the groups are forgotten here (the new
                 // leader replays them from the log).
                 ++sh.generation;
                 for (auto& [id, g] : sh.classic) g->fail_waiting(error_code::not_coordinator, ctx);
                 sh.classic.clear();
                 sh.consumer.clear();
                 sh.offsets.clear();
                 sh.pending_txn.clear();
                 sh.loaded = false;
                 sh.unloaded = true;
               });
}

bool group_coordinator::owns_partition(int32_t partition) {
  if (partition < 0 || static_cast<size_t>(partition) >= shards_.size()) return false;
  shard& s = *shards_[static_cast<size_t>(partition)];
  std::lock_guard lock(s.mu);
  return s.loaded;
}

error_code group_coordinator::find_coordinator(std::string_view group_id) {
  (void)group_id;
  if (!log_.partitions()) {
    auto created = log_.ensure_topic();
    if (!created) return error_code::coordinator_not_available;
  }
  // A recreated __consumer_offsets: its shards start empty (nothing to replay). In a cluster
  // the shards follow the partitions' leadership instead (load_partition).
  if (!placed_by_leadership_.load(std::memory_order_acquire) &&
      offsets_topic_deleted_.exchange(false, std::memory_order_acq_rel)) {
    for (auto& sp : shards_) {
      std::lock_guard lock(sp->mu);
      if (!sp->unloaded) continue;
      sp->unloaded = false;
      sp->loaded = true;
    }
  }
  return error_code::none;
}

// --- Classic protocol -------------------------------------------------------------------------

namespace {

bool valid_group_id(std::string_view id) { return !id.empty(); }

}  // namespace

void group_coordinator::join_group(const protocol::join_group_request& request, int16_t version,
                                   const client_info& client, int64_t now_ms, join_callback done) {
  if (!valid_group_id(request.group_id)) {
    done(join_error(request.member_id, error_code::invalid_group_id));
    return;
  }
  if (request.session_timeout_ms < config_.group_min_session_timeout_ms ||
      request.session_timeout_ms > config_.group_max_session_timeout_ms) {
    done(join_error(request.member_id, error_code::invalid_session_timeout));
    return;
  }
  if (shut_down_.load(std::memory_order_acquire)) {
    done(join_error(request.member_id, error_code::not_coordinator));
    return;
  }
  // v0 has no rebalance timeout: the session timeout serves as both.
  protocol::join_group_request req = request;
  if (version == 0 || req.rebalance_timeout_ms < 0)
    req.rebalance_timeout_ms = req.session_timeout_ms;
  shard& s = *shard_for(request.group_id);
  run_in_shard(s, config_, metadata_, log_, now_ms, [&](shard& sh, group_context& ctx) {
    if (!sh.loaded) {
      ctx.deferred.push_back([done, m = std::string(request.member_id), e = not_loaded_error(sh)] {
        done(join_error(m, e));
      });
      return;
    }
    if (auto cg = sh.consumer.find(request.group_id); cg != sh.consumer.end()) {
      if (!cg->second->empty()) {
        // A classic member of a consumer group (KIP-848's online migration).
        auto d = cg->second->classic_join(req, version, client, ctx, done);
        if (!d) return;
        // It replaced the last consumer-protocol member: the group becomes a Stable classic
        // group with it (Kafka's convertToClassicGroup with a joining member, no rebalance).
        auto classic = classic_group::from_consumer_group(*cg->second, d->replaced_member_id,
                                                          metadata_, now_ms, &d->joining);
        d->records.push_back(group_metadata_record(*classic));
        if (auto e = ctx.write(std::move(d->records)); e != error_code::none) {
          ctx.deferred.push_back([done, m = d->joining.member_id, e] {
            done(join_error(m, append_error_to_response_error(e)));
          });
          return;
        }
        sh.consumer.erase(cg);
        sh.classic[std::string(request.group_id)] = std::move(classic);
        auto out = std::make_shared<owned_message<protocol::join_group_response>>();
        out->message.member_id = out->arena.keep(d->joining.member_id);
        out->message.generation_id = d->joining.member_epoch;
        out->message.protocol_type = "consumer";
        out->message.protocol_name =
            out->arena.keep(d->joining.classic_member->supported_protocols.front().name);
        out->message.leader = "";
        ctx.deferred.push_back([done, out]() mutable { done(std::move(*out)); });
        return;
      }
      // An empty consumer group becomes a classic group (Kafka's maybeDeleteEmptyConsumerGroup).
      std::vector<coordinator_record> records;
      cg->second->delete_records(records);
      if (auto e = ctx.write(std::move(records)); e != error_code::none) {
        ctx.deferred.push_back([done, m = std::string(request.member_id), e] {
          done(join_error(m, append_error_to_response_error(e)));
        });
        return;
      }
      sh.consumer.erase(cg);
    }
    auto it = sh.classic.find(request.group_id);
    if (it == sh.classic.end()) {
      if (!req.member_id.empty()) {
        ctx.deferred.push_back([done, m = std::string(request.member_id)] {
          done(join_error(m, error_code::unknown_member_id));
        });
        return;
      }
      it = sh.classic
               .emplace(std::string(request.group_id),
                        std::make_unique<classic_group>(std::string(request.group_id), now_ms))
               .first;
      // A new group is committed to the log before anything happens in it (Kafka writes its
      // empty GroupMetadata record, protocol type "", generation 0, no members).
      if (auto e = ctx.write({group_metadata_record(*it->second)}); e != error_code::none) {
        sh.classic.erase(it);
        ctx.deferred.push_back([done, m = std::string(request.member_id), e] {
          done(join_error(m, append_error_to_response_error(e)));
        });
        return;
      }
    }
    it->second->join(req, version, client.client_id, client.client_host, ctx, done);
    // A deadline the join made due now (group.initial.rebalance.delay.ms=0) fires at once, as
    // Kafka's 0 ms timer does, rather than at the next poll.
    it->second->poll(ctx);
  });
}

void group_coordinator::sync_group(const protocol::sync_group_request& request, int16_t version,
                                   int64_t now_ms, sync_callback done) {
  if (version >= 5 && (!request.protocol_type || !request.protocol_name)) {
    done(sync_error(error_code::inconsistent_group_protocol));
    return;
  }
  if (!valid_group_id(request.group_id)) {
    done(sync_error(error_code::invalid_group_id));
    return;
  }
  if (shut_down_.load(std::memory_order_acquire)) {
    done(sync_error(error_code::not_coordinator));
    return;
  }
  shard& s = *shard_for(request.group_id);
  run_in_shard(s, config_, metadata_, log_, now_ms, [&](shard& sh, group_context& ctx) {
    error_code early = error_code::none;
    auto it = sh.classic.find(request.group_id);
    auto cg = sh.consumer.find(request.group_id);
    if (!sh.loaded) {
      early = not_loaded_error(sh);
    } else if (cg != sh.consumer.end()) {
      if (!cg->second->empty()) {
        cg->second->classic_sync(request, ctx, done);
        return;
      }
      early = error_code::unknown_member_id;
    } else if (it == sh.classic.end()) {
      early = error_code::unknown_member_id;
    }
    if (early != error_code::none) {
      ctx.deferred.push_back([done, early] { done(sync_error(early)); });
      return;
    }
    it->second->sync(request, version, ctx, done);
  });
}

owned_message<protocol::heartbeat_response> group_coordinator::heartbeat(
    const protocol::heartbeat_request& request, int16_t version, int64_t now_ms) {
  (void)version;
  owned_message<protocol::heartbeat_response> out;
  if (!valid_group_id(request.group_id)) {
    out.message.error_code = static_cast<int16_t>(error_code::invalid_group_id);
    return out;
  }
  shard& s = *shard_for(request.group_id);
  const error_code e =
      run_in_shard(s, config_, metadata_, log_, now_ms, [&](shard& sh, group_context& ctx) {
        if (!sh.loaded) return not_loaded_error(sh);
        if (auto cg = sh.consumer.find(request.group_id); cg != sh.consumer.end()) {
          return cg->second->classic_heartbeat(request, ctx);
        }
        auto it = sh.classic.find(request.group_id);
        if (it == sh.classic.end()) return error_code::unknown_member_id;
        return it->second->heartbeat(request, ctx);
      });
  out.message.error_code = static_cast<int16_t>(e);
  return out;
}

owned_message<protocol::leave_group_response> group_coordinator::leave_group(
    const protocol::leave_group_request& request, int16_t version, int64_t now_ms) {
  owned_message<protocol::leave_group_response> out;
  if (!valid_group_id(request.group_id)) {
    out.message.error_code = static_cast<int16_t>(error_code::invalid_group_id);
    return out;
  }
  shard& s = *shard_for(request.group_id);
  const error_code e =
      run_in_shard(s, config_, metadata_, log_, now_ms, [&](shard& sh, group_context& ctx) {
        if (!sh.loaded) return not_loaded_error(sh);
        if (auto cg = sh.consumer.find(request.group_id); cg != sh.consumer.end()) {
          return cg->second->classic_leave(request, version, ctx, out);
        }
        auto it = sh.classic.find(request.group_id);
        if (it == sh.classic.end()) {
          // Every member named is unknown.
          if (version >= 3) {
            for (const auto& m : request.members) {
              add_leave_member_response(out, m.member_id, m.group_instance_id,
                                        error_code::unknown_member_id);
            }
            return error_code::none;
          }
          return error_code::unknown_member_id;
        }
        return it->second->leave(request, version, ctx, out);
      });
  out.message.error_code = static_cast<int16_t>(e);
  return out;
}

// --- Offsets -----------------------------------------------------------------------------------

// What an OffsetCommit works out before it takes the shard (the topics are looked up and the
// response mirrors the request), then fills in under the shard's lock.
struct group_coordinator::offset_commit_call {
  using resp = protocol::offset_commit_response;
  struct part {
    size_t topic_index;
    size_t partition_index;
    std::string topic;
    topic_uuid topic_id;
    const protocol::offset_commit_request::offset_commit_request_partition* request;
  };
  owned_message<resp> out;
  std::vector<part> candidates;  // partitions of existing topics: committed unless refused

  void set_error(const part& c, error_code e) {
    out.message.topics[c.topic_index].partitions[c.partition_index].error_code =
        static_cast<int16_t>(e);
  }
  void fail_all(error_code e) {
    for (const auto& c : candidates) set_error(c, e);
  }
};

void group_coordinator::prepare_offset_commit(const protocol::offset_commit_request& request,
                                              int16_t version, offset_commit_call& call) const {
  using resp = protocol::offset_commit_response;
  auto& out = call.out;
  for (const auto& t : request.topics) {
    resp::offset_commit_response_topic rt;
    std::optional<topic_description> desc;
    if (version >= 10) {
      rt.topic_id = t.topic_id;
      desc = metadata_.topic_by_id(from_wire(t.topic_id));
    } else {
      rt.name = out.arena.keep(t.name);
      desc = metadata_.topic(t.name);
    }
    for (const auto& p : t.partitions) {
      resp::offset_commit_response_partition rp;
      rp.partition_index = p.partition_index;
      if (!desc || p.partition_index < 0 || p.partition_index >= desc->partitions) {
        rp.error_code =
            static_cast<int16_t>(version >= 10 && !desc ? error_code::unknown_topic_id
                                                        : error_code::unknown_topic_or_partition);
      } else {
        call.candidates.push_back(
            {out.message.topics.size(), rt.partitions.size(), desc->name, desc->id, &p});
      }
      rt.partitions.push_back(rp);
    }
    out.message.topics.push_back(std::move(rt));
  }
}

void group_coordinator::apply_offset_commit(shard& sh, group_context& ctx,
                                            const protocol::offset_commit_request& request,
                                            int16_t version, offset_commit_call& call) const {
  const group_config& config = config_;
  const int64_t now_ms = ctx.now_ms;
  if (!sh.loaded) {
    call.fail_all(not_loaded_error(sh));
    return;
  }
  const std::string group_id(request.group_id);
  bool created = false;
  const bool transactional = ctx.txn_producer_id >= 0;  // TxnOffsetCommit
  // A KIP-848 member's commit: its epoch, and with an older epoch each partition (KIP-1251).
  const consumer_group* consumer = nullptr;
  bool check_partitions = false;
  if (auto cg = sh.consumer.find(group_id); cg != sh.consumer.end()) {
    consumer = cg->second.get();
    auto check = consumer->validate_offset_commit(request.member_id, request.group_instance_id,
                                                  request.generation_id_or_member_epoch,
                                                  transactional, version);
    if (check.error) {
      call.fail_all(check.error.code);
      return;
    }
    check_partitions = check.check_partitions;
  }
  auto it = sh.classic.find(group_id);
  classic_group* group = it == sh.classic.end() ? nullptr : it->second.get();
  if (consumer != nullptr) {
    // validated above
  } else if (group == nullptr) {
    if (request.generation_id_or_member_epoch < 0) {
      // The admin client or a consumer without group management: a "simple" group.
      auto g = std::make_unique<classic_group>(group_id, now_ms);
      group = g.get();
      sh.classic.emplace(group_id, std::move(g));
      created = true;
    } else {
      // OffsetCommit v9+ says the group is missing; TxnOffsetCommit (at every version, also v6
      // which runs as v10 here) ILLEGAL_GENERATION, as validateTransactionalOffsetCommit.
      call.fail_all(version >= 9 && !transactional ? error_code::group_id_not_found
                                                   : error_code::illegal_generation);
      return;
    }
  }
  if (group != nullptr) {
    if (auto e =
            group->validate_offset_commit(request.member_id, request.group_instance_id,
                                          request.generation_id_or_member_epoch, transactional);
        e != error_code::none) {
      call.fail_all(e);
      return;
    }
    if (group->state() == classic_group_state::stable ||
        group->state() == classic_group_state::preparing_rebalance) {
      group->touch_member(request.member_id, ctx);
    }
  }
  std::optional<int64_t> expire;
  if (version >= 2 && version <= 4 && request.retention_time_ms != -1) {
    expire = now_ms + request.retention_time_ms;
  }
  std::vector<coordinator_record> records;
  std::vector<std::pair<const offset_commit_call::part*, offset_and_metadata>> accepted;
  for (const auto& c : call.candidates) {
    const auto& p = *c.request;
    const std::string_view metadata = p.committed_metadata.value_or("");
    if (p.committed_metadata &&
        metadata.size() > static_cast<size_t>(config.offset_metadata_max_bytes)) {
      call.set_error(c, error_code::offset_metadata_too_large);
      continue;
    }
    if (check_partitions) {
      if (auto e = consumer->validate_offset_commit_partition(
              request.member_id, request.generation_id_or_member_epoch, c.topic, c.topic_id,
              p.partition_index)) {
        call.set_error(c, e.code);
        continue;
      }
    }
    offset_and_metadata om;
    om.committed_offset = p.committed_offset;
    om.leader_epoch = p.committed_leader_epoch;
    om.metadata = std::string(metadata);
    om.commit_timestamp_ms = now_ms;
    om.expire_timestamp_ms = expire;
    om.topic_id = c.topic_id;  // Kafka records the topic's id whether committed by name or id
    records.push_back(offset_commit_record(group_id, c.topic, p.partition_index, om));
    accepted.emplace_back(&c, std::move(om));
  }
  if (accepted.empty()) return;
  if (auto e = ctx.write(std::move(records)); e != error_code::none) {
    const error_code mapped = append_error_to_response_error(e);
    for (const auto& [c, om] : accepted) call.set_error(*c, mapped);
    if (created && !sh.offsets.count(group_id)) sh.classic.erase(group_id);
    return;
  }
  auto& offsets =
      transactional ? sh.pending_txn[ctx.txn_producer_id][group_id] : sh.offsets[group_id];
  for (auto& [c, om] : accepted) offsets[{c->topic, c->request->partition_index}] = std::move(om);
}

owned_message<protocol::txn_offset_commit_response> group_coordinator::txn_offset_commit(
    const protocol::txn_offset_commit_request& request, int16_t version, int64_t now_ms,
    std::optional<uint32_t> txn_markers_before) {
  // Below v3 the member fields are absent and keep their defaults (generation -1, member ""):
  // such a commit is a simple group's, as Kafka treats it.
  // The request as the OffsetCommit it resembles (member fields, no retention: v8 by name, v10
  // by topic id for TxnOffsetCommit v6, with its UNKNOWN_TOPIC_ID), its strings borrowed from
  // `request`.
  protocol::offset_commit_request oc;
  oc.group_id = request.group_id;
  oc.generation_id_or_member_epoch = request.generation_id_or_member_epoch;
  oc.member_id = request.member_id;
  oc.group_instance_id = request.group_instance_id;
  for (const auto& t : request.topics) {
    auto& ot = oc.topics.emplace_back();
    ot.name = t.name;
    ot.topic_id = t.topic_id;
    for (const auto& p : t.partitions) {
      auto& op = ot.partitions.emplace_back();
      op.partition_index = p.partition_index;
      op.committed_offset = p.committed_offset;
      op.committed_leader_epoch = p.committed_leader_epoch;
      op.committed_metadata = p.committed_metadata;
    }
  }
  const int16_t as_offset_commit_version = version >= 6 ? 10 : 8;
  offset_commit_call call;
  prepare_offset_commit(oc, as_offset_commit_version, call);
  if (!call.candidates.empty()) {
    std::vector<std::function<void()>> deferred;
    shard& sh = *shard_for(request.group_id);
    {
      std::lock_guard lock(sh.mu);
      run_locked(sh, config_, metadata_, log_, now_ms, deferred, [&](shard& s, group_context& ctx) {
        ctx.txn_producer_id = request.producer_id;
        ctx.txn_producer_epoch = request.producer_epoch;
        ctx.txn_markers_before = txn_markers_before;
        apply_offset_commit(s, ctx, oc, as_offset_commit_version, call);
      });
    }
    for (auto& d : deferred) d();
  }
  owned_message<protocol::txn_offset_commit_response> out;
  for (const auto& t : call.out.message.topics) {
    auto& rt = out.message.topics.emplace_back();
    rt.name = out.arena.keep(t.name);
    rt.topic_id = t.topic_id;
    for (const auto& p : t.partitions) {
      auto& rp = rt.partitions.emplace_back();
      rp.partition_index = p.partition_index;
      rp.error_code = p.error_code;
    }
  }
  return out;
}

void group_coordinator::complete_txn(int32_t partition, int64_t producer_id, bool commit) {
  if (partition < 0 || static_cast<size_t>(partition) >= shards_.size()) return;
  shard& s = *shards_[static_cast<size_t>(partition)];
  std::lock_guard lock(s.mu);
  complete_pending(s, producer_id, commit);
}

int32_t group_coordinator::partition_for_group(std::string_view group_id) const {
  return partition_for(group_id, static_cast<int32_t>(shards_.size()));
}

owned_message<protocol::offset_commit_response> group_coordinator::offset_commit(
    const protocol::offset_commit_request& request, int16_t version, int64_t now_ms) {
  offset_commit_call call;
  prepare_offset_commit(request, version, call);
  // An empty group id is a group like any other here (Kafka refuses it only on JoinGroup,
  // SyncGroup, Heartbeat and LeaveGroup).
  if (call.candidates.empty()) return std::move(call.out);
  run_in_shard(
      *shard_for(request.group_id), config_, metadata_, log_, now_ms,
      [&](shard& sh, group_context& ctx) { apply_offset_commit(sh, ctx, request, version, call); });
  return std::move(call.out);
}

std::optional<owned_message<protocol::offset_commit_response>> group_coordinator::try_offset_commit(
    const protocol::offset_commit_request& request, int16_t version, int64_t now_ms) {
  offset_commit_call call;
  prepare_offset_commit(request, version, call);
  if (call.candidates.empty()) return std::move(call.out);
  shard& s = *shard_for(request.group_id);
  if (!s.mu.try_lock()) return std::nullopt;
  std::vector<std::function<void()>> deferred;
  run_locked(s, config_, metadata_, log_, now_ms, deferred, [&](shard& sh, group_context& ctx) {
    apply_offset_commit(sh, ctx, request, version, call);
  });
  s.mu.unlock();
  for (auto& d : deferred) d();
  return std::move(call.out);
}

void group_coordinator::offset_commit_handed_off(
    std::shared_ptr<const protocol::offset_commit_request> request, int16_t version, int64_t now_ms,
    offset_commit_callback done) {
  auto call = std::make_shared<offset_commit_call>();
  prepare_offset_commit(*request, version, *call);
  if (call->candidates.empty()) {
    done(std::move(call->out));
    return;
  }
  shard& s = *shard_for(request->group_id);
  s.mu.run_or_hand_off([this, &s, request = std::move(request), version, now_ms, call,
                        done = std::move(done)](std::vector<std::function<void()>>& after) {
    run_locked(s, config_, metadata_, log_, now_ms, after, [&](shard& sh, group_context& ctx) {
      apply_offset_commit(sh, ctx, *request, version, *call);
    });
    after.push_back([call, done] { done(std::move(call->out)); });
  });
}

owned_message<protocol::offset_fetch_response> group_coordinator::offset_fetch(
    const protocol::offset_fetch_request& request, int16_t version, int64_t now_ms) {
  using resp = protocol::offset_fetch_response;
  owned_message<resp> out;
  struct topic_ask {
    std::string name;
    protocol::uuid id{};
    std::vector<int32_t> partitions;
    bool unknown_id = false;  // v10: no topic has this id
  };
  struct group_ask {
    std::string group_id;
    std::optional<std::vector<topic_ask>> topics;  // nullopt: all
    std::optional<std::string_view> member_id;     // v9+, KIP-848 members
    int32_t member_epoch = -1;
  };
  std::vector<group_ask> asks;
  if (version < 8) {
    group_ask g{std::string(request.group_id), std::nullopt, std::nullopt, -1};
    if (request.topics) {
      g.topics.emplace();
      for (const auto& t : *request.topics) {
        g.topics->push_back(
            {std::string(t.name), {}, {t.partition_indexes.begin(), t.partition_indexes.end()}});
      }
    }
    asks.push_back(std::move(g));
  } else {
    for (const auto& rg : request.groups) {
      group_ask g{std::string(rg.group_id), std::nullopt, std::nullopt, -1};
      if (version >= 9) {
        g.member_id = rg.member_id;
        g.member_epoch = rg.member_epoch;
      }
      if (rg.topics) {
        g.topics.emplace();
        for (const auto& t : *rg.topics) {
          topic_ask ta{std::string(t.name),
                       t.topic_id,
                       {t.partition_indexes.begin(), t.partition_indexes.end()}};
          if (version >= 10) {
            auto desc = metadata_.topic_by_id(from_wire(t.topic_id));
            ta.name = desc ? desc->name : std::string();
            ta.unknown_id = !desc;
          }
          g.topics->push_back(std::move(ta));
        }
      }
      asks.push_back(std::move(g));
    }
  }

  for (const auto& ask : asks) {
    resp::offset_fetch_response_group rg;
    rg.group_id = out.arena.keep(ask.group_id);
    error_code group_error = error_code::none;
    {
      shard& s = *shard_for(ask.group_id);
      group_error = run_in_shard(
          s, config_, metadata_, log_, now_ms, [&](shard& sh, group_context&) -> error_code {
            if (!sh.loaded) return not_loaded_error(sh);
            if (auto cg = sh.consumer.find(ask.group_id); cg != sh.consumer.end()) {
              if (auto e = cg->second->validate_offset_fetch(ask.member_id, ask.member_epoch)) {
                return e.code;
              }
            }
            auto offsets_it = sh.offsets.find(ask.group_id);
            const topic_offsets* offsets =
                offsets_it == sh.offsets.end() ? nullptr : &offsets_it->second;
            auto add_partition = [&](resp::offset_fetch_response_topics& t, int32_t partition,
                                     const offset_and_metadata* om) {
              resp::offset_fetch_response_partitions p;
              p.partition_index = partition;
              p.error_code = 0;
              if (request.require_stable &&
                  has_pending_offset(sh, ask.group_id, std::string(t.name), partition)) {
                om = nullptr;  // Kafka answers -1, no epoch and "" beside the error
                p.error_code = static_cast<int16_t>(error_code::unstable_offset_commit);
              }
              p.committed_offset = om ? om->committed_offset : -1;
              p.committed_leader_epoch = om ? om->leader_epoch : -1;
              p.metadata = out.arena.keep(om ? om->metadata : std::string());
              t.partitions.push_back(p);
            };
            if (!ask.topics) {
              if (offsets == nullptr) return error_code::none;
              const std::string* current = nullptr;
              for (const auto& [tp, om] : *offsets) {
                if (current == nullptr || *current != tp.first) {
                  resp::offset_fetch_response_topics t;
                  t.name = out.arena.keep(tp.first);
                  if (version >= 10) {
                    if (auto desc = metadata_.topic(tp.first)) t.topic_id = to_wire(desc->id);
                  }
                  rg.topics.push_back(std::move(t));
                  current = &tp.first;
                }
                add_partition(rg.topics.back(), tp.second, &om);
              }
              return error_code::none;
            }
            for (const auto& ta : *ask.topics) {
              resp::offset_fetch_response_topics t;
              t.name = out.arena.keep(ta.name);
              t.topic_id = ta.id;
              for (int32_t p : ta.partitions) {
                if (ta.unknown_id) {
                  add_partition(t, p, nullptr);
                  t.partitions.back().error_code =
                      static_cast<int16_t>(error_code::unknown_topic_id);
                  continue;
                }
                const offset_and_metadata* om = nullptr;
                if (offsets != nullptr) {
                  auto f = offsets->find({ta.name, p});
                  if (f != offsets->end()) om = &f->second;
                }
                add_partition(t, p, om);
              }
              rg.topics.push_back(std::move(t));
            }
            return error_code::none;
          });
    }
    rg.error_code = static_cast<int16_t>(group_error);
    out.message.groups.push_back(std::move(rg));
  }

  if (version < 8) {
    // The single-group layout: topics and partitions at the top, the group error beside them
    // (v2+) or in every partition (v0-1).
    auto& g = out.message.groups.front();
    out.message.error_code = g.error_code;
    for (auto& t : g.topics) {
      resp::offset_fetch_response_topic ot;
      ot.name = t.name;
      for (auto& p : t.partitions) {
        resp::offset_fetch_response_partition op;
        op.partition_index = p.partition_index;
        op.committed_offset = p.committed_offset;
        op.committed_leader_epoch = p.committed_leader_epoch;
        op.metadata = p.metadata;
        op.error_code = version < 2 && g.error_code != 0 ? g.error_code : p.error_code;
        ot.partitions.push_back(op);
      }
      out.message.topics.push_back(std::move(ot));
    }
    out.message.groups.clear();
  }
  return out;
}

owned_message<protocol::offset_delete_response> group_coordinator::offset_delete(
    const protocol::offset_delete_request& request, int16_t version, int64_t now_ms) {
  (void)version;
  using resp = protocol::offset_delete_response;
  owned_message<resp> out;
  if (!valid_group_id(request.group_id)) {
    out.message.error_code = static_cast<int16_t>(error_code::invalid_group_id);
    return out;
  }
  shard& s = *shard_for(request.group_id);
  const error_code e =
      run_in_shard(s, config_, metadata_, log_, now_ms, [&](shard& sh, group_context& ctx) {
        if (!sh.loaded) return not_loaded_error(sh);
        const std::string group_id(request.group_id);
        auto it = sh.classic.find(group_id);
        auto cg = sh.consumer.find(group_id);
        classic_group* classic = it == sh.classic.end() ? nullptr : it->second.get();
        const consumer_group* consumer = cg == sh.consumer.end() ? nullptr : cg->second.get();
        if (classic == nullptr && consumer == nullptr) return error_code::group_id_not_found;
        if (classic != nullptr) {
          if (auto v = classic->validate_offset_delete(); v != error_code::none) return v;
        }
        auto subscribed_to = [&](std::string_view topic) {
          return classic != nullptr ? classic->is_subscribed_to(topic)
                                    : consumer->is_subscribed_to(topic);
        };
        auto& offsets = sh.offsets[group_id];
        std::vector<coordinator_record> records;
        std::vector<std::pair<std::string, int32_t>> deleted;
        for (const auto& t : request.topics) {
          // Kafka's response is keyed by topic name: a topic named twice is answered once.
          auto existing = std::find_if(out.message.topics.begin(), out.message.topics.end(),
                                       [&](const auto& rt) { return rt.name == t.name; });
          if (existing == out.message.topics.end()) {
            resp::offset_delete_response_topic rt;
            rt.name = out.arena.keep(t.name);
            out.message.topics.push_back(std::move(rt));
            existing = out.message.topics.end() - 1;
          }
          const auto desc = metadata_.topic(t.name);
          const bool subscribed = subscribed_to(t.name);
          for (const auto& p : t.partitions) {
            resp::offset_delete_response_partition rp;
            rp.partition_index = p.partition_index;
            if (!desc || p.partition_index < 0 || p.partition_index >= desc->partitions) {
              rp.error_code = static_cast<int16_t>(error_code::unknown_topic_or_partition);
            } else {
              rp.error_code = static_cast<int16_t>(
                  subscribed ? error_code::group_subscribed_to_topic : error_code::none);
              if (!subscribed && offsets.count({std::string(t.name), p.partition_index})) {
                records.push_back(offset_commit_tombstone(group_id, t.name, p.partition_index));
                deleted.emplace_back(std::string(t.name), p.partition_index);
              }
            }
            auto& parts = existing->partitions;
            auto same = std::find_if(parts.begin(), parts.end(), [&](const auto& x) {
              return x.partition_index == rp.partition_index;
            });
            if (same == parts.end()) {
              parts.push_back(rp);
            } else {
              *same = rp;
            }
          }
        }
        if (auto w = ctx.write(std::move(records)); w != error_code::none) {
          out.message.topics.clear();
          return append_error_to_response_error(w);
        }
        for (const auto& d : deleted) offsets.erase(d);
        if (offsets.empty()) sh.offsets.erase(group_id);
        return error_code::none;
      });
  out.message.error_code = static_cast<int16_t>(e);
  return out;
}

// --- Administration ----------------------------------------------------------------------------

bool group_coordinator::has_group(std::string_view group_id) {
  shard& s = *shard_for(group_id);
  std::lock_guard lock(s.mu);
  return s.classic.find(group_id) != s.classic.end() ||
         s.consumer.find(group_id) != s.consumer.end();
}

owned_message<protocol::describe_groups_response> group_coordinator::describe_groups(
    const protocol::describe_groups_request& request, int16_t version) {
  using resp = protocol::describe_groups_response;
  owned_message<resp> out;
  for (std::string_view id : request.groups) {
    resp::described_group d;
    d.group_id = out.arena.keep(id);
    d.group_state = "Dead";
    d.protocol_type = "";
    d.protocol_data = "";
    // Without an authorizer Kafka reports every operation a group supports: READ 3, DELETE 6,
    // DESCRIBE 8, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11 (3400); a group in error keeps the
    // default.
    const int32_t ops = request.include_authorized_operations
                            ? (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11)
                            : d.authorized_operations;
    shard& s = *shard_for(id);
    std::lock_guard lock(s.mu);
    if (!s.loaded) {
      d.error_code = static_cast<int16_t>(not_loaded_error(s));
    } else if (auto it = s.classic.find(id); it != s.classic.end()) {
      it->second->describe(d, out.arena, version);
      d.authorized_operations = ops;
    } else if (s.consumer.count(id) && version >= 6) {
      d.error_code = static_cast<int16_t>(error_code::group_id_not_found);
      d.error_message = out.arena.keep("Group " + std::string(id) + " is not a classic group.");
    } else if (version >= 6) {
      d.error_code = static_cast<int16_t>(error_code::group_id_not_found);
      d.error_message = out.arena.keep("Group " + std::string(id) + " not found.");
    }
    // Every group answered without an error carries the operations (v3-v5 report an unknown
    // group as Dead, error 0, with them too).
    if (d.error_code == 0) d.authorized_operations = ops;
    out.message.groups.push_back(std::move(d));
  }
  return out;
}

std::vector<group_coordinator::committed_offset> group_coordinator::committed_offsets() {
  std::vector<committed_offset> out;
  for (auto& sp : shards_) {
    shard& s = *sp;
    std::lock_guard lock(s.mu);
    if (s.unloaded || !s.loaded) continue;
    for (const auto& [group, offsets] : s.offsets) {
      for (const auto& [tp, om] : offsets) {
        out.push_back({group, tp.first, tp.second, om.committed_offset});
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const committed_offset& a, const committed_offset& b) {
    return std::tie(a.group, a.topic, a.partition) < std::tie(b.group, b.topic, b.partition);
  });
  return out;
}

std::vector<group_coordinator::group_member_count> group_coordinator::group_member_counts() {
  std::vector<group_member_count> out;
  for (auto& sp : shards_) {
    shard& s = *sp;
    std::lock_guard lock(s.mu);
    if (s.unloaded || !s.loaded) continue;
    for (const auto& [id, g] : s.classic) {
      if (g->state() == classic_group_state::dead) continue;
      out.push_back({id, static_cast<int32_t>(g->members().size())});
    }
    for (const auto& [id, g] : s.consumer) {
      out.push_back({id, static_cast<int32_t>(g->members().size())});
    }
  }
  std::sort(out.begin(), out.end(), [](const group_member_count& a, const group_member_count& b) {
    return a.group < b.group;
  });
  return out;
}

owned_message<protocol::list_groups_response> group_coordinator::list_groups(
    const protocol::list_groups_request& request, int16_t version) {
  using resp = protocol::list_groups_response;
  owned_message<resp> out;
  std::set<std::string> states;
  std::set<std::string> types;
  if (version >= 4) {
    for (auto st : request.states_filter) states.insert(to_lower(st));
  }
  if (version >= 5) {
    for (auto t : request.types_filter) types.insert(to_lower(t));
  }
  for (auto& sp : shards_) {
    shard& s = *sp;
    std::lock_guard lock(s.mu);
    if (s.unloaded) continue;  // no __consumer_offsets: no groups
    if (!s.loaded) {
      out.message.error_code = static_cast<int16_t>(error_code::coordinator_load_in_progress);
      continue;
    }
    for (const auto& [id, g] : s.classic) {
      if (g->state() == classic_group_state::dead) continue;
      const std::string_view state = state_name(g->state());
      if (!states.empty() && !states.count(to_lower(state))) continue;
      if (!types.empty() && !types.count("classic")) continue;
      resp::listed_group lg;
      lg.group_id = out.arena.keep(id);
      lg.protocol_type = out.arena.keep(g->protocol_type().value_or(""));
      lg.group_state = state;
      lg.group_type = "classic";
      out.message.groups.push_back(lg);
    }
    for (const auto& [id, g] : s.consumer) {
      const std::string_view state = g->state_name();
      if (!states.empty() && !states.count(to_lower(state))) continue;
      if (!types.empty() && !types.count("consumer")) continue;
      resp::listed_group lg;
      lg.group_id = out.arena.keep(id);
      lg.protocol_type = "consumer";
      lg.group_state = state;
      lg.group_type = "consumer";
      out.message.groups.push_back(lg);
    }
  }
  return out;
}

owned_message<protocol::delete_groups_response> group_coordinator::delete_groups(
    const protocol::delete_groups_request& request, int16_t version, int64_t now_ms) {
  (void)version;
  using resp = protocol::delete_groups_response;
  owned_message<resp> out;
  for (std::string_view id : request.groups_names) {
    resp::deletable_group_result r;
    r.group_id = out.arena.keep(id);
    error_code e = error_code::none;
    {
      shard& s = *shard_for(id);
      e = run_in_shard(s, config_, metadata_, log_, now_ms, [&](shard& sh, group_context& ctx) {
        if (!sh.loaded) return not_loaded_error(sh);
        auto it = sh.classic.find(id);
        auto cg = sh.consumer.find(id);
        if (it == sh.classic.end() && cg == sh.consumer.end()) {
          return error_code::group_id_not_found;
        }
        if (it != sh.classic.end()) {
          if (auto v = it->second->validate_delete_group(); v != error_code::none) return v;
        } else if (auto v = cg->second->validate_delete()) {
          return v.code;
        }
        const std::string group_id(id);
        std::vector<coordinator_record> records;
        if (auto o = sh.offsets.find(group_id); o != sh.offsets.end()) {
          for (const auto& [tp, om] : o->second) {
            records.push_back(offset_commit_tombstone(group_id, tp.first, tp.second));
          }
        }
        if (it != sh.classic.end()) {
          records.push_back(group_metadata_tombstone(group_id));
        } else {
          cg->second->delete_records(records);
        }
        if (auto w = ctx.write(std::move(records)); w != error_code::none) {
          return append_error_to_response_error(w);
        }
        if (it != sh.classic.end()) {
          it->second->mark_dead(ctx);
          sh.classic.erase(it);
        } else {
          sh.consumer.erase(cg);
        }
        sh.offsets.erase(group_id);
        return error_code::none;
      });
    }
    r.error_code = static_cast<int16_t>(e);
    out.message.results.push_back(r);
  }
  return out;
}

// --- KIP-848 -----------------------------------------------------------------------------------

owned_message<protocol::consumer_group_heartbeat_response>
group_coordinator::consumer_group_heartbeat(
    const protocol::consumer_group_heartbeat_request& request, int16_t version,
    const client_info& client, int64_t now_ms) {
  if (auto e = consumer_group::validate_heartbeat(request, version, config_)) {
    return consumer_group::error_response(e);
  }
  shard& s = *shard_for(request.group_id);
  return run_in_shard(
      s, config_, metadata_, log_, now_ms,
      [&](shard& sh,
          group_context& ctx) -> owned_message<protocol::consumer_group_heartbeat_response> {
        if (!sh.loaded) return consumer_group::error_response({not_loaded_error(sh), ""});
        const std::string group_id(request.group_id);
        if (auto it = sh.classic.find(group_id); it != sh.classic.end()) {
          classic_group& classic = *it->second;
          if (!classic.is_empty() || request.member_epoch != 0) {
            auto not_upgraded = [&](std::string why) {
              return consumer_group::error_response(
                  {error_code::group_id_not_found, "Cannot upgrade classic group " + group_id +
                                                       " to consumer group because " + why + "."});
            };
            // Kafka's getOrMaybeCreateConsumerGroup and validateOnlineUpgrade.
            if (request.member_epoch != 0) {
              return consumer_group::error_response(
                  {error_code::group_id_not_found,
                   "Group " + group_id + " is not a consumer group."});
            }
            if (!online_upgrade_enabled(config_)) {
              return not_upgraded("the online upgrade is disabled");
            }
            if (!classic.uses_consumer_protocol()) {
              return not_upgraded("the group does not use the consumer embedded protocol");
            }
            if (classic.members().size() >
                static_cast<size_t>(std::max(config_.group_consumer_max_size, 0))) {
              return not_upgraded("the group size exceeds the consumer group maximum size");
            }
            auto converted = consumer_group::from_classic_group(classic, metadata_);
            if (!converted) {
              return consumer_group::error_response(
                  {error_code::group_id_not_found,
                   "Cannot upgrade the classic group " + group_id +
                       " to consumer group because the embedded consumer protocol is "
                       "malformed."});
            }
            // The heartbeat that joins writes the conversion's records with its own; if it
            // fails nothing is written and the group stays classic.
            auto out = (*converted)->heartbeat(request, version, client, ctx);
            if (out.message.error_code != 0) return out;
            // Waiting classic requests are told to rejoin (Kafka's completeAllJoinFutures
            // and completeAllSyncFutures with REBALANCE_IN_PROGRESS).
            classic.fail_waiting(error_code::rebalance_in_progress, ctx);
            sh.classic.erase(it);
            sh.consumer[group_id] = std::move(*converted);
            return out;
          }
          // An empty classic group becomes a consumer group (Kafka's
          // maybeDeleteEmptyClassicGroup); its committed offsets stay.
          if (auto e = ctx.write({group_metadata_tombstone(group_id)}); e != error_code::none) {
            return consumer_group::error_response({append_error_to_response_error(e), ""});
          }
          classic.mark_dead(ctx);
          sh.classic.erase(it);
        }
        auto cg = sh.consumer.find(group_id);
        if (cg == sh.consumer.end()) {
          if (request.member_epoch != 0) {
            return consumer_group::error_response(
                consumer_group::not_found_error(group_id, request.member_epoch));
          }
          cg = sh.consumer.emplace(group_id, std::make_unique<consumer_group>(group_id)).first;
        }
        // The last member of the consumer protocol leaving a group of classic members
        // downgrades it (Kafka's consumerGroupFenceMember with
        // validateOnlineDowngradeWithFencedMember).
        if (auto leaving = cg->second->leaving_member(request);
            leaving && cg->second->validate_online_downgrade(*leaving, config_)) {
          if (auto e = downgrade(sh, group_id, *leaving, ctx); e != error_code::none) {
            return consumer_group::error_response({e, ""});
          }
          owned_message<protocol::consumer_group_heartbeat_response> left;
          left.message.member_id = left.arena.keep(request.member_id);
          left.message.member_epoch = request.member_epoch;
          return left;
        }
        auto out = cg->second->heartbeat(request, version, client, ctx);
        // A group whose first heartbeat failed was never created; a deleted one is gone.
        if (cg->second->pristine() || cg->second->dead()) sh.consumer.erase(cg);
        return out;
      });
}

owned_message<protocol::consumer_group_describe_response>
group_coordinator::consumer_group_describe(const protocol::consumer_group_describe_request& request,
                                           int16_t version) {
  using resp = protocol::consumer_group_describe_response;
  owned_message<resp> out;
  for (std::string_view id : request.group_ids) {
    resp::described_group d;
    d.group_id = out.arena.keep(id);
    // Without an authorizer Kafka reports every operation a group supports: READ 3, DELETE 6,
    // DESCRIBE 8, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11 (3400); a group in error keeps the
    // default.
    const int32_t ops = request.include_authorized_operations
                            ? (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11)
                            : d.authorized_operations;
    if (!valid_group_id(id)) {
      d.error_code = static_cast<int16_t>(error_code::invalid_group_id);
      out.message.groups.push_back(std::move(d));
      continue;
    }
    shard& s = *shard_for(id);
    std::lock_guard lock(s.mu);
    if (!s.loaded) {
      d.error_code = static_cast<int16_t>(not_loaded_error(s));
    } else if (auto cg = s.consumer.find(id); cg != s.consumer.end()) {
      cg->second->describe(d, out.arena, version, config_, metadata_);
      d.authorized_operations = ops;
    } else if (s.classic.count(id)) {
      d.error_code = static_cast<int16_t>(error_code::group_id_not_found);
      d.error_message = out.arena.keep("Group " + std::string(id) + " is not a consumer group.");
    } else {
      d.error_code = static_cast<int16_t>(error_code::group_id_not_found);
      d.error_message = out.arena.keep("Group " + std::string(id) + " not found.");
    }
    out.message.groups.push_back(std::move(d));
  }
  return out;
}

// --- Timers --------------------------------------------------------------------------------------

void group_coordinator::poll(int64_t now_ms) {
  if (!loaded()) return;
  const bool expire = now_ms - last_expiry_check_ms_ >= config_.offsets_retention_check_interval_ms;
  if (expire) last_expiry_check_ms_ = now_ms;
  const int64_t retention_ms = config_.offsets_retention_minutes * 60 * 1000;
  for (auto& sp : shards_) {
    run_in_shard(*sp, config_, metadata_, log_, now_ms, [&](shard& sh, group_context& ctx) {
      for (auto& [id, g] : sh.classic) g->poll(ctx);
      std::vector<std::pair<std::string, std::string>> downgrades;  // group, leaving member
      for (auto& [id, g] : sh.consumer) {
        if (auto leaving = g->poll(ctx)) downgrades.emplace_back(id, *leaving);
      }
      for (const auto& [id, leaving] : downgrades) (void)downgrade(sh, id, leaving, ctx);
      if (!expire) return;
      // A consumer group's offsets expire by their commit time, for topics it does not
      // subscribe to (Kafka's ConsumerGroup.offsetExpirationCondition); an empty group with no
      // offsets left is deleted.
      std::vector<std::string> empty_consumers;
      for (auto& [id, g] : sh.consumer) {
        auto o = sh.offsets.find(id);
        std::vector<coordinator_record> records;
        std::vector<std::pair<std::string, int32_t>> gone;
        bool all_expired = true;
        if (o != sh.offsets.end()) {
          for (const auto& [tp, om] : o->second) {
            const bool expired =
                !g->is_subscribed_to(tp.first) &&
                (om.expire_timestamp_ms ? now_ms >= *om.expire_timestamp_ms
                                        : om.commit_timestamp_ms <= now_ms - retention_ms);
            if (expired) {
              records.push_back(offset_commit_tombstone(id, tp.first, tp.second));
              gone.push_back(tp);
            } else {
              all_expired = false;
            }
          }
        }
        const bool remove = all_expired && g->empty();
        if (remove) g->delete_records(records);
        if (records.empty()) continue;
        if (ctx.write(std::move(records)) != error_code::none) continue;
        if (o != sh.offsets.end()) {
          for (const auto& tp : gone) o->second.erase(tp);
          if (o->second.empty()) sh.offsets.erase(o);
        }
        if (remove) empty_consumers.push_back(id);
      }
      for (const auto& id : empty_consumers) sh.consumer.erase(id);
      // Offset expiry (Kafka's cleanupGroupMetadata): offsets of topics the group does not
      // subscribe to, once retention has passed since the group emptied (or since the commit).
      std::vector<std::string> empty_groups;
      for (auto& [id, g] : sh.classic) {
        auto o = sh.offsets.find(id);
        bool all_expired = true;
        std::vector<coordinator_record> records;
        std::vector<std::pair<std::string, int32_t>> gone;
        if (o != sh.offsets.end()) {
          for (const auto& [tp, om] : o->second) {
            auto base = g->is_subscribed_to(tp.first)
                            ? std::nullopt
                            : g->offset_expiry_base(om.commit_timestamp_ms);
            const bool expired = base && (om.expire_timestamp_ms ? now_ms >= *om.expire_timestamp_ms
                                                                 : *base <= now_ms - retention_ms);
            if (expired) {
              records.push_back(offset_commit_tombstone(id, tp.first, tp.second));
              gone.push_back(tp);
            } else {
              all_expired = false;
            }
          }
        }
        if (all_expired && g->is_empty()) {
          records.push_back(group_metadata_tombstone(id));
          empty_groups.push_back(id);
        }
        if (records.empty()) continue;
        if (ctx.write(std::move(records)) != error_code::none) {
          if (all_expired && g->is_empty()) empty_groups.pop_back();
          continue;
        }
        if (o != sh.offsets.end()) {
          for (const auto& tp : gone) o->second.erase(tp);
          if (o->second.empty()) sh.offsets.erase(o);
        }
      }
      for (const auto& id : empty_groups) {
        sh.classic[id]->mark_dead(ctx);
        sh.classic.erase(id);
      }
    });
  }
}

void group_coordinator::shutdown(int64_t now_ms) {
  shut_down_.store(true, std::memory_order_release);
  for (auto& sp : shards_) {
    run_in_shard(*sp, config_, metadata_, log_, now_ms, [&](shard& sh, group_context& ctx) {
      for (auto& [id, g] : sh.classic) g->fail_waiting(error_code::not_coordinator, ctx);
    });
  }
}

void group_coordinator::on_topics_deleted(const std::vector<std::string>& topics, int64_t now_ms) {
  const std::set<std::string> deleted(topics.begin(), topics.end());
  const bool offsets_deleted = deleted.count(std::string(offsets_topic_name)) > 0;
  for (auto& sp : shards_) {
    run_in_shard(*sp, config_, metadata_, log_, now_ms, [&](shard& sh, group_context& ctx) {
      if (offsets_deleted) {
        // The coordinator's partitions are gone (Kafka's onResignation for each): waiting
        // requests get NOT_COORDINATOR and the groups and their offsets are dropped, since
        // nothing holds them any more.
        for (auto& [id, g] : sh.classic) g->fail_waiting(error_code::not_coordinator, ctx);
        sh.classic.clear();
        sh.consumer.clear();
        sh.offsets.clear();
        sh.loaded = false;
        sh.unloaded = true;
        return;
      }
      std::vector<coordinator_record> records;
      for (auto& [group_id, offsets] : sh.offsets) {
        for (const auto& [tp, om] : offsets) {
          if (deleted.count(tp.first))
            records.push_back(offset_commit_tombstone(group_id, tp.first, tp.second));
        }
      }
      if (records.empty()) return;
      (void)ctx.write(std::move(records));
      for (auto& [group_id, offsets] : sh.offsets) {
        std::erase_if(offsets, [&](const auto& kv) { return deleted.count(kv.first.first) > 0; });
      }
      std::erase_if(sh.offsets, [](const auto& kv) { return kv.second.empty(); });
    });
  }
  if (offsets_deleted) offsets_topic_deleted_.store(true, std::memory_order_release);
}

}  // namespace tarn::coordinator
