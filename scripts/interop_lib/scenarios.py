# The scenarios of `make interop`. Each one runs against one broker through a Context and
# returns its observations, an ordered {key: value} of everything deterministic it saw (error
# codes, offsets, high watermarks, response fields, consumed records). The topics it creates are
# compared on disk afterwards. Masks name what legitimately varies between runs or brokers;
# `expect` holds the facts of the reference document the Kafka run must reproduce.
import os
import re
import struct
import subprocess
import time

from . import segments, wire

# The fixed CreateTime of record 0 (record i gets BASE_TS + i): fixed timestamps make sizes and
# CRCs comparable. The driver sets it once per suite, to the start time, so both brokers get the
# same value and neither deletes the segments by retention.ms (7 days).
BASE_TS = 1794025864656
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
NONE, INVALID_REQUIRED_ACKS, INVALID_RECORD = 0, 21, 87


class Mask:
    """Observation keys matching `glob` are masked: replaced by `<reason>` or, with `regex`, only
    the matching parts are."""

    def __init__(self, glob, reason, regex=None):
        self.glob, self.reason, self.regex = glob, reason, regex


# Masks shared by scenarios.
PID = [Mask("*.producerId", "producer ids are assigned per broker"),
       Mask("*producer_id", "producer ids are assigned per broker"),
       Mask("disk.*.crc", "the CRC covers producerId; crc_norm (producerId zeroed) is compared")]
CLOCK = [Mask("disk.*CreateTime", "CreateTime set by the client clock"),
         Mask("disk.*LogAppendTime", "LogAppendTime set by the broker clock"),
         Mask("disk.*.crc", "the CRC covers the timestamps"),
         Mask("disk.*.crc_norm", "the CRC covers the timestamps"),
         Mask("disk.*.size", "timestamp deltas are varints: sizes follow the clock"),
         Mask("disk.*.position", "positions follow the sizes"),
         Mask("consumed*", "timestamps set by the client clock", regex=r"\b(ts |CreateTime:)\d+")]

REGISTRY = []


def scenario(name, masks=(), expect=None):
    def register(fn):
        REGISTRY.append({"name": name, "fn": fn, "masks": list(masks), "expect": expect or {}})
        return fn
    return register


class Context:
    def __init__(self, broker, tools, scenario_name):
        self.broker = broker
        self.port = broker.port
        self.bootstrap = "127.0.0.1:%d" % broker.port
        self.tools = tools
        self.name = scenario_name
        self.topics = []
        self.obs = {}

    def conn(self):
        return wire.Connection(self.port)

    def create_topic(self, topic, configs=None):
        c = self.conn()
        try:
            r = c.create_topic(topic, configs)
        finally:
            c.close()
        self.obs["create_topic.%s.error" % topic] = r["error_code"]
        self.topics.append(topic)
        # The leader must be known before producing (Kafka elects it asynchronously).
        deadline = time.time() + 15
        while time.time() < deadline:
            c = self.conn()
            try:
                md = c.metadata([topic])
            finally:
                c.close()
            t = md["topics"][0]
            if t["error_code"] == 0 and t["partitions"] and t["partitions"][0]["leader_id"] >= 0:
                # Kafka names the leader in Metadata before its replica manager leads the
                # partition (a Produce then gets NOT_LEADER_OR_FOLLOWER); ListOffsets checks that.
                c = self.conn()
                try:
                    ready = c.list_offset(topic, -1)["error_code"] == 0
                finally:
                    c.close()
                if ready:
                    return t["topic_id"]
            time.sleep(0.1)
        raise RuntimeError("topic %s has no leader after 15s" % topic)

    def hw(self, topic, wait_for=None):
        """High watermark and log start offset. With wait_for, polls up to 10s for that high
        watermark first: after acks=0 a client may exit before the broker appended its data."""
        deadline = time.time() + (10 if wait_for is not None else 0)
        while True:
            c = self.conn()
            try:
                latest = c.list_offset(topic, -1)
                earliest = c.list_offset(topic, -2)
            finally:
                c.close()
            if wait_for is None or latest["offset"] == wait_for or time.time() > deadline:
                break
            time.sleep(0.1)
        self.obs["%s.high_watermark" % topic] = latest["offset"]
        self.obs["%s.log_start_offset" % topic] = earliest["offset"]
        self.obs["%s.list_offsets_error" % topic] = latest["error_code"]

    def record_response(self, prefix, r):
        if r is None:
            self.obs[prefix + ".response"] = "none"
            return
        for k in ("error_code", "base_offset", "log_append_time_ms", "log_start_offset",
                  "record_errors", "error_message"):
            if k in r:
                v = r[k]
                if k == "log_append_time_ms" and v not in (-1, None):
                    v = "set" if v > 0 else v  # the broker clock: only -1 vs set is deterministic
                self.obs["%s.%s" % (prefix, k)] = v

    def run(self, cmd, stdin=None, timeout_s=60, env=None):
        r = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=timeout_s,
                           env=env)
        return r

    def lines(self, prefix, r, pattern):
        n = 0
        for line in r.stdout.splitlines():
            if re.match(pattern, line):
                self.obs["%s[%d]" % (prefix, n)] = line.strip()
                n += 1
        self.obs[prefix + ".count"] = n
        if r.returncode != 0:
            self.obs[prefix + ".exit"] = r.returncode
            self.obs[prefix + ".stderr"] = r.stderr.strip().splitlines()[-1:] if r.stderr else ""
            raise RuntimeError("%s exited with %d: %s" % (
                os.path.basename(r.args[0]), r.returncode, r.stderr.strip()[-300:]))

    def client_log_file(self, topic):
        files = segments.log_files(self.broker.data_dir(), topic)
        return files[0] if files else None


def records(values, headers_first=False):
    return [(("k%d" % i).encode(), v.encode(),
             [("trace", b"abc")] if i == 0 and headers_first else []) for i, v in enumerate(values)]


def hand_produce(ctx, prefix, topic, batch, acks=1, version=12, topic_id=None):
    c = ctx.conn()
    try:
        if acks == 0:
            c.produce(version, topic, batch, acks=0, topic_id=topic_id)
            try:
                c.receive(wire.PRODUCE, version, wire.PRODUCE_RESP, wait_s=1.5)
                ctx.obs[prefix + ".response"] = "response"
            except wire.NoResponse:
                ctx.obs[prefix + ".response"] = "none"
            except ConnectionError:
                ctx.obs[prefix + ".response"] = "connection closed"
            return None
        r = c.produce(version, topic, batch, acks=acks, topic_id=topic_id)
        ctx.record_response(prefix, r)
        return r
    except ConnectionError as e:
        ctx.obs[prefix + ".response"] = "connection closed"
    finally:
        c.close()


# --- the reference document's examples ------------------------------------------------------


def java_produce(ctx, prefix, topic, groups="3,2", consume=None, **kw):
    """Java producer; with consume=N the same JVM then reads N records back (obs `consumed`)."""
    args = ["produce", "bootstrap=" + ctx.bootstrap, "topic=" + topic, "groups=" + groups,
            "base_ts=%d" % BASE_TS] + ["%s=%s" % kv for kv in kw.items()]
    if consume is not None:
        args.append("count=%d" % consume)
    r = ctx.run(ctx.tools.java("InteropClient") + args, timeout_s=120)
    ctx.lines(prefix, r, r"acked: ")
    if consume is not None:
        ctx.lines("consumed", r, r"(record|end): ")


def java_consume(ctx, prefix, topic, count):
    r = ctx.run(ctx.tools.java("InteropClient") + [
        "consume", "bootstrap=" + ctx.bootstrap, "topic=" + topic, "count=%d" % count],
        timeout_s=90)
    ctx.lines(prefix, r, r"(record|end): ")


@scenario("ex1-java-producer-batches", masks=PID,
          expect={"disk.ex1.batches": 2, "disk.ex1.b0.count": "3", "disk.ex1.b1.baseSequence": "3",
                  "disk.ex1.b0.partitionLeaderEpoch": "0", "disk.ex1.b0.size": "119",
                  "disk.ex1.b1.position": "119", "disk.ex1.b0.r0.headerKeys": "[trace]"})
def ex1(ctx):
    ctx.create_topic("ex1")
    java_produce(ctx, "produce", "ex1", groups="3,2", consume=5)
    ctx.hw("ex1")


@scenario("ex2-byte-view", masks=[Mask("header.producerId", "producer ids are assigned per broker"),
                                  Mask("header.crc", "the CRC covers producerId")])
def ex2(ctx):
    ctx.create_topic("ex2")
    java_produce(ctx, "produce", "ex2", groups="3,2")
    path = ctx.client_log_file("ex2")
    data = open(path, "rb").read() if path else b""
    if len(data) < 61:
        ctx.obs["header"] = "no batch on disk"
        return
    names = ["baseOffset", "batchLength", "partitionLeaderEpoch", "magic", "crc", "attributes",
             "lastOffsetDelta", "baseTimestamp", "maxTimestamp", "producerId", "producerEpoch",
             "baseSequence", "recordsCount"]
    values = struct.unpack_from(">qiibIhiqqqhii", data, 0)
    for n, v in zip(names, values):
        ctx.obs["header." + n] = v
    ctx.obs["records.hex"] = data[61:12 + values[1]].hex()


@scenario("ex3-refused-requests-and-acks0",
          expect={"acks2.error_code": INVALID_REQUIRED_ACKS, "base-offset.error_code": INVALID_RECORD,
                  "two-batches.error_code": INVALID_RECORD, "acks0.response": "none",
                  "ex3.high_watermark": 1})
def ex3(ctx):
    ctx.create_topic("ex3")
    one = lambda v, **kw: wire.build_batch(records([v]), BASE_TS, **kw)
    hand_produce(ctx, "acks2", "ex3", one("x"), acks=2)
    hand_produce(ctx, "base-offset", "ex3", one("x", base_offset=5), acks=1)
    hand_produce(ctx, "two-batches", "ex3", one("x") + one("y"), acks=1)
    hand_produce(ctx, "acks0", "ex3", one("z"), acks=0)
    ctx.hw("ex3")


@scenario("ex4-hand-built-crc-on-disk",
          expect={"first.base_offset": 0, "second.base_offset": 3, "disk_crc_equals_client": True})
def ex4_crc(ctx):
    ctx.create_topic("ex4")
    batch = wire.build_batch(records(["a", "b", "c"]), BASE_TS, timestamp_deltas=[0, 1, 2])
    hand_produce(ctx, "first", "ex4", batch)
    hand_produce(ctx, "second", "ex4", batch)
    ctx.obs["client_crc"] = wire.batch_crc(batch)
    path = ctx.client_log_file("ex4")
    raw = open(path, "rb").read() if path else b""
    crcs = [wire.batch_crc(raw[p:]) for p in (0, len(batch)) if len(raw) >= p + 21]
    ctx.obs["disk_crc_equals_client"] = len(crcs) == 2 and all(c == wire.batch_crc(batch) for c in crcs)
    ctx.hw("ex4")


@scenario("ex4-gzip-into-producer-and-lz4-topics",
          expect={"producer-topic.error_code": 0, "lz4-topic.error_code": 0,
                  "disk.ex4-producer.b0.compresscodec": "gzip", "disk.ex4-lz4.b0.compresscodec": "lz4"})
def ex4_gzip(ctx):
    ctx.create_topic("ex4-producer")
    ctx.create_topic("ex4-lz4", {"compression.type": "lz4"})
    batch = wire.build_batch(records(["a", "b", "c"]), BASE_TS, codec="gzip")
    hand_produce(ctx, "producer-topic", "ex4-producer", batch)
    hand_produce(ctx, "lz4-topic", "ex4-lz4", batch)
    ctx.obs["client_crc"] = wire.batch_crc(batch)
    ctx.obs["client_size"] = len(batch)
    ctx.hw("ex4-producer")
    ctx.hw("ex4-lz4")


@scenario("ex5-2000-records-per-codec", masks=PID,
          expect=dict([("disk.ex5-%s.batches" % c, 1) for c in CODECS] +
                      [("disk.ex5-%s.b0.compresscodec" % c, c) for c in CODECS] +
                      [("ex5-%s.high_watermark" % c, 2000) for c in CODECS]))
def ex5(ctx):
    for codec in CODECS:
        t = "ex5-" + codec
        ctx.create_topic(t)
        java_produce(ctx, "produce." + codec, t, groups="2000", compression=codec, value="json",
                     batch_size=1048576, header_first="false")
        ctx.obs.pop("produce.%s[0]" % codec, None)
        ctx.hw(t)


@scenario("ex6-min-insync-replicas-2-one-replica",
          expect={"hand.error_code": 0, "hand.base_offset": 0})
def ex6(ctx):
    ctx.create_topic("ex6", {"min.insync.replicas": "2"})
    hand_produce(ctx, "hand", "ex6", wire.build_batch(records(["x"]), BASE_TS), acks=-1)
    java_produce(ctx, "java", "ex6", groups="1", acks="all")
    ctx.hw("ex6")


@scenario("acks-paths", expect={"acks-1.error_code": 0, "acks1.error_code": 0,
                                    "acks0.response": "none", "acks.high_watermark": 3})
def acks_paths(ctx):
    ctx.create_topic("acks")
    for acks in (-1, 1, 0):
        hand_produce(ctx, "acks%d" % acks, "acks", wire.build_batch(records(["v"]), BASE_TS), acks=acks)
    ctx.hw("acks")


# --- ApiVersions v5 (KIP-1242) -------------------------------------------------------------


@scenario("api-versions-v5-cluster-check",
          expect={"v5.both-match.error_code": 0, "v5.neither.error_code": 0,
                  "v5.other-cluster.error_code": 129, "v5.other-node.error_code": 129,
                  "v5.cluster-without-node.error_code": 42,
                  "v5.node-without-cluster.error_code": 42, "v6.error_code": 35})
def api_versions_v5(ctx):
    """ApiVersions v5 with the broker's own cluster and node id, with others, with one of the two,
    and with neither, on one connection; then v6, which neither broker serves. The ApiKeys list
    itself differs (tarn serves fewer APIs): only ApiVersions' own entry and the count on errors
    are compared."""
    c = ctx.conn()
    try:
        md = c.metadata([])
        cluster_id, node_id = md["cluster_id"], md["brokers"][0]["node_id"]
        cases = [("both-match", cluster_id, node_id), ("neither", None, -1),
                 ("other-cluster", "AAAAAAAAAAAAAAAAAAAAAA", node_id),
                 ("other-node", cluster_id, node_id + 1), ("empty-cluster", "", node_id),
                 ("cluster-without-node", cluster_id, -1), ("node-without-cluster", None, node_id),
                 ("other-cluster-without-node", "x", -1)]
        for name, cid, nid in cases:
            r = c.api_versions(5, cid, nid)
            ctx.obs["v5.%s.error_code" % name] = r["error_code"]
            own = [k for k in r["api_keys"] if k["api_key"] == wire.API_VERSIONS]
            ctx.obs["v5.%s.api_versions_range" % name] = (
                "%d-%d" % (own[0]["min_version"], own[0]["max_version"]) if own else "none")
            ctx.obs["v5.%s.api_keys_empty" % name] = not r["api_keys"]
            ctx.obs["v5.%s.throttle_time_ms" % name] = r["throttle_time_ms"]
        r = c.api_versions(6, cluster_id, node_id, answer_version=0)
        ctx.obs["v6.error_code"] = r["error_code"]
        ctx.obs["v6.api_keys"] = ["%d:%d-%d" % (k["api_key"], k["min_version"], k["max_version"])
                                  for k in r["api_keys"]]
    finally:
        c.close()


# --- produce-path edge cases ----------------------------------------------------------------


@scenario("produce-versions-3-to-13")
def versions(ctx):
    topic_id = ctx.create_topic("versions")
    for v in range(3, 14):
        hand_produce(ctx, "v%d" % v, "versions", wire.build_batch(records(["v%d" % v]), BASE_TS),
                     version=v, topic_id=topic_id)
    ctx.hw("versions")


@scenario("idempotent-retries", masks=PID)
def idempotent(ctx):
    ctx.create_topic("idem")
    c = ctx.conn()
    try:
        r = c.init_producer_id()
    finally:
        c.close()
    ctx.obs["init.error_code"] = r["error_code"]
    ctx.obs["init.producer_epoch"] = r["producer_epoch"]
    pid = r["producer_id"]
    b = lambda vals, seq, epoch=0, p=pid: wire.build_batch(
        records(vals), BASE_TS, producer_id=p, producer_epoch=epoch, base_sequence=seq)
    hand_produce(ctx, "first", "idem", b(["a", "b", "c"], 0))
    hand_produce(ctx, "duplicate", "idem", b(["a", "b", "c"], 0))
    hand_produce(ctx, "gap", "idem", b(["d"], 10))
    hand_produce(ctx, "in-order", "idem", b(["d"], 3))
    hand_produce(ctx, "older-duplicate", "idem", b(["a", "b", "c"], 0))
    hand_produce(ctx, "epoch-bump", "idem", b(["e"], 0, epoch=1))
    hand_produce(ctx, "stale-epoch", "idem", b(["f"], 4, epoch=0))
    hand_produce(ctx, "unknown-producer-seq5", "idem", b(["g"], 5, p=pid + 1000))
    hand_produce(ctx, "new-producer-seq0", "idem", b(["h"], 0, p=pid + 1001))
    ctx.hw("idem")


@scenario("log-append-time", masks=CLOCK)
def log_append_time(ctx):
    ctx.create_topic("lat", {"message.timestamp.type": "LogAppendTime"})
    hand_produce(ctx, "none", "lat", wire.build_batch(records(["a", "b"]), BASE_TS))
    hand_produce(ctx, "gzip", "lat", wire.build_batch(records(["c", "d"]), BASE_TS, codec="gzip"))
    ctx.hw("lat")


@scenario("timestamps-out-of-range", masks=CLOCK + [
    Mask("*.record_errors", "the allowed range is computed from the broker clock", regex=r"(\b)\d{13}\b"),
    Mask("*.error_message", "the allowed range is computed from the broker clock", regex=r"(\b)\d{13}\b")])
def timestamps(ctx):
    ctx.create_topic("ts", {"message.timestamp.before.max.ms": "3600000",
                            "message.timestamp.after.max.ms": "3600000"})
    now = int(time.time() * 1000)
    hand_produce(ctx, "too-old", "ts", wire.build_batch(records(["a"]), now - 7 * 86400000))
    hand_produce(ctx, "too-new", "ts", wire.build_batch(records(["b"]), now + 2 * 86400000))
    hand_produce(ctx, "second-record-too-old", "ts",
                 wire.build_batch(records(["c", "d"]), now, timestamp_deltas=[0, -7 * 86400000]))
    hand_produce(ctx, "in-range", "ts", wire.build_batch(records(["e"]), now))
    ctx.hw("ts")


@scenario("compacted-topic-without-keys")
def compacted(ctx):
    ctx.create_topic("compacted", {"cleanup.policy": "compact"})
    hand_produce(ctx, "null-key", "compacted",
                 wire.build_batch([(None, b"v", [])], BASE_TS))
    hand_produce(ctx, "second-record-null-key", "compacted",
                 wire.build_batch([(b"k", b"v", []), (None, b"v", [])], BASE_TS))
    hand_produce(ctx, "with-key", "compacted", wire.build_batch([(b"k", b"v", [])], BASE_TS))
    ctx.hw("compacted")


@scenario("oversized-batch")
def oversized(ctx):
    ctx.create_topic("oversized", {"max.message.bytes": "1024"})
    hand_produce(ctx, "too-large", "oversized",
                 wire.build_batch([(b"k", b"x" * 2000, [])], BASE_TS))
    hand_produce(ctx, "fits", "oversized", wire.build_batch([(b"k", b"x" * 500, [])], BASE_TS))
    ctx.hw("oversized")


@scenario("corrupt-crc")
def corrupt(ctx):
    ctx.create_topic("corrupt")
    batch = bytearray(wire.build_batch(records(["a"]), BASE_TS))
    batch[-1] ^= 0xFF
    hand_produce(ctx, "bad-crc", "corrupt", bytes(batch))
    ctx.hw("corrupt")


@scenario("unknown-topic-and-partition")
def unknown(ctx):
    ctx.create_topic("known")
    hand_produce(ctx, "unknown-topic", "no-such-topic", wire.build_batch(records(["a"]), BASE_TS))
    c = ctx.conn()
    try:
        r = c.produce(12, "known", wire.build_batch(records(["a"]), BASE_TS), acks=1, partition=7)
        ctx.record_response("unknown-partition", r)
    finally:
        c.close()
    c = ctx.conn()
    try:
        md = c.metadata(["no-such-topic"])
        ctx.obs["metadata.no-such-topic.error_code"] = md["topics"][0]["error_code"]
    finally:
        c.close()


# --- every client, every codec, every acks --------------------------------------------------

CLIENT_MASKS = {
    "java": PID,
    "confluent": PID,
    "kafka-python": PID,
    "kcat": PID + CLOCK,
    "tarn": PID + CLOCK,
}


def client_produce(ctx, client, topic, codec="none", acks="all", groups="3,2", consume=None):
    i = 0
    if client == "java":
        kw = {"compression": codec, "acks": acks}
        if acks != "all":
            kw["idempotence"] = "false"
        java_produce(ctx, "produce", topic, groups=groups, consume=consume, **kw)
        return
    if client in ("confluent", "kafka-python"):
        r = ctx.run([ctx.tools.python, ctx.tools.pyclients, client, "produce",
                     "bootstrap=" + ctx.bootstrap, "topic=" + topic, "groups=" + groups,
                     "base_ts=%d" % BASE_TS, "compression=" + codec, "acks=" + acks], timeout_s=60)
        ctx.lines("produce", r, r"(acked|error): ")
        return
    # kcat and tarn: one run per flush group, lines k<i>:hello-<i>
    for n, g in enumerate(groups.split(",")):
        text = "".join("k%d:hello-%d\n" % (i + j, i + j) for j in range(int(g)))
        i += int(g)
        if client == "kcat":
            cmd = ["kcat", "-P", "-b", ctx.bootstrap, "-t", topic, "-p", "0", "-K", ":",
                   "-z", codec, "-X", "acks=" + acks, "-X", "linger.ms=1000"]
        else:
            cmd = [ctx.tools.tarn, "produce", "--bootstrap-server", ctx.bootstrap, "--topic", topic,
                   "--property", "parse.key=true", "--property", "key.separator=:",
                   "--compression-codec", codec, "--request-required-acks",
                   {"all": "-1"}.get(acks, acks), "--timeout", "1000"]
        r = ctx.run(cmd, stdin=text, timeout_s=60)
        ctx.obs["produce.group%d.exit" % n] = r.returncode
        if r.returncode:
            ctx.obs["produce.group%d.stderr" % n] = r.stderr.strip()[-300:]
            raise RuntimeError("%s produce exited with %d: %s" % (
                client, r.returncode, r.stderr.strip()[-300:]))


def client_consume(ctx, client, topic, count):
    if client == "java":
        java_consume(ctx, "consumed", topic, count)
        return
    if client in ("confluent", "kafka-python"):
        r = ctx.run([ctx.tools.python, ctx.tools.pyclients, client, "consume",
                     "bootstrap=" + ctx.bootstrap, "topic=" + topic, "count=%d" % count], timeout_s=60)
        ctx.lines("consumed", r, r"(record|error): ")
        return
    if client == "kcat":
        r = ctx.run(["kcat", "-C", "-b", ctx.bootstrap, "-t", topic, "-p", "0", "-o", "beginning",
                     "-e", "-c", str(count), "-f", "record: offset %o key %k value %s ts %T headers %h\\n"],
                    timeout_s=60)
        ctx.lines("consumed", r, r"record: ")
        return
    r = ctx.run([ctx.tools.tarn, "consume", "--bootstrap-server", ctx.bootstrap, "--topic", topic,
                 "--from-beginning", "--max-messages", str(count), "--timeout-ms", "10000",
                 "--property", "print.offset=true", "--property", "print.key=true",
                 "--property", "print.timestamp=true"], timeout_s=60)
    ctx.lines("consumed", r, r".+")


def make_client_scenarios():
    for client in ("java", "kcat", "confluent", "kafka-python", "tarn"):
        for codec in CODECS:
            def run_codec(ctx, client=client, codec=codec):
                t = "%s-%s" % (client, codec)
                ctx.create_topic(t)
                if client == "java":  # one JVM: produce, then consume
                    client_produce(ctx, client, t, codec=codec, consume=5)
                    ctx.hw(t)
                    return
                client_produce(ctx, client, t, codec=codec)
                ctx.hw(t)
                client_consume(ctx, client, t, 5)
            expect = {"%s-%s.high_watermark" % (client, codec): 5,
                      "consumed.count": 6 if client == "java" else 5}  # java adds an `end:` line
            scenario("client-%s-codec-%s" % (client, codec), masks=CLIENT_MASKS[client],
                     expect=expect)(run_codec)
        for acks in ("0", "1", "all"):
            def run_acks(ctx, client=client, acks=acks):
                t = "%s-acks-%s" % (client, acks)
                ctx.create_topic(t)
                client_produce(ctx, client, t, acks=acks)
                ctx.hw(t, wait_for=5)
            scenario("client-%s-acks-%s" % (client, acks), masks=CLIENT_MASKS[client],
                     expect={"%s-acks-%s.high_watermark" % (client, acks): 5})(run_acks)


make_client_scenarios()


@scenario("kcat-lz4-is-stored-compressed",
          masks=CLIENT_MASKS["kcat"] + [Mask("disk.kcat-lz4-many.*",
                                             "batch boundaries follow librdkafka's timing")],
          expect={"lz4_batches_present": True, "kcat-lz4-many.high_watermark": 300})
def kcat_lz4_stored(ctx):
    # librdkafka compresses lz4 only if the broker advertises FindCoordinator (rdkafka_feature.c);
    # a batch compression would enlarge (the 3-record batches above) goes uncompressed anyway, so
    # this sends enough records for a batch worth compressing.
    t = "kcat-lz4-many"
    ctx.create_topic(t)
    text = "".join("k%d:hello-%d\n" % (i, i) for i in range(300))
    r = ctx.run(["kcat", "-P", "-b", ctx.bootstrap, "-t", t, "-p", "0", "-K", ":", "-z", "lz4",
                 "-X", "linger.ms=200"], stdin=text, timeout_s=60)
    ctx.obs["produce.exit"] = r.returncode
    ctx.hw(t)
    path = ctx.client_log_file(t)
    codecs = [b["attributes"] & 7 for b in segments.raw_batches(path)] if path else []
    ctx.obs["lz4_batches_present"] = 3 in codecs


# --- the log cleaner (issue 21) -----------------------------------------------------------------

COMPACTION_PAD = "x" * 1000  # ~1 KiB values: the input fills two 1 MiB segments and a half


def cleaner_checkpoint(data_dir, topic):
    """The cleaner-offset-checkpoint entry of topic-0, or None."""
    try:
        with open(os.path.join(data_dir, "cleaner-offset-checkpoint")) as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return None
    for line in lines[2:]:
        parts = line.split()
        if len(parts) == 3 and parts[0] == topic and parts[1] == "0":
            return int(parts[2])
    return None


@scenario("log-compaction-latest-value-per-key")
def log_compaction(ctx):
    """200 keys x 12 versions and a tombstone for every 5th key, as the same hand-built batches
    (so both brokers roll their 1 MiB segments at the same offsets), cleaned by each broker's own
    cleaner up to its active segment, then read whole by the Java consumer: the (offset, key,
    value) list and the cleaned segments on disk must be Kafka's."""
    topic = "compaction"
    ctx.create_topic(topic, {"cleanup.policy": "compact", "segment.bytes": "1048576",
                             "min.cleanable.dirty.ratio": "0.01",
                             "delete.retention.ms": "86400000"})
    batches = []
    for version in range(12):
        for start in range(0, 200, 8):
            batches.append([(("k%03d" % i).encode(), ("v%02d-%s" % (version, COMPACTION_PAD)).encode(),
                             []) for i in range(start, start + 8)])
    batches.append([(("k%03d" % i).encode(), None, []) for i in range(0, 200, 5)])
    errors = 0
    c = ctx.conn()
    try:
        for records_ in batches:
            r = c.produce(12, topic, wire.build_batch(records_, BASE_TS), acks=1)
            errors += 0 if r and r.get("error_code") == 0 else 1
    finally:
        c.close()
    ctx.obs["produce_errors"] = errors
    ctx.hw(topic)
    # The cleaner's checkpoint reaches the active segment (log.cleaner.backoff.ms is 100 on both
    # brokers, brokers.py).
    part_dir = os.path.join(ctx.broker.data_dir(), topic + "-0")
    deadline = time.time() + 90
    cleaned, active = None, None
    while time.time() < deadline:
        active = max(int(f[:-4]) for f in os.listdir(part_dir) if f.endswith(".log"))
        cleaned = cleaner_checkpoint(ctx.broker.data_dir(), topic)
        if cleaned == active:
            break
        time.sleep(0.2)
    ctx.obs["active_segment_base"] = active
    ctx.obs["cleaned_to"] = cleaned
    r = ctx.run(["java", "-cp", os.path.join(ctx.tools.libs, "*"),
                 os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
                     os.path.abspath(__file__)))), "tests", "java", "CompactedRead.java"),
                 ctx.bootstrap, topic], timeout_s=120)
    kept = [line.replace(COMPACTION_PAD, "<pad>") for line in r.stdout.splitlines()]
    ctx.obs["read.exit"] = r.returncode
    ctx.obs["read.count"] = len(kept)
    for i, line in enumerate(kept):
        ctx.obs["read[%d]" % i] = line


# The consumer-group scenarios register themselves after these (group_scenarios.py), then the
# admin scenarios (admin_scenarios.py, imported at the end of group_scenarios.py).
from . import group_scenarios  # noqa: E402,F401
