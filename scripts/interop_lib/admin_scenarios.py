# The admin scenarios of `make interop` (issue 22): CreatePartitions, DescribeConfigs,
# IncrementalAlterConfigs and the legacy AlterConfigs for topics and the broker, DescribeCluster,
# DescribeLogDirs, DescribeTopicPartitions and its cursor, ListOffsets' special timestamps (-3
# MAX_TIMESTAMP, -4 EARLIEST_LOCAL, -5 LATEST_TIERED), OffsetForLeaderEpoch, DeleteRecords,
# ElectLeaders, List/AlterPartitionReassignments, Describe/AlterClientQuotas and validate-only
# UpdateFeatures, hand-built at every version Kafka 4.4 serves (schemas from schema/,
# wire.load_schema) and observed field by field as the group scenarios observe theirs (lists
# sorted by name, topic ids as `<id of TOPIC>`).
#
# The broker is shared with every other scenario, so each one puts back what it changed (broker
# configs, quotas); they run last, and use topics of their own (prefix adm-), whose segment files
# are compared like the others'. What differs by nature is masked: the cluster id, the port, the
# log directory's path and its disk's sizes.
import time

from . import scenarios as base
from . import wire
from .group_scenarios import GROUP_MASKS, Conn, call, observe, topic
from .scenarios import Mask, scenario

LIST_OFFSETS, DELETE_RECORDS, OFFSET_FOR_LEADER_EPOCH = 2, 21, 23
DESCRIBE_CONFIGS, ALTER_CONFIGS, DESCRIBE_LOG_DIRS, CREATE_PARTITIONS = 32, 33, 35, 37
ELECT_LEADERS, INCREMENTAL_ALTER_CONFIGS = 43, 44
ALTER_PARTITION_REASSIGNMENTS, LIST_PARTITION_REASSIGNMENTS = 45, 46
DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS, UPDATE_FEATURES = 48, 49, 57
DESCRIBE_CLUSTER, DESCRIBE_TOPIC_PARTITIONS = 60, 75
VERSIONS = {k: wire.load_schema(k) for k in (
    LIST_OFFSETS, DELETE_RECORDS, OFFSET_FOR_LEADER_EPOCH, DESCRIBE_CONFIGS, ALTER_CONFIGS,
    DESCRIBE_LOG_DIRS, CREATE_PARTITIONS, ELECT_LEADERS, INCREMENTAL_ALTER_CONFIGS,
    ALTER_PARTITION_REASSIGNMENTS, LIST_PARTITION_REASSIGNMENTS, DESCRIBE_CLIENT_QUOTAS,
    ALTER_CLIENT_QUOTAS, UPDATE_FEATURES, DESCRIBE_CLUSTER, DESCRIBE_TOPIC_PARTITIONS)}

TOPIC, BROKER, UNKNOWN_RESOURCE_TYPE = 2, 4, 99
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

ADMIN_MASKS = GROUP_MASKS + [
    Mask("*.cluster_id", "each broker formats its own cluster id"),
    Mask("*.port", "each broker listens on a free port"),
    Mask("*.log_dir", "the data directory's path"),
    Mask("*.total_bytes", "the size of the disk the data directory is on"),
    Mask("*.usable_bytes", "the free space of that disk, which the run changes"),
]


def versions(api):
    lo, hi = VERSIONS[api]
    return range(lo, hi + 1)


def produce(ctx, label, name, partition, timestamps):
    """One batch of len(timestamps) records with fixed CreateTimes (BASE_TS + each)."""
    batch = wire.build_batch(base.records(["v%d" % i for i in range(len(timestamps))]),
                             base.BASE_TS, timestamp_deltas=timestamps)
    c = ctx.conn()
    try:
        r = c.produce(9, name, batch, acks=-1, partition=partition)
    finally:
        c.close()
    ctx.obs[label + ".error_code"] = r["error_code"]
    ctx.obs[label + ".base_offset"] = r["base_offset"]


def partition_count(ctx, label, name):
    c = ctx.conn()
    try:
        t = c.metadata([name])["topics"][0]
    finally:
        c.close()
    ctx.obs[label] = "error %d, %d partitions" % (t["error_code"], len(t["partitions"]))


# --- CreatePartitions -----------------------------------------------------------------------


@scenario("admin-create-partitions", masks=ADMIN_MASKS,
          expect={"grow.v3.results[0].error_code": 0, "after.partitions": "error 0, 5 partitions"})
def create_partitions(ctx):
    t, u = "adm-cp", "adm-cp-other"
    topic(ctx, t)
    topic(ctx, u)
    c = Conn(ctx)
    try:
        def body(entries, validate_only=False):
            return {"topics": [{"name": n, "count": k, "assignments": a} for n, k, a in entries],
                    "timeout_ms": 30000, "validate_only": validate_only}
        for v in versions(CREATE_PARTITIONS):  # one more partition at each version: 2..5
            call(ctx, c, "validate.v%d" % v, CREATE_PARTITIONS, v,
                 body([(t, 20, None)], validate_only=True))
            call(ctx, c, "grow.v%d" % v, CREATE_PARTITIONS, v, body([(t, v + 2, None)]))
            partition_count(ctx, "after.v%d" % v, t)
        last = versions(CREATE_PARTITIONS)[-1]
        for label, entries in (
                ("same-count", [(t, 5, None)]),
                ("fewer", [(t, 2, None)]),
                ("unknown-topic", [("adm-cp-missing", 3, None)]),
                ("assignment", [(u, 2, [{"broker_ids": [1]}])]),
                ("assignment-unknown-broker", [(u, 3, [{"broker_ids": [7]}])]),
                ("assignment-count-mismatch", [(u, 4, [{"broker_ids": [1]}])]),
                ("assignment-duplicate-broker", [(u, 3, [{"broker_ids": [1, 1]}])]),
                ("duplicate-topic", [(u, 3, None), (u, 4, None)]),
                ("million", [(u, 1000000, None)]),
                ("zero", [(u, 0, None)])):
            call(ctx, c, label, CREATE_PARTITIONS, last, body(entries))
    finally:
        c.close()
    partition_count(ctx, "after.partitions", t)
    partition_count(ctx, "after.other", u)


# --- configs --------------------------------------------------------------------------------

# Not min.insync.replicas: a cluster-wide dynamic config on both (KIP-966), described with every
# topic (docs/compatibility.md, Topic management): it says nothing of the topic.
TOPIC_KEYS = ["cleanup.policy", "retention.ms", "max.message.bytes", "segment.bytes",
              "message.timestamp.type"]
BROKER_KEYS = ["log.retention.ms", "message.max.bytes", "log.cleaner.threads", "num.io.threads",
               "log.segment.bytes"]


def describe_configs(ctx, c, label, resources, version=None, synonyms=True, docs=False,
                     want=None):
    """resources: [(type, name, keys or None)]. want: {key: value} the first resource must show
    first; Kafka's broker applies a change when its record reaches it, a moment after the answer
    (polled up to 10 s, not observed)."""
    v = versions(DESCRIBE_CONFIGS)[-1] if version is None else version
    body = {"resources": [{"resource_type": rt, "resource_name": n, "configuration_keys": keys}
                          for rt, n, keys in resources],
            "include_synonyms": synonyms, "include_documentation": docs}
    deadline = time.time() + 10
    while want and time.time() < deadline:
        r = c.request(DESCRIBE_CONFIGS, v, body)
        seen = {e["name"]: e["value"] for e in r["results"][0]["configs"]}
        if all(seen.get(k) == val for k, val in want.items()):
            break
        time.sleep(0.1)
    return call(ctx, c, label, DESCRIBE_CONFIGS, v, body)


def incremental(ctx, c, label, resources, validate_only=False, version=None):
    """resources: [(type, name, [(key, op, value)])]."""
    v = versions(INCREMENTAL_ALTER_CONFIGS)[-1] if version is None else version
    return call(ctx, c, label, INCREMENTAL_ALTER_CONFIGS, v, {
        "resources": [{"resource_type": rt, "resource_name": n, "configs": [
            {"name": k, "config_operation": op, "value": val} for k, op, val in ops]}
            for rt, n, ops in resources], "validate_only": validate_only})


def legacy_alter(ctx, c, label, version, resources, validate_only=False):
    return call(ctx, c, label, ALTER_CONFIGS, version, {
        "resources": [{"resource_type": rt, "resource_name": n, "configs": [
            {"name": k, "value": val} for k, val in kvs]} for rt, n, kvs in resources],
        "validate_only": validate_only})


@scenario("admin-describe-configs-topic", masks=ADMIN_MASKS,
          expect={"v4.results[0].error_code": 0})
def describe_configs_topic(ctx):
    t = "adm-dc"
    topic(ctx, t, configs={"retention.ms": "86400000", "cleanup.policy": "compact"})
    c = Conn(ctx)
    try:
        for v in versions(DESCRIBE_CONFIGS):
            describe_configs(ctx, c, "v%d" % v, [(TOPIC, t, TOPIC_KEYS)], version=v,
                             docs=v >= 3)
        # Every key a topic has, by name: value, source, read-only, sensitive, type.
        r = c.request(DESCRIBE_CONFIGS, versions(DESCRIBE_CONFIGS)[-1], {
            "resources": [{"resource_type": TOPIC, "resource_name": t,
                           "configuration_keys": None}],
            "include_synonyms": False, "include_documentation": False})
        ctx.obs["all.error_code"] = r["results"][0]["error_code"]
        ctx.obs["all.names"] = sorted(e["name"] for e in r["results"][0]["configs"])
        for e in r["results"][0]["configs"]:
            ctx.obs["all." + e["name"]] = "%s source %d read-only %s sensitive %s type %d" % (
                e["value"], e["config_source"], e["read_only"], e["is_sensitive"],
                e["config_type"])
        describe_configs(ctx, c, "missing", [(TOPIC, "adm-dc-missing", None)])
        describe_configs(ctx, c, "unknown-key", [(TOPIC, t, ["no.such.key"])])
        describe_configs(ctx, c, "unknown-type", [(UNKNOWN_RESOURCE_TYPE, t, None)])
        describe_configs(ctx, c, "unknown-type-beside-topic", [(TOPIC, t, ["retention.ms"]),
                                                               (UNKNOWN_RESOURCE_TYPE, t, None)])
        describe_configs(ctx, c, "empty-name", [(TOPIC, "", None)])
    finally:
        c.close()


@scenario("admin-incremental-alter-configs-topic", masks=ADMIN_MASKS,
          expect={"set.v1.responses[0].error_code": 0})
def incremental_alter_topic(ctx):
    t = "adm-iac"
    topic(ctx, t)
    c = Conn(ctx)
    try:
        for v in versions(INCREMENTAL_ALTER_CONFIGS):
            incremental(ctx, c, "set.v%d" % v, [(TOPIC, t, [("retention.ms", SET, str(1000 + v))])],
                        version=v)
        incremental(ctx, c, "append", [(TOPIC, t, [("cleanup.policy", APPEND, "compact")])])
        describe_configs(ctx, c, "after-append", [(TOPIC, t, ["cleanup.policy", "retention.ms"])],
                         want={"cleanup.policy": "delete,compact"})
        incremental(ctx, c, "subtract", [(TOPIC, t, [("cleanup.policy", SUBTRACT, "delete")])])
        incremental(ctx, c, "validate-only", [(TOPIC, t, [("max.message.bytes", SET, "5000")])],
                    validate_only=True)
        describe_configs(ctx, c, "after-subtract", [(TOPIC, t, ["cleanup.policy",
                                                                "max.message.bytes"])],
                         want={"cleanup.policy": "compact"})
        incremental(ctx, c, "delete", [(TOPIC, t, [("retention.ms", DELETE, None),
                                                   ("cleanup.policy", DELETE, None)])])
        describe_configs(ctx, c, "after-delete", [(TOPIC, t, ["cleanup.policy", "retention.ms"])],
                         want={"cleanup.policy": "delete", "retention.ms": "604800000"})
        for label, ops in (("unknown-key", [("no.such.key", SET, "1")]),
                           ("bad-value", [("retention.ms", SET, "soon")]),
                           ("bad-operation", [("retention.ms", 7, "1")]),
                           ("append-to-scalar", [("retention.ms", APPEND, "1")]),
                           ("duplicate-key", [("retention.ms", SET, "1"),
                                              ("retention.ms", SET, "2")])):
            incremental(ctx, c, label, [(TOPIC, t, ops)])
        incremental(ctx, c, "missing-topic", [(TOPIC, "adm-iac-missing",
                                               [("retention.ms", SET, "1")])])
        incremental(ctx, c, "unknown-type", [(UNKNOWN_RESOURCE_TYPE, t,
                                              [("retention.ms", SET, "1")])])
    finally:
        c.close()


@scenario("admin-alter-configs-topic", masks=ADMIN_MASKS,
          expect={"v0.responses[0].error_code": 0})
def legacy_alter_topic(ctx):
    t = "adm-ac"
    topic(ctx, t, configs={"cleanup.policy": "compact"})
    c = Conn(ctx)
    try:
        for v in versions(ALTER_CONFIGS):  # the set replaces every override
            legacy_alter(ctx, c, "v%d" % v, v, [(TOPIC, t, [("retention.ms", str(2000 + v))])])
            describe_configs(ctx, c, "after.v%d" % v,
                             [(TOPIC, t, ["cleanup.policy", "retention.ms"])],
                             want={"retention.ms": str(2000 + v)})
        last = versions(ALTER_CONFIGS)[-1]
        legacy_alter(ctx, c, "validate-only", last, [(TOPIC, t, [("segment.ms", "5000")])],
                     validate_only=True)
        legacy_alter(ctx, c, "null-value", last, [(TOPIC, t, [("retention.ms", None)])])
        legacy_alter(ctx, c, "unknown-key", last, [(TOPIC, t, [("no.such.key", "1")])])
        legacy_alter(ctx, c, "missing-topic", last, [(TOPIC, "adm-ac-missing",
                                                      [("retention.ms", "1")])])
        legacy_alter(ctx, c, "unknown-type", last, [(UNKNOWN_RESOURCE_TYPE, t,
                                                     [("retention.ms", "1")])])
        legacy_alter(ctx, c, "empty", last, [(TOPIC, t, [])])
        describe_configs(ctx, c, "after-empty", [(TOPIC, t, ["cleanup.policy", "retention.ms"])],
                         want={"retention.ms": "604800000"})
    finally:
        c.close()


@scenario("admin-configs-broker", masks=ADMIN_MASKS,
          expect={"describe.results[0].error_code": 0})
def broker_configs(ctx):
    c = Conn(ctx)
    try:
        describe_configs(ctx, c, "describe", [(BROKER, "1", BROKER_KEYS)], docs=True)
        describe_configs(ctx, c, "describe-default", [(BROKER, "", BROKER_KEYS)])
        describe_configs(ctx, c, "describe-other-id", [(BROKER, "7", BROKER_KEYS)])
        describe_configs(ctx, c, "describe-bad-id", [(BROKER, "one", BROKER_KEYS)])
        incremental(ctx, c, "set", [(BROKER, "1", [("log.retention.ms", SET, "3600000"),
                                                   ("log.cleaner.threads", SET, "2")])])
        incremental(ctx, c, "set-default", [(BROKER, "", [("message.max.bytes", SET,
                                                           "2000000")])])
        describe_configs(ctx, c, "after-set", [(BROKER, "1", BROKER_KEYS)],
                         want={"log.retention.ms": "3600000", "message.max.bytes": "2000000",
                               "log.cleaner.threads": "2"})
        incremental(ctx, c, "read-only", [(BROKER, "1", [("log.dirs", SET, "/x")])])
        incremental(ctx, c, "bad-value", [(BROKER, "1", [("log.retention.ms", SET, "x")])])
        incremental(ctx, c, "other-id", [(BROKER, "7", [("log.retention.ms", SET, "1")])])
        incremental(ctx, c, "bad-id", [(BROKER, "one", [("log.retention.ms", SET, "1")])])
        incremental(ctx, c, "validate-only", [(BROKER, "1", [("num.io.threads", SET, "4")])],
                    validate_only=True)
        incremental(ctx, c, "delete", [(BROKER, "1", [("log.retention.ms", DELETE, None),
                                                      ("log.cleaner.threads", DELETE, None)])])
        incremental(ctx, c, "delete-default", [(BROKER, "", [("message.max.bytes", DELETE,
                                                              None)])])
        describe_configs(ctx, c, "after-delete", [(BROKER, "1", BROKER_KEYS)],
                         want={"log.retention.ms": None, "message.max.bytes": "1048588",
                               "log.cleaner.threads": "1"})
        for v in versions(ALTER_CONFIGS):
            legacy_alter(ctx, c, "legacy.v%d" % v, v,
                         [(BROKER, "1", [("log.retention.ms", str(7200000 + v))])])
        last = versions(ALTER_CONFIGS)[-1]
        describe_configs(ctx, c, "after-legacy", [(BROKER, "1", ["log.retention.ms"])],
                         want={"log.retention.ms": str(7200000 + last)})
        legacy_alter(ctx, c, "legacy-other-id", last, [(BROKER, "7", [("log.retention.ms", "1")])])
        legacy_alter(ctx, c, "legacy-bad-id", last, [(BROKER, "one", [("log.retention.ms", "1")])])
        legacy_alter(ctx, c, "legacy-read-only", versions(ALTER_CONFIGS)[-1],
                     [(BROKER, "1", [("log.dirs", "/x")])])
        legacy_alter(ctx, c, "legacy-clear", versions(ALTER_CONFIGS)[-1], [(BROKER, "1", [])])
        describe_configs(ctx, c, "after-clear", [(BROKER, "1", ["log.retention.ms"])],
                         want={"log.retention.ms": None})
    finally:
        c.close()


# --- describe: the cluster, log dirs, topic partitions --------------------------------------


@scenario("admin-describe-cluster", masks=ADMIN_MASKS, expect={"v0.error_code": 0})
def describe_cluster(ctx):
    c = Conn(ctx)
    try:
        for v in versions(DESCRIBE_CLUSTER):
            call(ctx, c, "v%d" % v, DESCRIBE_CLUSTER, v, {
                "include_cluster_authorized_operations": False, "endpoint_type": 1,
                "include_fenced_brokers": False})
        last = versions(DESCRIBE_CLUSTER)[-1]
        call(ctx, c, "authorized-operations", DESCRIBE_CLUSTER, last, {
            "include_cluster_authorized_operations": True, "endpoint_type": 1,
            "include_fenced_brokers": True})
        call(ctx, c, "controllers", DESCRIBE_CLUSTER, last, {
            "include_cluster_authorized_operations": False, "endpoint_type": 2,
            "include_fenced_brokers": False})
        call(ctx, c, "bad-endpoint-type", DESCRIBE_CLUSTER, last, {
            "include_cluster_authorized_operations": False, "endpoint_type": 9,
            "include_fenced_brokers": False})
    finally:
        c.close()


@scenario("admin-describe-log-dirs", masks=ADMIN_MASKS,
          expect={"v1.results[0].error_code": 0})
def describe_log_dirs(ctx):
    t = "adm-ld"
    topic(ctx, t, partitions=2)
    produce(ctx, "produce", t, 0, [0, 1, 2])
    produce(ctx, "produce-more", t, 0, [3, 4])
    c = Conn(ctx)
    try:
        for v in versions(DESCRIBE_LOG_DIRS):
            call(ctx, c, "v%d" % v, DESCRIBE_LOG_DIRS, v, {"topics": [
                {"topic": t, "partitions": [0, 1]}, {"topic": "adm-ld-missing",
                                                     "partitions": [0]}]})
        last = versions(DESCRIBE_LOG_DIRS)[-1]
        call(ctx, c, "partition-missing", DESCRIBE_LOG_DIRS, last, {"topics": [
            {"topic": t, "partitions": [5]}]})
        call(ctx, c, "no-topics", DESCRIBE_LOG_DIRS, last, {"topics": []})
    finally:
        c.close()


@scenario("admin-describe-topic-partitions", masks=ADMIN_MASKS,
          expect={"page1.next_cursor.partition_index": 3})
def describe_topic_partitions(ctx):
    a, b = "adm-dtp-a", "adm-dtp-b"
    topic(ctx, a, partitions=5)
    topic(ctx, b, partitions=2)
    c = Conn(ctx)
    try:
        def page(label, names, limit, cursor=None):
            return call(ctx, c, label, DESCRIBE_TOPIC_PARTITIONS, 0, {
                "topics": [{"name": n} for n in names], "response_partition_limit": limit,
                "cursor": cursor})
        page("all-of-both", [a, b], 2000)
        r = page("page1", [b, a], 3)  # topics are answered in name order, whatever the request's
        page("page2", [b, a], 3, r["next_cursor"])
        page("page-from-b", [a, b], 3, {"topic_name": b, "partition_index": 1})
        page("cursor-not-requested", [a], 10, {"topic_name": b, "partition_index": 0})
        page("cursor-past-the-end", [a], 10, {"topic_name": a, "partition_index": 9})
        page("missing", ["adm-dtp-missing", a], 1)
        page("limit-zero", [a], 0)
        page("bad-name", ["bad/name"], 10)
    finally:
        c.close()


# --- offsets ----------------------------------------------------------------------------------


@scenario("admin-list-offsets-special-timestamps", masks=ADMIN_MASKS,
          expect={"v9.max_timestamp.offset": 4, "v9.latest_tiered.offset": -1})
def list_offsets_special(ctx):
    t = "adm-lo"
    topic(ctx, t)
    produce(ctx, "produce", t, 0, [0, 5, 2])  # the largest timestamp is in the middle
    produce(ctx, "produce-more", t, 0, [1, 9, 3])
    c = Conn(ctx)
    try:
        for v in versions(LIST_OFFSETS):
            specials = [("latest", -1), ("earliest", -2), ("at-ts-4", base.BASE_TS + 4),
                        ("after-all", base.BASE_TS + 100)]
            if v >= 7:
                specials.append(("max_timestamp", -3))
            if v >= 8:
                specials.append(("earliest_local", -4))
            if v >= 9:
                specials.append(("latest_tiered", -5))
            for name, ts in specials:
                r = c.request(LIST_OFFSETS, v, {
                    "replica_id": -1, "isolation_level": 0, "timeout_ms": 1000, "topics": [
                        {"name": t, "partitions": [{"partition_index": 0,
                                                    "current_leader_epoch": -1,
                                                    "timestamp": ts}]}]})
                observe(ctx, "v%d.%s" % (v, name), r["topics"][0]["partitions"][0])
        last = versions(LIST_OFFSETS)[-1]
        for label, part, epoch, ts in (("fenced-epoch", 0, 7, -1), ("old-epoch", 0, 0, -1),
                                       ("missing-partition", 3, -1, -1),
                                       ("unknown-negative", 0, -1, -9)):
            call(ctx, c, label, LIST_OFFSETS, last, {
                "replica_id": -1, "isolation_level": 0, "timeout_ms": 1000, "topics": [
                    {"name": t, "partitions": [{"partition_index": part,
                                                "current_leader_epoch": epoch,
                                                "timestamp": ts}]}]})
        call(ctx, c, "read-committed", LIST_OFFSETS, last, {
            "replica_id": -1, "isolation_level": 1, "timeout_ms": 1000, "topics": [
                {"name": t, "partitions": [{"partition_index": 0, "current_leader_epoch": -1,
                                            "timestamp": -3}]}]})
    finally:
        c.close()


@scenario("admin-offset-for-leader-epoch", masks=ADMIN_MASKS,
          expect={"v4.epoch-0.topics[0].partitions[0].end_offset": 3})
def offset_for_leader_epoch(ctx):
    t = "adm-ofle"
    topic(ctx, t, partitions=2)
    produce(ctx, "produce", t, 0, [0, 1, 2])
    c = Conn(ctx)
    try:
        def ask(label, v, parts, name=t, replica=-1):
            call(ctx, c, label, OFFSET_FOR_LEADER_EPOCH, v, {"replica_id": replica, "topics": [
                {"topic": name, "partitions": [
                    {"partition": p, "current_leader_epoch": cur, "leader_epoch": e}
                    for p, cur, e in parts]}]})
        for v in versions(OFFSET_FOR_LEADER_EPOCH):
            ask("v%d.epoch-0" % v, v, [(0, -1, 0)])
            ask("v%d.empty-partition" % v, v, [(1, -1, 0)])
            ask("v%d.current-0" % v, v, [(0, 0, 0)])
            ask("v%d.fenced" % v, v, [(0, 5, 0)])
            ask("v%d.future-epoch" % v, v, [(0, -1, 3)])
            ask("v%d.missing-partition" % v, v, [(7, -1, 0)])
            ask("v%d.missing-topic" % v, v, [(0, -1, 0)], name="adm-ofle-missing")
        ask("replica-id-1", versions(OFFSET_FOR_LEADER_EPOCH)[-1], [(0, -1, 0)], replica=1)
    finally:
        c.close()


@scenario("admin-delete-records", masks=ADMIN_MASKS,
          expect={"v0.topics[0].partitions[0].low_watermark": 1})
def delete_records(ctx):
    t = "adm-dr"
    topic(ctx, t, partitions=2)
    produce(ctx, "produce", t, 0, [0, 1, 2, 3, 4, 5])
    c = Conn(ctx)
    try:
        for v in versions(DELETE_RECORDS):  # the low watermark moves 1, 2, 3
            call(ctx, c, "v%d" % v, DELETE_RECORDS, v, {"topics": [
                {"name": t, "partitions": [{"partition_index": 0, "offset": v + 1}]}],
                "timeout_ms": 30000})
        last = versions(DELETE_RECORDS)[-1]
        for label, p, off in (("backwards", 0, 1), ("high-watermark", 0, -1),
                              ("beyond", 0, 99), ("bad-negative", 0, -7),
                              ("missing-partition", 5, 0), ("empty-partition", 1, 0)):
            call(ctx, c, label, DELETE_RECORDS, last, {"topics": [
                {"name": t, "partitions": [{"partition_index": p, "offset": off}]}],
                "timeout_ms": 30000})
        call(ctx, c, "missing-topic", DELETE_RECORDS, last, {"topics": [
            {"name": "adm-dr-missing", "partitions": [{"partition_index": 0, "offset": 0}]}],
            "timeout_ms": 30000})
    finally:
        c.close()
    ctx.hw(t)


# --- leaders and replicas -------------------------------------------------------------------


@scenario("admin-elect-leaders", masks=ADMIN_MASKS, expect={"v1.error_code": 0})
def elect_leaders(ctx):
    t = "adm-el"
    topic(ctx, t, partitions=2)
    c = Conn(ctx)
    try:
        for v in versions(ELECT_LEADERS):
            for kind, et in (("preferred", 0), ("unclean", 1)):
                if v == 0 and et != 0:
                    continue  # v0 has no election type: always preferred
                call(ctx, c, "v%d" % v if et == 0 else "v%d.%s" % (v, kind), ELECT_LEADERS, v, {
                    "election_type": et, "timeout_ms": 30000, "topic_partitions": [
                        {"topic": t, "partitions": [0, 1, 4]},
                        {"topic": "adm-el-missing", "partitions": [0]}]})
        last = versions(ELECT_LEADERS)[-1]
        call(ctx, c, "bad-type", ELECT_LEADERS, last, {
            "election_type": 5, "timeout_ms": 30000,
            "topic_partitions": [{"topic": t, "partitions": [0]}]})
        call(ctx, c, "none-listed", ELECT_LEADERS, last, {
            "election_type": 0, "timeout_ms": 30000, "topic_partitions": []})
    finally:
        c.close()


@scenario("admin-partition-reassignments", masks=ADMIN_MASKS,
          expect={"list-all.error_code": 0})
def partition_reassignments(ctx):
    t = "adm-pr"
    topic(ctx, t, partitions=2)
    c = Conn(ctx)
    try:
        call(ctx, c, "list-all", LIST_PARTITION_REASSIGNMENTS, 0,
             {"timeout_ms": 30000, "topics": None})
        call(ctx, c, "list-topic", LIST_PARTITION_REASSIGNMENTS, 0, {
            "timeout_ms": 30000, "topics": [{"name": t, "partition_indexes": [0, 1, 9]},
                                            {"name": "adm-pr-missing",
                                             "partition_indexes": [0]}]})
        for v in versions(ALTER_PARTITION_REASSIGNMENTS):
            def alter(label, partitions, allow=True, name=t):
                call(ctx, c, "v%d.%s" % (v, label), ALTER_PARTITION_REASSIGNMENTS, v, {
                    "timeout_ms": 30000, "allow_replication_factor_change": allow,
                    "topics": [{"name": name, "partitions": [
                        {"partition_index": p, "replicas": r} for p, r in partitions]}]})
            alter("same-replicas", [(0, [1])])
            alter("cancel-none-in-progress", [(1, None)])
            alter("unknown-broker", [(0, [2])])
            alter("duplicate-broker", [(0, [1, 1])])
            alter("empty-replicas", [(0, [])])
            alter("missing-partition", [(6, [1])])
            alter("missing-topic", [(0, [1])], name="adm-pr-missing")
            if v >= 1:
                alter("grow-refused", [(0, [1, 2])], allow=False)
        call(ctx, c, "list-after", LIST_PARTITION_REASSIGNMENTS, 0,
             {"timeout_ms": 30000, "topics": None})
    finally:
        c.close()
    c = ctx.conn()
    try:
        md = c.metadata([t])["topics"][0]
    finally:
        c.close()
    ctx.obs["metadata.partitions"] = [
        (p["partition_index"], p["leader_id"], p["leader_epoch"], p["replica_nodes"])
        for p in sorted(md["partitions"], key=lambda p: p["partition_index"])]


# --- client quotas ----------------------------------------------------------------------------


def quota_entries(ctx, label, r):
    """DescribeClientQuotas: entries in a fixed order (Kafka's follows its hash maps)."""
    if r is None:
        return
    entries = r.pop("entries") or []
    observe(ctx, label, r)
    rows = []
    for e in entries:
        entity = ",".join("%s=%s" % (x["entity_type"], x["entity_name"])
                          for x in sorted(e["entity"], key=lambda x: x["entity_type"]))
        values = ",".join("%s=%r" % (x["key"], x["value"])
                          for x in sorted(e["values"], key=lambda x: x["key"]))
        rows.append("%s: %s" % (entity, values))
    ctx.obs[label + ".entries"] = sorted(rows) if r["error_code"] == 0 else rows


@scenario("admin-client-quotas", masks=ADMIN_MASKS,
          expect={"set.v0.entries[0].error_code": 0})
def client_quotas(ctx):
    c = Conn(ctx)
    user_client = [("user", "adm-u"), ("client-id", "adm-c")]

    def alter(label, v, entries, validate_only=False):
        r = call(ctx, c, label, ALTER_CLIENT_QUOTAS, v, {
            "validate_only": validate_only, "entries": [
                {"entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                 "ops": [{"key": k, "value": val, "remove": rm} for k, val, rm in ops]}
                for entity, ops in entries]}, record=False)
        if r is None:
            return
        # One answer per entity, in an order of the broker's own (Kafka's follows a hash map):
        # sorted by entity, each entity's parts by type.
        for e in r["entries"]:
            e["entity"] = sorted(e["entity"], key=lambda x: x["entity_type"])
        r["entries"] = sorted(r["entries"], key=lambda e: [
            (x["entity_type"], str(x["entity_name"])) for x in e["entity"]])
        observe(ctx, label, r)

    def describe(label, v, components, strict=False):
        r = c.request(DESCRIBE_CLIENT_QUOTAS, v, {"strict": strict, "components": [
            {"entity_type": t, "match_type": m, "match": n} for t, m, n in components]})
        quota_entries(ctx, label, r)

    try:
        for v in versions(ALTER_CLIENT_QUOTAS):
            alter("set.v%d" % v, v, [
                ([("client-id", "adm-c%d" % v)], [("producer_byte_rate", 1048576.0 + v, False)]),
                (user_client, [("consumer_byte_rate", 2097152.0, False),
                               ("request_percentage", 50.0 + v, False)]),
                ([("client-id", None)], [("controller_mutation_rate", 100.0, False)])])
        last = versions(ALTER_CLIENT_QUOTAS)[-1]
        alter("validate-only", last, [([("client-id", "adm-v")],
                                       [("producer_byte_rate", 5.0, False)])], validate_only=True)
        for label, entries in (
                ("unknown-key", [([("client-id", "adm-c")], [("no_such_rate", 1.0, False)])]),
                ("unknown-entity-type", [([("group", "g")], [("producer_byte_rate", 1.0,
                                                              False)])]),
                ("ip-with-client-id", [([("ip", "127.0.0.1"), ("client-id", "x")],
                                        [("connection_creation_rate", 1.0, False)])]),
                ("non-integer-rate", [([("client-id", "adm-c")],
                                       [("producer_byte_rate", 1.5, False)])]),
                ("negative", [([("client-id", "adm-c")], [("producer_byte_rate", -1.0, False)])]),
                ("zero-quota", [([("client-id", "adm-c")], [("request_percentage", 0.0,
                                                             False)])]),
                ("empty-entity", [([], [("producer_byte_rate", 1.0, False)])])):
            alter(label, last, entries)
        for v in versions(DESCRIBE_CLIENT_QUOTAS):
            describe("exact.v%d" % v, v, [("client-id", 0, "adm-c%d" % v)])
            describe("user-any.v%d" % v, v, [("user", 0, "adm-u")])
            describe("user-any-strict.v%d" % v, v, [("user", 0, "adm-u")], strict=True)
            describe("user-and-client.v%d" % v, v, [("user", 0, "adm-u"),
                                                   ("client-id", 0, "adm-c")], strict=True)
            describe("default-client.v%d" % v, v, [("client-id", 1, None)])
            describe("any-client.v%d" % v, v, [("client-id", 2, None)])
        last = versions(DESCRIBE_CLIENT_QUOTAS)[-1]
        describe("unknown-entity-type", last, [("group", 0, "g")])
        describe("bad-match-type", last, [("client-id", 7, "x")])
        describe("duplicate-component", last, [("client-id", 0, "a"), ("client-id", 0, "b")])
        describe("exact-without-match", last, [("client-id", 0, None)])
        # Kafka keeps the last client-id (b) and sets its quota; tarn refuses the entity. After the
        # describes, which would list b on one broker only.
        alter("duplicate-entity-type", last, [([("client-id", "a"), ("client-id", "b")],
                                                [("producer_byte_rate", 1.0, False)])])
        # Put everything back: later scenarios run unthrottled.
        remove = [([("client-id", "adm-c%d" % v)], [("producer_byte_rate", 0.0, True)])
                  for v in versions(ALTER_CLIENT_QUOTAS)]
        remove += [(user_client, [("consumer_byte_rate", 0.0, True),
                                  ("request_percentage", 0.0, True)]),
                   ([("client-id", None)], [("controller_mutation_rate", 0.0, True)]),
                   ([("client-id", "b")], [("producer_byte_rate", 0.0, True)])]
        alter("remove", last, remove)
        # Kafka answers AlterClientQuotas once its controller committed the change; the broker
        # that serves DescribeClientQuotas applies it from the metadata log a moment later, so
        # a describe at once can still list them (seen once in 89 scenarios). Up to 5 s for the
        # end state on either broker.
        deadline = time.time() + 5
        while True:
            describe("after-remove", last, [("client-id", 2, None)])
            if not ctx.obs.get("after-remove.entries") or time.time() > deadline:
                break
            time.sleep(0.1)
    finally:
        c.close()


# --- features ---------------------------------------------------------------------------------


@scenario("admin-update-features-validate-only", masks=ADMIN_MASKS,
          expect={"v1.valid.error_code": 0})
def update_features(ctx):
    c = Conn(ctx)
    try:
        # Levels as both brokers finalize them at start: metadata.version 33, group.version 1.
        # v0 has no validate_only: there only refusals and no-ops are sent.
        for v in versions(UPDATE_FEATURES):
            def update(label, updates, validate_only=True):
                call(ctx, c, "v%d.%s" % (v, label), UPDATE_FEATURES, v, {
                    "timeout_ms": 30000, "validate_only": validate_only, "feature_updates": [
                        {"feature": f, "max_version_level": lvl, "allow_downgrade": dg == 2,
                         "upgrade_type": dg} for f, lvl, dg in updates]})
            if v >= 1:
                update("valid", [("group.version", 0, 2), ("metadata.version", 33, 1)])
            update("unknown-feature", [("foo.version", 1, 1)])
            update("too-high", [("group.version", 2, 1)])
            update("downgrade-as-upgrade", [("group.version", 0, 1)])
            update("metadata-downgrade", [("metadata.version", 32, 2)])
            update("unsafe-downgrade", [("metadata.version", 32, 3)])
            update("negative", [("group.version", -1, 2)])
            update("bad-upgrade-type", [("group.version", 1, 0)])
            update("none", [])
            update("duplicate", [("group.version", 1, 1), ("group.version", 1, 1)])
    finally:
        c.close()


# The transaction admin scenarios register after these (txn_admin_scenarios.py).
from . import txn_admin_scenarios  # noqa: E402,F401
