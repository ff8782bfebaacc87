# A small blocking Kafka wire client for the interop suite: request framing, a schema-driven
# encoder/decoder (classic and flexible versions), and record batch v2 building with CRC-32C.
# The requests the suite sends by hand are described here; the admin APIs' schemas are read
# from schema/ (load_schema).
import gzip
import io
import os
import re
import socket
import struct
import zlib

# --- CRC-32C (Castagnoli), table driven; batches here are small -----------------------------

_CRC32C_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC32C_TABLE.append(_c)


def crc32c(data):
    crc = 0xFFFFFFFF
    table = _CRC32C_TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


# --- varints --------------------------------------------------------------------------------


def uvarint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def varint(n):  # zigzag, 64-bit
    return uvarint((n << 1) ^ (n >> 63))


def read_uvarint(buf, pos):
    shift = result = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


# --- record batch v2 ------------------------------------------------------------------------

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def encode_record(offset_delta, timestamp_delta, key, value, headers=()):
    body = bytearray()
    body += b"\x00"  # attributes
    body += varint(timestamp_delta)
    body += varint(offset_delta)
    if key is None:
        body += varint(-1)
    else:
        body += varint(len(key)) + key
    if value is None:
        body += varint(-1)
    else:
        body += varint(len(value)) + value
    body += varint(len(headers))
    for hk, hv in headers:
        hk = hk.encode()
        body += varint(len(hk)) + hk
        if hv is None:
            body += varint(-1)
        else:
            body += varint(len(hv)) + hv
    return varint(len(body)) + bytes(body)


def build_batch(records, base_timestamp, base_offset=0, codec="none", producer_id=-1,
                producer_epoch=-1, base_sequence=-1, partition_leader_epoch=-1,
                timestamp_deltas=None):
    """records: list of (key bytes|None, value bytes|None, headers list). Fixed timestamps:
    record i has base_timestamp + timestamp_deltas[i] (0 by default)."""
    deltas = timestamp_deltas or [0] * len(records)
    raw = b"".join(
        encode_record(i, deltas[i], k, v, h) for i, (k, v, h) in enumerate(records))
    if codec == "gzip":
        out = io.BytesIO()
        with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as g:  # mtime 0: same bytes each run
            g.write(raw)
        raw = out.getvalue()
    elif codec != "none":
        raise ValueError("hand-built batches support none and gzip only")
    attributes = CODECS[codec]
    max_ts = base_timestamp + max(deltas)
    after_crc = struct.pack(">hiqqqhii", attributes, len(records) - 1, base_timestamp, max_ts,
                            producer_id, producer_epoch, base_sequence, len(records)) + raw
    crc = crc32c(after_crc)
    after_length = struct.pack(">ibI", partition_leader_epoch, 2, crc) + after_crc
    return struct.pack(">qi", base_offset, len(after_length)) + after_length


def batch_crc(batch):
    return struct.unpack_from(">I", batch, 17)[0]


# --- schema-driven encoding -----------------------------------------------------------------
# A schema is a list of (name, type, min_version, max_version). Types: int8 int16 int32 int64
# uint16 uint32 float64 bool string nstring bytes records uuid, or ("array", schema | scalar
# type) / ("narray", ...), ("struct", schema) for a nested struct and ("nstruct", schema) for a
# nullable one (int8 marker: -1 null, 1 then the struct; docs/schema-format.md).


class Codec:
    def __init__(self, flexible):
        self.flexible = flexible

    # encoding
    def enc(self, schema, obj, version):
        out = bytearray()
        for name, typ, lo, hi in schema:
            if version < lo or version > hi:
                continue
            out += self.enc_value(typ, obj.get(name) if isinstance(obj, dict) else obj, version)
        if self.flexible:
            out += b"\x00"  # no tagged fields
        return bytes(out)

    def enc_value(self, typ, v, version):
        f = self.flexible
        if isinstance(typ, tuple):
            kind, sub = typ
            if kind == "struct":  # a nested struct: its fields (and, flexible, its tags)
                return self.enc(sub, v or {}, version)
            if kind == "nstruct":  # a nullable struct outside tagged fields: int8 marker
                if v is None:
                    return struct.pack(">b", -1)
                return b"\x01" + self.enc(sub, v, version)
            if v is None:
                return uvarint(0) if f else struct.pack(">i", -1)
            head = uvarint(len(v) + 1) if f else struct.pack(">i", len(v))
            body = b"".join(
                self.enc(sub, x, version) if isinstance(sub, list) else self.enc_value(sub, x, version)
                for x in v)
            return head + body
        if typ == "int8":
            return struct.pack(">b", v)
        if typ == "int16":
            return struct.pack(">h", v)
        if typ == "int32":
            return struct.pack(">i", v)
        if typ == "int64":
            return struct.pack(">q", v)
        if typ == "uint16":
            return struct.pack(">H", v)
        if typ == "uint32":
            return struct.pack(">I", v)
        if typ == "float64":
            return struct.pack(">d", v)
        if typ == "bool":
            return b"\x01" if v else b"\x00"
        if typ == "uuid":
            return v
        if typ in ("string", "nstring"):
            if v is None:
                return uvarint(0) if f else struct.pack(">h", -1)
            b = v.encode()
            return (uvarint(len(b) + 1) if f else struct.pack(">h", len(b))) + b
        if typ in ("bytes", "records"):
            if v is None:
                return uvarint(0) if f else struct.pack(">i", -1)
            return (uvarint(len(v) + 1) if f else struct.pack(">i", len(v))) + v
        raise ValueError(typ)

    # decoding
    def dec(self, schema, buf, pos, version):
        obj = {}
        for name, typ, lo, hi in schema:
            if version < lo or version > hi:
                continue
            obj[name], pos = self.dec_value(typ, buf, pos, version)
        if self.flexible:
            pos = self.skip_tags(buf, pos)
        return obj, pos

    def skip_tags(self, buf, pos):
        n, pos = read_uvarint(buf, pos)
        for _ in range(n):
            _, pos = read_uvarint(buf, pos)
            size, pos = read_uvarint(buf, pos)
            pos += size
        return pos

    def dec_value(self, typ, buf, pos, version):
        f = self.flexible
        if isinstance(typ, tuple):
            kind, sub = typ
            if kind == "struct":
                return self.dec(sub, buf, pos, version)
            if kind == "nstruct":
                marker = struct.unpack_from(">b", buf, pos)[0]
                if marker < 0:
                    return None, pos + 1
                return self.dec(sub, buf, pos + 1, version)
            if f:
                n, pos = read_uvarint(buf, pos)
                n -= 1
            else:
                n = struct.unpack_from(">i", buf, pos)[0]
                pos += 4
            if n < 0:
                return None, pos
            out = []
            for _ in range(n):
                if isinstance(sub, list):
                    x, pos = self.dec(sub, buf, pos, version)
                else:
                    x, pos = self.dec_value(sub, buf, pos, version)
                out.append(x)
            return out, pos
        fixed = {"int8": ">b", "int16": ">h", "int32": ">i", "int64": ">q", "uint16": ">H",
                 "uint32": ">I", "float64": ">d"}
        if typ in fixed:
            v = struct.unpack_from(fixed[typ], buf, pos)[0]
            return v, pos + struct.calcsize(fixed[typ])
        if typ == "bool":
            return buf[pos] != 0, pos + 1
        if typ == "uuid":
            return bytes(buf[pos:pos + 16]), pos + 16
        if typ in ("string", "nstring", "bytes", "records"):
            if f:
                n, pos = read_uvarint(buf, pos)
                n -= 1
            elif typ in ("string", "nstring"):
                n = struct.unpack_from(">h", buf, pos)[0]
                pos += 2
            else:
                n = struct.unpack_from(">i", buf, pos)[0]
                pos += 4
            if n < 0:
                return None, pos
            v = bytes(buf[pos:pos + n])
            return (v.decode() if typ in ("string", "nstring") else v), pos + n
        raise ValueError(typ)


ALL = 99

# Produce v3..v13 (flexible from 9; v13 names topics by TopicId).
PRODUCE_REQ = [
    ("transactional_id", "nstring", 3, ALL),
    ("acks", "int16", 0, ALL),
    ("timeout_ms", "int32", 0, ALL),
    ("topics", ("array", [
        ("name", "string", 0, 12),
        ("topic_id", "uuid", 13, ALL),
        ("partitions", ("array", [
            ("index", "int32", 0, ALL),
            ("records", "records", 0, ALL),
        ]), 0, ALL),
    ]), 0, ALL),
]
PRODUCE_RESP = [
    ("topics", ("array", [
        ("name", "string", 0, 12),
        ("topic_id", "uuid", 13, ALL),
        ("partitions", ("array", [
            ("index", "int32", 0, ALL),
            ("error_code", "int16", 0, ALL),
            ("base_offset", "int64", 0, ALL),
            ("log_append_time_ms", "int64", 2, ALL),
            ("log_start_offset", "int64", 5, ALL),
            ("record_errors", ("array", [
                ("batch_index", "int32", 8, ALL),
                ("batch_index_error_message", "nstring", 8, ALL),
            ]), 8, ALL),
            ("error_message", "nstring", 8, ALL),
        ]), 0, ALL),
    ]), 0, ALL),
    ("throttle_time_ms", "int32", 1, ALL),
]

# Metadata v12 (flexible): topic ids for Produce v13.
METADATA_REQ = [
    ("topics", ("narray", [("topic_id", "uuid", 10, ALL), ("name", "nstring", 0, ALL)]), 0, ALL),
    ("allow_auto_topic_creation", "bool", 4, ALL),
    ("include_topic_authorized_operations", "bool", 8, ALL),
]
METADATA_RESP = [
    ("throttle_time_ms", "int32", 3, ALL),
    ("brokers", ("array", [("node_id", "int32", 0, ALL), ("host", "string", 0, ALL),
                           ("port", "int32", 0, ALL), ("rack", "nstring", 1, ALL)]), 0, ALL),
    ("cluster_id", "nstring", 2, ALL),
    ("controller_id", "int32", 1, ALL),
    ("topics", ("array", [
        ("error_code", "int16", 0, ALL),
        ("name", "nstring", 0, ALL),
        ("topic_id", "uuid", 10, ALL),
        ("is_internal", "bool", 1, ALL),
        ("partitions", ("array", [
            ("error_code", "int16", 0, ALL),
            ("partition_index", "int32", 0, ALL),
            ("leader_id", "int32", 0, ALL),
            ("leader_epoch", "int32", 7, ALL),
            ("replica_nodes", ("array", "int32"), 0, ALL),
            ("isr_nodes", ("array", "int32"), 0, ALL),
            ("offline_replicas", ("array", "int32"), 5, ALL),
        ]), 0, ALL),
        ("topic_authorized_operations", "int32", 8, ALL),
    ]), 0, ALL),
]

# ApiVersions v0-v5 (flexible from 3; v5 adds KIP-1242's ClusterId and NodeId). The response
# header is always v0, and a version the broker does not serve is answered in the v0 layout.
API_VERSIONS_REQ = [
    ("client_software_name", "string", 3, ALL),
    ("client_software_version", "string", 3, ALL),
    ("cluster_id", "nstring", 5, ALL),
    ("node_id", "int32", 5, ALL),
]
API_VERSIONS_RESP = [
    ("error_code", "int16", 0, ALL),
    ("api_keys", ("array", [("api_key", "int16", 0, ALL), ("min_version", "int16", 0, ALL),
                            ("max_version", "int16", 0, ALL)]), 0, ALL),
    ("throttle_time_ms", "int32", 1, ALL),
]

# CreateTopics v4 (classic).
CREATE_TOPICS_REQ = [
    ("topics", ("array", [
        ("name", "string", 0, ALL),
        ("num_partitions", "int32", 0, ALL),
        ("replication_factor", "int16", 0, ALL),
        ("assignments", ("array", [("partition_index", "int32", 0, ALL),
                                   ("broker_ids", ("array", "int32"), 0, ALL)]), 0, ALL),
        ("configs", ("array", [("name", "string", 0, ALL), ("value", "nstring", 0, ALL)]), 0, ALL),
    ]), 0, ALL),
    ("timeout_ms", "int32", 0, ALL),
    ("validate_only", "bool", 1, ALL),
]
CREATE_TOPICS_RESP = [
    ("throttle_time_ms", "int32", 2, ALL),
    ("topics", ("array", [("name", "string", 0, ALL), ("error_code", "int16", 0, ALL),
                          ("error_message", "nstring", 1, ALL)]), 0, ALL),
]

# ListOffsets v1 (classic).
LIST_OFFSETS_REQ = [
    ("replica_id", "int32", 0, ALL),
    ("topics", ("array", [("name", "string", 0, ALL), ("partitions", ("array", [
        ("partition_index", "int32", 0, ALL), ("timestamp", "int64", 0, ALL)]), 0, ALL)]), 0, ALL),
]
LIST_OFFSETS_RESP = [
    ("topics", ("array", [("name", "string", 0, ALL), ("partitions", ("array", [
        ("partition_index", "int32", 0, ALL), ("error_code", "int16", 0, ALL),
        ("timestamp", "int64", 1, ALL), ("offset", "int64", 1, ALL)]), 0, ALL)]), 0, ALL),
]

# InitProducerId v1 (classic).
INIT_PID_REQ = [("transactional_id", "nstring", 0, ALL), ("transaction_timeout_ms", "int32", 0, ALL)]
INIT_PID_RESP = [("throttle_time_ms", "int32", 0, ALL), ("error_code", "int16", 0, ALL),
                 ("producer_id", "int64", 0, ALL), ("producer_epoch", "int16", 0, ALL)]


# --- the consumer-group APIs ----------------------------------------------------------------
# Transcribed from schema/008_offset_commit.schema ... schema/069_consumer_group_describe.schema
# (Kafka 4.4's message definitions), every version Kafka 4.4 serves. None of these messages has
# a tagged field in those versions, so the codec's empty tag sections are exact.

# FindCoordinator v0-6 (flexible from 3; batched CoordinatorKeys from 4).
FIND_COORDINATOR_REQ = [
    ("key", "string", 0, 3),
    ("key_type", "int8", 1, ALL),
    ("coordinator_keys", ("array", "string"), 4, ALL),
]
FIND_COORDINATOR_RESP = [
    ("throttle_time_ms", "int32", 1, ALL),
    ("error_code", "int16", 0, 3),
    ("error_message", "nstring", 1, 3),
    ("node_id", "int32", 0, 3),
    ("host", "string", 0, 3),
    ("port", "int32", 0, 3),
    ("coordinators", ("array", [
        ("key", "string", 4, ALL),
        ("node_id", "int32", 4, ALL),
        ("host", "string", 4, ALL),
        ("port", "int32", 4, ALL),
        ("error_code", "int16", 4, ALL),
        ("error_message", "nstring", 4, ALL),
    ]), 4, ALL),
]

# JoinGroup v0-9 (flexible from 6).
JOIN_GROUP_REQ = [
    ("group_id", "string", 0, ALL),
    ("session_timeout_ms", "int32", 0, ALL),
    ("rebalance_timeout_ms", "int32", 1, ALL),
    ("member_id", "string", 0, ALL),
    ("group_instance_id", "nstring", 5, ALL),
    ("protocol_type", "string", 0, ALL),
    ("protocols", ("array", [("name", "string", 0, ALL), ("metadata", "bytes", 0, ALL)]), 0, ALL),
    ("reason", "nstring", 8, ALL),
]
JOIN_GROUP_RESP = [
    ("throttle_time_ms", "int32", 2, ALL),
    ("error_code", "int16", 0, ALL),
    ("generation_id", "int32", 0, ALL),
    ("protocol_type", "nstring", 7, ALL),
    ("protocol_name", "nstring", 0, ALL),
    ("leader", "string", 0, ALL),
    ("skip_assignment", "bool", 9, ALL),
    ("member_id", "string", 0, ALL),
    ("members", ("array", [
        ("member_id", "string", 0, ALL),
        ("group_instance_id", "nstring", 5, ALL),
        ("metadata", "bytes", 0, ALL),
    ]), 0, ALL),
]

# Heartbeat v0-4 (flexible from 4).
HEARTBEAT_REQ = [
    ("group_id", "string", 0, ALL),
    ("generation_id", "int32", 0, ALL),
    ("member_id", "string", 0, ALL),
    ("group_instance_id", "nstring", 3, ALL),
]
HEARTBEAT_RESP = [("throttle_time_ms", "int32", 1, ALL), ("error_code", "int16", 0, ALL)]

# LeaveGroup v0-5 (flexible from 4; a batch of members from 3).
LEAVE_GROUP_REQ = [
    ("group_id", "string", 0, ALL),
    ("member_id", "string", 0, 2),
    ("members", ("array", [
        ("member_id", "string", 3, ALL),
        ("group_instance_id", "nstring", 3, ALL),
        ("reason", "nstring", 5, ALL),
    ]), 3, ALL),
]
LEAVE_GROUP_RESP = [
    ("throttle_time_ms", "int32", 1, ALL),
    ("error_code", "int16", 0, ALL),
    ("members", ("array", [
        ("member_id", "string", 3, ALL),
        ("group_instance_id", "nstring", 3, ALL),
        ("error_code", "int16", 3, ALL),
    ]), 3, ALL),
]

# SyncGroup v0-5 (flexible from 4).
SYNC_GROUP_REQ = [
    ("group_id", "string", 0, ALL),
    ("generation_id", "int32", 0, ALL),
    ("member_id", "string", 0, ALL),
    ("group_instance_id", "nstring", 3, ALL),
    ("protocol_type", "nstring", 5, ALL),
    ("protocol_name", "nstring", 5, ALL),
    ("assignments", ("array", [("member_id", "string", 0, ALL),
                               ("assignment", "bytes", 0, ALL)]), 0, ALL),
]
SYNC_GROUP_RESP = [
    ("throttle_time_ms", "int32", 1, ALL),
    ("error_code", "int16", 0, ALL),
    ("protocol_type", "nstring", 5, ALL),
    ("protocol_name", "nstring", 5, ALL),
    ("assignment", "bytes", 0, ALL),
]

# OffsetCommit v2-10 (flexible from 8; topic ids instead of names from 10).
OFFSET_COMMIT_REQ = [
    ("group_id", "string", 0, ALL),
    ("generation_id_or_member_epoch", "int32", 1, ALL),
    ("member_id", "string", 1, ALL),
    ("group_instance_id", "nstring", 7, ALL),
    ("retention_time_ms", "int64", 2, 4),
    ("topics", ("array", [
        ("name", "string", 0, 9),
        ("topic_id", "uuid", 10, ALL),
        ("partitions", ("array", [
            ("partition_index", "int32", 0, ALL),
            ("committed_offset", "int64", 0, ALL),
            ("committed_leader_epoch", "int32", 6, ALL),
            ("committed_metadata", "nstring", 0, ALL),
        ]), 0, ALL),
    ]), 0, ALL),
]
OFFSET_COMMIT_RESP = [
    ("throttle_time_ms", "int32", 3, ALL),
    ("topics", ("array", [
        ("name", "string", 0, 9),
        ("topic_id", "uuid", 10, ALL),
        ("partitions", ("array", [("partition_index", "int32", 0, ALL),
                                  ("error_code", "int16", 0, ALL)]), 0, ALL),
    ]), 0, ALL),
]

# OffsetFetch v1-10 (flexible from 6; one group up to 7, a list of groups from 8; topic ids
# from 10).
OFFSET_FETCH_REQ = [
    ("group_id", "string", 0, 7),
    ("topics", ("narray", [("name", "string", 0, 7),
                           ("partition_indexes", ("array", "int32"), 0, 7)]), 0, 7),
    ("groups", ("array", [
        ("group_id", "string", 8, ALL),
        ("member_id", "nstring", 9, ALL),
        ("member_epoch", "int32", 9, ALL),
        ("topics", ("narray", [
            ("name", "string", 8, 9),
            ("topic_id", "uuid", 10, ALL),
            ("partition_indexes", ("array", "int32"), 8, ALL),
        ]), 8, ALL),
    ]), 8, ALL),
    ("require_stable", "bool", 7, ALL),
]
_OFFSET_FETCH_PARTITION_V8 = [
    ("partition_index", "int32", 8, ALL),
    ("committed_offset", "int64", 8, ALL),
    ("committed_leader_epoch", "int32", 8, ALL),
    ("metadata", "nstring", 8, ALL),
    ("error_code", "int16", 8, ALL),
]
OFFSET_FETCH_RESP = [
    ("throttle_time_ms", "int32", 3, ALL),
    ("topics", ("array", [
        ("name", "string", 0, 7),
        ("partitions", ("array", [
            ("partition_index", "int32", 0, 7),
            ("committed_offset", "int64", 0, 7),
            ("committed_leader_epoch", "int32", 5, 7),
            ("metadata", "nstring", 0, 7),
            ("error_code", "int16", 0, 7),
        ]), 0, 7),
    ]), 0, 7),
    ("error_code", "int16", 2, 7),
    ("groups", ("array", [
        ("group_id", "string", 8, ALL),
        ("topics", ("array", [
            ("name", "string", 8, 9),
            ("topic_id", "uuid", 10, ALL),
            ("partitions", ("array", _OFFSET_FETCH_PARTITION_V8), 8, ALL),
        ]), 8, ALL),
        ("error_code", "int16", 8, ALL),
    ]), 8, ALL),
]

# DescribeGroups v0-6 (flexible from 5).
DESCRIBE_GROUPS_REQ = [
    ("groups", ("array", "string"), 0, ALL),
    ("include_authorized_operations", "bool", 3, ALL),
]
DESCRIBE_GROUPS_RESP = [
    ("throttle_time_ms", "int32", 1, ALL),
    ("groups", ("array", [
        ("error_code", "int16", 0, ALL),
        ("error_message", "nstring", 6, ALL),
        ("group_id", "string", 0, ALL),
        ("group_state", "string", 0, ALL),
        ("protocol_type", "string", 0, ALL),
        ("protocol_data", "string", 0, ALL),
        ("members", ("array", [
            ("member_id", "string", 0, ALL),
            ("group_instance_id", "nstring", 4, ALL),
            ("client_id", "string", 0, ALL),
            ("client_host", "string", 0, ALL),
            ("member_metadata", "bytes", 0, ALL),
            ("member_assignment", "bytes", 0, ALL),
        ]), 0, ALL),
        ("authorized_operations", "int32", 3, ALL),
    ]), 0, ALL),
]

# ListGroups v0-5 (flexible from 3; states filter from 4, types filter from 5).
LIST_GROUPS_REQ = [
    ("states_filter", ("array", "string"), 4, ALL),
    ("types_filter", ("array", "string"), 5, ALL),
]
LIST_GROUPS_RESP = [
    ("throttle_time_ms", "int32", 1, ALL),
    ("error_code", "int16", 0, ALL),
    ("groups", ("array", [
        ("group_id", "string", 0, ALL),
        ("protocol_type", "string", 0, ALL),
        ("group_state", "string", 4, ALL),
        ("group_type", "string", 5, ALL),
    ]), 0, ALL),
]

# DeleteGroups v0-3 (flexible from 2).
DELETE_GROUPS_REQ = [("groups_names", ("array", "string"), 0, ALL)]
DELETE_GROUPS_RESP = [
    ("throttle_time_ms", "int32", 0, ALL),
    ("results", ("array", [
        ("group_id", "string", 0, ALL),
        ("error_code", "int16", 0, ALL),
        ("error_message", "nstring", 3, ALL),
    ]), 0, ALL),
]

# OffsetDelete v0 (never flexible).
OFFSET_DELETE_REQ = [
    ("group_id", "string", 0, ALL),
    ("topics", ("array", [("name", "string", 0, ALL),
                          ("partitions", ("array", [("partition_index", "int32", 0, ALL)]),
                           0, ALL)]), 0, ALL),
]
OFFSET_DELETE_RESP = [
    ("error_code", "int16", 0, ALL),
    ("throttle_time_ms", "int32", 0, ALL),
    ("topics", ("array", [
        ("name", "string", 0, ALL),
        ("partitions", ("array", [("partition_index", "int32", 0, ALL),
                                  ("error_code", "int16", 0, ALL)]), 0, ALL),
    ]), 0, ALL),
]

# ConsumerGroupHeartbeat v0-1 (KIP-848; flexible from 0; the regex from 1).
_TOPIC_PARTITIONS = [("topic_id", "uuid", 0, ALL), ("partitions", ("array", "int32"), 0, ALL)]
CONSUMER_GROUP_HEARTBEAT_REQ = [
    ("group_id", "string", 0, ALL),
    ("member_id", "string", 0, ALL),
    ("member_epoch", "int32", 0, ALL),
    ("instance_id", "nstring", 0, ALL),
    ("rack_id", "nstring", 0, ALL),
    ("rebalance_timeout_ms", "int32", 0, ALL),
    ("subscribed_topic_names", ("narray", "string"), 0, ALL),
    ("subscribed_topic_regex", "nstring", 1, ALL),
    ("server_assignor", "nstring", 0, ALL),
    ("topic_partitions", ("narray", _TOPIC_PARTITIONS), 0, ALL),
]
CONSUMER_GROUP_HEARTBEAT_RESP = [
    ("throttle_time_ms", "int32", 0, ALL),
    ("error_code", "int16", 0, ALL),
    ("error_message", "nstring", 0, ALL),
    ("member_id", "nstring", 0, ALL),
    ("member_epoch", "int32", 0, ALL),
    ("heartbeat_interval_ms", "int32", 0, ALL),
    ("assignment", ("nstruct", [("topic_partitions", ("array", _TOPIC_PARTITIONS), 0, ALL)]),
     0, ALL),
]

# ConsumerGroupDescribe v0-1 (flexible from 0; MemberType from 1).
_DESCRIBED_ASSIGNMENT = [("topic_partitions", ("array", [
    ("topic_id", "uuid", 0, ALL),
    ("topic_name", "string", 0, ALL),
    ("partitions", ("array", "int32"), 0, ALL),
]), 0, ALL)]
CONSUMER_GROUP_DESCRIBE_REQ = [
    ("group_ids", ("array", "string"), 0, ALL),
    ("include_authorized_operations", "bool", 0, ALL),
]
CONSUMER_GROUP_DESCRIBE_RESP = [
    ("throttle_time_ms", "int32", 0, ALL),
    ("groups", ("array", [
        ("error_code", "int16", 0, ALL),
        ("error_message", "nstring", 0, ALL),
        ("group_id", "string", 0, ALL),
        ("group_state", "string", 0, ALL),
        ("group_epoch", "int32", 0, ALL),
        ("assignment_epoch", "int32", 0, ALL),
        ("assignor_name", "string", 0, ALL),
        ("members", ("array", [
            ("member_id", "string", 0, ALL),
            ("instance_id", "nstring", 0, ALL),
            ("rack_id", "nstring", 0, ALL),
            ("member_epoch", "int32", 0, ALL),
            ("client_id", "string", 0, ALL),
            ("client_host", "string", 0, ALL),
            ("subscribed_topic_names", ("array", "string"), 0, ALL),
            ("subscribed_topic_regex", "nstring", 0, ALL),
            ("assignment", ("struct", _DESCRIBED_ASSIGNMENT), 0, ALL),
            ("target_assignment", ("struct", _DESCRIBED_ASSIGNMENT), 0, ALL),
            ("member_type", "int8", 1, ALL),
        ]), 0, ALL),
        ("authorized_operations", "int32", 0, ALL),
    ]), 0, ALL),
]

# The consumer protocol's bytes inside JoinGroup/SyncGroup (Kafka's ConsumerProtocolSubscription
# and ConsumerProtocolAssignment, never flexible): an int16 version, then the struct.
CONSUMER_SUBSCRIPTION = [
    ("topics", ("array", "string"), 0, ALL),
    ("user_data", "bytes", 0, ALL),
    ("owned_partitions", ("array", [("topic", "string", 1, ALL),
                                    ("partitions", ("array", "int32"), 1, ALL)]), 1, ALL),
    ("generation_id", "int32", 2, ALL),
    ("rack_id", "nstring", 3, ALL),
]
CONSUMER_ASSIGNMENT = [
    ("assigned_partitions", ("array", [("topic", "string", 0, ALL),
                                       ("partitions", ("array", "int32"), 0, ALL)]), 0, ALL),
    ("user_data", "bytes", 0, ALL),
]


def consumer_subscription(topics, version=0, owned=(), generation_id=-1, rack_id=None):
    body = {"topics": list(topics), "user_data": None,
            "owned_partitions": [{"topic": t, "partitions": list(p)} for t, p in owned],
            "generation_id": generation_id, "rack_id": rack_id}
    return struct.pack(">h", version) + Codec(False).enc(CONSUMER_SUBSCRIPTION, body, version)


def consumer_assignment(partitions, version=0):
    """partitions: [(topic, [partition, ...]), ...]."""
    body = {"assigned_partitions": [{"topic": t, "partitions": list(p)} for t, p in partitions],
            "user_data": None}
    return struct.pack(">h", version) + Codec(False).enc(CONSUMER_ASSIGNMENT, body, version)


def decode_consumer_assignment(data):
    """[(topic, [partitions])] of a ConsumerProtocolAssignment, or the hex of bytes that are not
    one."""
    if not data:
        return data.hex() if data is not None else None
    try:
        version = struct.unpack_from(">h", data, 0)[0]
        obj, pos = Codec(False).dec(CONSUMER_ASSIGNMENT, data, 2, version)
        return ["%s:%s" % (tp["topic"], tp["partitions"]) for tp in obj["assigned_partitions"]]
    except (struct.error, IndexError, UnicodeDecodeError):
        return data.hex()

PRODUCE, METADATA, CREATE_TOPICS, LIST_OFFSETS, INIT_PRODUCER_ID = 0, 3, 19, 2, 22
API_VERSIONS = 18
OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT = 8, 9, 10, 11, 12
LEAVE_GROUP, SYNC_GROUP, DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS = 13, 14, 15, 16, 42
OFFSET_DELETE, CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE = 47, 68, 69
FLEXIBLE_FROM = {PRODUCE: 9, METADATA: 9, CREATE_TOPICS: 5, LIST_OFFSETS: 6, INIT_PRODUCER_ID: 2,
                 API_VERSIONS: 3, OFFSET_COMMIT: 8, OFFSET_FETCH: 6, FIND_COORDINATOR: 3,
                 JOIN_GROUP: 6, HEARTBEAT: 4, LEAVE_GROUP: 4, SYNC_GROUP: 4, DESCRIBE_GROUPS: 5,
                 LIST_GROUPS: 3, DELETE_GROUPS: 2, OFFSET_DELETE: ALL,
                 CONSUMER_GROUP_HEARTBEAT: 0, CONSUMER_GROUP_DESCRIBE: 0}
# (request schema, response schema) of the APIs sent through Connection.request.
SCHEMAS = {
    FIND_COORDINATOR: (FIND_COORDINATOR_REQ, FIND_COORDINATOR_RESP),
    JOIN_GROUP: (JOIN_GROUP_REQ, JOIN_GROUP_RESP),
    HEARTBEAT: (HEARTBEAT_REQ, HEARTBEAT_RESP),
    LEAVE_GROUP: (LEAVE_GROUP_REQ, LEAVE_GROUP_RESP),
    SYNC_GROUP: (SYNC_GROUP_REQ, SYNC_GROUP_RESP),
    OFFSET_COMMIT: (OFFSET_COMMIT_REQ, OFFSET_COMMIT_RESP),
    OFFSET_FETCH: (OFFSET_FETCH_REQ, OFFSET_FETCH_RESP),
    DESCRIBE_GROUPS: (DESCRIBE_GROUPS_REQ, DESCRIBE_GROUPS_RESP),
    LIST_GROUPS: (LIST_GROUPS_REQ, LIST_GROUPS_RESP),
    DELETE_GROUPS: (DELETE_GROUPS_REQ, DELETE_GROUPS_RESP),
    OFFSET_DELETE: (OFFSET_DELETE_REQ, OFFSET_DELETE_RESP),
    CONSUMER_GROUP_HEARTBEAT: (CONSUMER_GROUP_HEARTBEAT_REQ, CONSUMER_GROUP_HEARTBEAT_RESP),
    CONSUMER_GROUP_DESCRIBE: (CONSUMER_GROUP_DESCRIBE_REQ, CONSUMER_GROUP_DESCRIBE_RESP),
}


class NoResponse(Exception):
    pass


class Connection:
    def __init__(self, port, timeout_s=15.0, client_id="interop"):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
        self.correlation_id = 0
        self.client_id = client_id.encode()

    def close(self):
        self.sock.close()

    def _recv_exact(self, n):
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            out += chunk
        return bytes(out)

    def send(self, api_key, version, req_schema, body):
        flexible = version >= FLEXIBLE_FROM[api_key]
        self.correlation_id += 1
        header = struct.pack(">hhi", api_key, version, self.correlation_id)
        header += struct.pack(">h", len(self.client_id)) + self.client_id
        if flexible:
            header += b"\x00"
        payload = header + Codec(flexible).enc(req_schema, body, version)
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)
        return self.correlation_id

    def receive(self, api_key, version, resp_schema, wait_s=None, strict=False):
        flexible = version >= FLEXIBLE_FROM[api_key]
        old = self.sock.gettimeout()
        if wait_s is not None:
            self.sock.settimeout(wait_s)
        try:
            size = struct.unpack(">i", self._recv_exact(4))[0]
        except socket.timeout:
            raise NoResponse()
        finally:
            self.sock.settimeout(old)
        buf = self._recv_exact(size)
        correlation = struct.unpack_from(">i", buf, 0)[0]
        pos = 4
        codec = Codec(flexible)
        if flexible and api_key != API_VERSIONS:  # ApiVersions answers with header v0
            pos = codec.skip_tags(buf, pos)
        obj, end = codec.dec(resp_schema, buf, pos, version)
        if strict and end != len(buf):
            raise ValueError("api %d v%d response: %d bytes decoded of %d" % (
                api_key, version, end, len(buf)))
        obj["_correlation_id"] = correlation
        return obj

    # The consumer-group APIs: any version, by SCHEMAS; the answer must decode to its last byte.
    def send_request(self, api_key, version, body):
        return self.send(api_key, version, SCHEMAS[api_key][0], body)

    def receive_response(self, api_key, version, wait_s=None):
        return self.receive(api_key, version, SCHEMAS[api_key][1], wait_s=wait_s, strict=True)

    def request(self, api_key, version, body):
        self.send_request(api_key, version, body)
        return self.receive_response(api_key, version)

    def call(self, api_key, version, req_schema, resp_schema, body):
        self.send(api_key, version, req_schema, body)
        return self.receive(api_key, version, resp_schema)

    # --- the requests -----------------------------------------------------------------------

    def produce(self, version, topic, batch, acks=-1, partition=0, topic_id=None,
                timeout_ms=30000, transactional_id=None):
        body = {"transactional_id": transactional_id, "acks": acks, "timeout_ms": timeout_ms,
                "topics": [{"name": topic, "topic_id": topic_id or b"\x00" * 16,
                            "partitions": [{"index": partition, "records": batch}]}]}
        self.send(PRODUCE, version, PRODUCE_REQ, body)
        if acks == 0:
            return None
        resp = self.receive(PRODUCE, version, PRODUCE_RESP)
        return resp["topics"][0]["partitions"][0]

    def metadata(self, topics, version=12):
        body = {"topics": [{"topic_id": b"\x00" * 16, "name": t} for t in topics],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False}
        return self.call(METADATA, version, METADATA_REQ, METADATA_RESP, body)

    def create_topic(self, name, configs=None, partitions=1):
        body = {"topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1,
                            "assignments": [],
                            "configs": [{"name": k, "value": v}
                                        for k, v in (configs or {}).items()]}],
                "timeout_ms": 30000, "validate_only": False}
        return self.call(CREATE_TOPICS, 4, CREATE_TOPICS_REQ, CREATE_TOPICS_RESP, body)["topics"][0]

    def list_offset(self, topic, timestamp, partition=0):
        body = {"replica_id": -1, "topics": [{"name": topic, "partitions": [
            {"partition_index": partition, "timestamp": timestamp}]}]}
        resp = self.call(LIST_OFFSETS, 1, LIST_OFFSETS_REQ, LIST_OFFSETS_RESP, body)
        return resp["topics"][0]["partitions"][0]

    def api_versions(self, version, cluster_id=None, node_id=-1, answer_version=None):
        """answer_version: the layout to read the answer in (0 for a version the broker does not
        serve, KIP-511)."""
        body = {"client_software_name": "interop", "client_software_version": "1.0",
                "cluster_id": cluster_id, "node_id": node_id}
        self.send(API_VERSIONS, version, API_VERSIONS_REQ, body)
        return self.receive(API_VERSIONS, version if answer_version is None else answer_version,
                            API_VERSIONS_RESP)

    def init_producer_id(self):
        return self.call(INIT_PRODUCER_ID, 1, INIT_PID_REQ, INIT_PID_RESP,
                         {"transactional_id": None, "transaction_timeout_ms": 60000})


# --- schemas read from schema/ ----------------------------------------------------------------
# The admin scenarios send APIs no hand-written schema above describes; their schemas come from
# tarn's own schema files (Kafka's definitions, checked against Kafka's jars by
# schema_vs_kafka_test.py) through the generator's parser, so nothing is typed twice. Tagged
# fields are left out: the decoder skips them and no request here sets one.


def _snake(name):
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


def _from_fields(gen, fields):
    out = []
    for f in fields:
        if f.tagged is not None:
            continue
        lo, hi = f.versions
        hi = min(hi, ALL)
        name = _snake(f.name)
        sub = _from_fields(gen, f.fields) if f.is_struct else f.elem_type
        if f.is_array:
            out.append((name, ("array", sub), lo, hi))
        elif f.is_struct:
            # A nullable struct has the int8 marker only in its nullable versions.
            null = gen.intersect(f.nullable, (lo, hi))
            if null is None:
                out.append((name, ("struct", sub), lo, hi))
            else:
                if null[0] > lo:
                    out.append((name, ("struct", sub), lo, null[0] - 1))
                out.append((name, ("nstruct", sub), null[0], null[1]))
                if null[1] < hi:
                    out.append((name, ("struct", sub), null[1] + 1, hi))
        elif f.type == "string" and f.nullable is not None:
            out.append((name, "nstring", lo, hi))
        else:
            out.append((name, f.type, lo, hi))
    return out


def load_schema(api_key):
    """Registers api_key's request and response from schema/NNN_*.schema in SCHEMAS and
    FLEXIBLE_FROM (for Connection.request) and returns (min version, max version)."""
    import glob
    import importlib.util
    scripts = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spec = importlib.util.spec_from_file_location("gen_protocol",
                                                  os.path.join(scripts, "gen_protocol.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    path, = glob.glob(os.path.join(os.path.dirname(scripts), "schema", "%03d_*.schema" % api_key))
    messages, api = gen.parse_schema(path)
    by_kind = {m.kind: _from_fields(gen, m.fields) for m in messages}
    SCHEMAS[api_key] = (by_kind["request"], by_kind["response"])
    FLEXIBLE_FROM[api_key] = api[3][0] if api[3] is not None else ALL + 1
    return api[2][0], min(api[2][1], ALL)
