// Encoding and decoding of metadata log entries (see metadata_records.h, docs/metadata.md).
#include "cluster/metadata_records.h"

#include <bit>
#include <cstring>

#include "record/crc32c.h"

namespace tarn::cluster {
namespace {

constexpr int16_t key_topic = 2, key_partition = 3, key_config = 4, key_acl = 6, key_remove_acl = 7,
                  key_remove_topic = 9, key_feature_level = 12, key_client_quota = 14,
                  key_user_scram_credential = 11, key_remove_user_scram_credential = 22;

class entry_writer {
 public:
  void u8(uint8_t v) { out_.push_back(v); }
  void i16(int16_t v) { be(static_cast<uint16_t>(v), 2); }
  void i32(int32_t v) { be(static_cast<uint32_t>(v), 4); }
  void i64(int64_t v) { be(static_cast<uint64_t>(v), 8); }
  void uuid(const storage::uuid& u) {
    i64(static_cast<int64_t>(u.most_significant_bits));
    i64(static_cast<int64_t>(u.least_significant_bits));
  }
  void str(const std::string& s) {
    i32(static_cast<int32_t>(s.size()));
    out_.insert(out_.end(), s.begin(), s.end());
  }
  void nullable_str(const std::optional<std::string>& s) {
    if (!s) {
      i32(-1);
    } else {
      str(*s);
    }
  }
  void blob(const std::vector<uint8_t>& b) {
    i32(static_cast<int32_t>(b.size()));
    out_.insert(out_.end(), b.begin(), b.end());
  }
  std::vector<uint8_t>& bytes() { return out_; }

 private:
  void be(uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t> out_;
};

class entry_reader {
 public:
  explicit entry_reader(std::span<const uint8_t> d) : d_(d) {}
  bool ok() const { return ok_; }
  bool done() const { return pos_ == d_.size(); }
  uint8_t u8() { return static_cast<uint8_t>(be(1)); }
  int16_t i16() { return static_cast<int16_t>(be(2)); }
  int32_t i32() { return static_cast<int32_t>(be(4)); }
  int64_t i64() { return static_cast<int64_t>(be(8)); }
  storage::uuid uuid() {
    storage::uuid u;
    u.most_significant_bits = be(8);
    u.least_significant_bits = be(8);
    return u;
  }
  std::optional<std::string> nullable_str() {
    int32_t n = i32();
    if (!ok_ || n == -1) return std::nullopt;
    if (n < 0 || static_cast<size_t>(n) > d_.size() - pos_) {
      ok_ = false;
      return std::nullopt;
    }
    std::string s(reinterpret_cast<const char*>(d_.data() + pos_), static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return s;
  }
  std::string str() {
    auto s = nullable_str();
    if (!s) ok_ = false;
    return s ? std::move(*s) : std::string();
  }
  std::vector<uint8_t> blob() {
    std::string s = str();
    return {s.begin(), s.end()};
  }
  size_t left() const { return d_.size() - pos_; }
  void fail() { ok_ = false; }

 private:
  uint64_t be(int n) {
    if (!ok_ || d_.size() - pos_ < static_cast<size_t>(n)) {
      ok_ = false;
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v = (v << 8) | d_[pos_++];
    return v;
  }
  std::span<const uint8_t> d_;
  size_t pos_ = 0;
  bool ok_ = true;
};

void encode_record(entry_writer& w, const metadata_record& record) {
  std::visit(
      [&](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, topic_record>) {
          w.i16(key_topic);
          w.i16(0);
          w.str(r.name);
          w.uuid(r.topic_id);
        } else if constexpr (std::is_same_v<T, partition_record>) {
          w.i16(key_partition);
          w.i16(r.leader >= 0 ? 1 : 0);
          w.i32(r.partition_id);
          w.uuid(r.topic_id);
          if (r.leader >= 0) w.i32(r.leader);
        } else if constexpr (std::is_same_v<T, config_record>) {
          w.i16(key_config);
          w.i16(0);
          w.u8(static_cast<uint8_t>(r.resource_type));
          w.str(r.resource_name);
          w.str(r.name);
          w.nullable_str(r.value);
        } else if constexpr (std::is_same_v<T, remove_topic_record>) {
          w.i16(key_remove_topic);
          w.i16(0);
          w.uuid(r.topic_id);
        } else if constexpr (std::is_same_v<T, feature_level_record>) {
          w.i16(key_feature_level);
          w.i16(0);
          w.str(r.name);
          w.i16(r.feature_level);
        } else if constexpr (std::is_same_v<T, user_scram_credential_record>) {
          w.i16(key_user_scram_credential);
          w.i16(0);
          w.str(r.name);
          w.u8(static_cast<uint8_t>(r.mechanism));
          w.blob(r.salt);
          w.blob(r.stored_key);
          w.blob(r.server_key);
          w.i32(r.iterations);
        } else if constexpr (std::is_same_v<T, remove_user_scram_credential_record>) {
          w.i16(key_remove_user_scram_credential);
          w.i16(0);
          w.str(r.name);
          w.u8(static_cast<uint8_t>(r.mechanism));
        } else if constexpr (std::is_same_v<T, access_control_entry_record>) {
          w.i16(key_acl);
          w.i16(0);
          w.uuid(r.id);
          w.u8(static_cast<uint8_t>(r.resource_type));
          w.str(r.resource_name);
          w.u8(static_cast<uint8_t>(r.pattern_type));
          w.str(r.principal);
          w.str(r.host);
          w.u8(static_cast<uint8_t>(r.operation));
          w.u8(static_cast<uint8_t>(r.permission_type));
        } else if constexpr (std::is_same_v<T, remove_access_control_entry_record>) {
          w.i16(key_remove_acl);
          w.i16(0);
          w.uuid(r.id);
        } else {
          static_assert(std::is_same_v<T, client_quota_record>);
          w.i16(key_client_quota);
          w.i16(0);
          w.i32(static_cast<int32_t>(r.entities.size()));
          for (const auto& e : r.entities) {
            w.str(e.entity_type);
            w.nullable_str(e.entity_name);
          }
          w.str(r.key);
          w.i64(static_cast<int64_t>(std::bit_cast<uint64_t>(r.value)));
          w.u8(r.remove ? 1 : 0);
        }
      },
      record);
}

std::optional<metadata_record> decode_record(entry_reader& r) {
  int16_t key = r.i16();
  int16_t version = r.i16();
  // PartitionRecord has a version 1 (with its leader); every other record only version 0.
  if (!r.ok() || version < 0 || version > (key == key_partition ? 1 : 0)) return std::nullopt;
  switch (key) {
    case key_topic: {
      topic_record t;
      t.name = r.str();
      t.topic_id = r.uuid();
      return t;
    }
    case key_partition: {
      partition_record p;
      p.partition_id = r.i32();
      p.topic_id = r.uuid();
      if (version >= 1) p.leader = r.i32();
      return p;
    }
    case key_config: {
      config_record c;
      c.resource_type = static_cast<int8_t>(r.u8());
      c.resource_name = r.str();
      c.name = r.str();
      c.value = r.nullable_str();
      return c;
    }
    case key_remove_topic:
      return remove_topic_record{r.uuid()};
    case key_feature_level: {
      feature_level_record f;
      f.name = r.str();
      f.feature_level = r.i16();
      return f;
    }
    case key_acl: {
      access_control_entry_record a;
      a.id = r.uuid();
      a.resource_type = static_cast<int8_t>(r.u8());
      a.resource_name = r.str();
      a.pattern_type = static_cast<int8_t>(r.u8());
      a.principal = r.str();
      a.host = r.str();
      a.operation = static_cast<int8_t>(r.u8());
      a.permission_type = static_cast<int8_t>(r.u8());
      return a;
    }
    case key_remove_acl:
      return remove_access_control_entry_record{r.uuid()};
    case key_client_quota: {
      client_quota_record q;
      int32_t n = r.i32();
      // each entity takes at least 8 bytes: the count cannot promise more than the bytes left
      if (n < 0 || static_cast<size_t>(n) > r.left() / 8) return std::nullopt;
      for (int32_t i = 0; i < n; ++i) {
        client_quota_record::entity e;
        e.entity_type = r.str();
        e.entity_name = r.nullable_str();
        q.entities.push_back(std::move(e));
      }
      q.key = r.str();
      q.value = std::bit_cast<double>(static_cast<uint64_t>(r.i64()));
      q.remove = r.u8() != 0;
      return q;
    }
    case key_user_scram_credential: {
      user_scram_credential_record s;
      s.name = r.str();
      s.mechanism = static_cast<int8_t>(r.u8());
      s.salt = r.blob();
      s.stored_key = r.blob();
      s.server_key = r.blob();
      s.iterations = r.i32();
      return s;
    }
    case key_remove_user_scram_credential: {
      remove_user_scram_credential_record s;
      s.name = r.str();
      s.mechanism = static_cast<int8_t>(r.u8());
      return s;
    }
    default:
      return std::nullopt;
  }
}

uint32_t load_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

}  // namespace

std::vector<uint8_t> encode_entry(const metadata_entry& entry) {
  entry_writer w;
  w.i32(0);  // length, patched below
  w.i32(0);  // crc, patched below
  w.u8(0);   // version
  w.i64(entry.offset);
  w.i32(static_cast<int32_t>(entry.records.size()));
  for (const auto& r : entry.records) encode_record(w, r);
  std::vector<uint8_t>& out = w.bytes();
  uint32_t length = static_cast<uint32_t>(out.size() - entry_header_bytes);
  uint32_t crc = record::crc32c(std::span<const uint8_t>(out).subspan(entry_header_bytes));
  for (int i = 0; i < 4; ++i) {
    out[i] = static_cast<uint8_t>(length >> (24 - 8 * i));
    out[4 + i] = static_cast<uint8_t>(crc >> (24 - 8 * i));
  }
  return std::move(out);
}

decoded_entry decode_entry(std::span<const uint8_t> data) {
  decoded_entry d;
  if (data.size() < entry_header_bytes) {
    d.status = decode_status::incomplete;
    return d;
  }
  uint32_t length = load_be32(data.data());
  uint32_t crc = load_be32(data.data() + 4);
  if (length > max_entry_bytes || length < 13) {
    d.status = decode_status::corrupt;
    d.message = "entry length " + std::to_string(length) + " out of range";
    return d;
  }
  if (data.size() - entry_header_bytes < length) {
    d.status = decode_status::incomplete;
    return d;
  }
  auto body = data.subspan(entry_header_bytes, length);
  if (record::crc32c(body) != crc) {
    d.status = decode_status::corrupt;
    d.message = "CRC mismatch";
    return d;
  }
  entry_reader r(body);
  uint8_t version = r.u8();
  d.entry.offset = r.i64();
  int32_t count = r.i32();
  // a record is at least 4 bytes (api key, version)
  if (version != 0 || count < 0 || static_cast<size_t>(count) > r.left() / 4) {
    d.status = decode_status::corrupt;
    d.message = "bad entry header";
    return d;
  }
  for (int32_t i = 0; i < count; ++i) {
    auto rec = decode_record(r);
    if (!rec || !r.ok()) {
      d.status = decode_status::corrupt;
      d.message = "bad record " + std::to_string(i);
      return d;
    }
    d.entry.records.push_back(std::move(*rec));
  }
  if (!r.done()) {
    d.status = decode_status::corrupt;
    d.message = "bytes after the last record";
    return d;
  }
  d.bytes = entry_header_bytes + length;
  return d;
}

}  // namespace tarn::cluster
