# The admin calls confluent-kafka-python 2.x (librdkafka 2.x) has and Debian 12's 1.7.0 does not
# (admin_confluent.py covers those it has), against a fresh topic: create_topics,
# create_partitions (validate_only), describe_topics, describe_cluster, incremental_alter_configs
# (SET, APPEND, DELETE on a topic; SET and DELETE on the broker) read back with describe_configs,
# list_offsets (earliest, latest, max_timestamp, by timestamp), delete_records, elect_leaders,
# describe_user_scram_credentials, list_consumer_groups / describe_consumer_groups /
# list_consumer_group_offsets after a member of a group committed, delete_topics.
# Prints a JSON object, one step a line, with what must differ between brokers normalised (topic
# ids, the cluster id, member ids, ports; timestamps are printed relative to base-timestamp-ms),
# so that the output against tarn and against Kafka 4.4.0 is the same text; exits 1 on failure.
# Run: /opt/tarn/py-confluent2/bin/python admin_confluent2.py host:port topic-prefix base-ts-ms
import json
import sys
import time

from confluent_kafka import (Consumer, ConsumerGroupTopicPartitions, ElectionType, KafkaException,
                             Producer, TopicCollection, TopicPartition)
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewPartitions, NewTopic, OffsetSpec)

bootstrap, prefix, base_ts = sys.argv[1], sys.argv[2], int(sys.argv[3])
port = int(bootstrap.rsplit(":", 1)[1])
topic = prefix + "-ck2"
group = prefix + "-ck2-group"
# log_level 4: librdkafka's notices (partition counts changing) are not part of the output.
admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 4})
steps = []


def step(name, value):
    steps.append((name, value))


def error(e):
    """A KafkaError (or the KafkaException carrying one) as [name, message]."""
    if isinstance(e, KafkaException):
        e = e.args[0]
    return None if e is None else [e.name(), e.str()]


def outcome(future, show=lambda r: r):
    try:
        return {"ok": show(future.result(20))}
    except KafkaException as e:
        return {"error": error(e)}


def outcomes(futures, show=lambda r: r):
    """A dict of futures (keyed by name, TopicPartition or ConfigResource), in key order."""
    ordered = sorted(futures.items(), key=lambda kv: key_of(kv[0]))
    return [[key_of(k), outcome(f, show)] for k, f in ordered]


def key_of(k):
    if isinstance(k, TopicPartition):
        return "%s-%d" % (k.topic, k.partition)
    if isinstance(k, ConfigResource):
        return "%s:%s" % (k.restype.name, k.name)
    return str(k)


def node(n):
    return None if n is None else {"id": n.id, "host": n.host,
                                   "port": "<port>" if n.port == port else n.port, "rack": n.rack}


def describe_topic(d):
    return {"name": d.name, "topic_id": "<id>" if d.topic_id else None,
            "is_internal": d.is_internal, "authorized_operations": d.authorized_operations,
            "partitions": [{"id": p.id, "leader": node(p.leader),
                            "replicas": [r.id for r in p.replicas], "isr": [r.id for r in p.isr]}
                           for p in d.partitions]}


def describe_topics(names):
    return outcomes(admin.describe_topics(TopicCollection(names),
                                          include_authorized_operations=False), describe_topic)


def partition_count(expected):
    """The partitions describe_topics shows, waiting up to 10 s for `expected` (Kafka's brokers
    learn a change from the metadata log a moment after the answer)."""
    deadline = time.time() + 10
    while True:
        d = admin.describe_topics(TopicCollection([topic]))[topic]
        try:
            n = len(d.result(20).partitions)
        except KafkaException:
            n = -1
        if n == expected or time.time() > deadline:
            return n
        time.sleep(0.1)


def configs(resource, keys):
    entries = admin.describe_configs([resource])[resource].result(20)
    return {k: [entries[k].value, entries[k].source] for k in keys}


def wait_configs(resource, keys, want):
    """Configs of a resource, waiting up to 10 s for `want` (as partition_count)."""
    deadline = time.time() + 10
    seen = configs(resource, keys)
    while seen != want and time.time() < deadline:
        time.sleep(0.2)
        seen = configs(resource, keys)
    return seen


def incremental(resource_type, name, *ops):
    entries = [ConfigEntry(k, v, incremental_operation=op) for op, k, v in ops]
    return outcomes(admin.incremental_alter_configs(
        [ConfigResource(resource_type, name, incremental_configs=entries)]))


def offsets(specs):
    """list_offsets of partition -> OffsetSpec; timestamps relative to base_ts."""
    def show(r):
        return {"offset": r.offset,
                "timestamp": r.timestamp - base_ts if r.timestamp >= 0 else r.timestamp}
    return outcomes(admin.list_offsets({TopicPartition(topic, p): s for p, s in specs.items()}),
                    show)


# create_topics, create_partitions
step("create", outcomes(admin.create_topics([NewTopic(topic, 2, 1)])))
step("partitions after create", partition_count(2))
step("create again", outcomes(admin.create_topics([NewTopic(topic, 2, 1)])))
step("validate to 4", outcomes(admin.create_partitions([NewPartitions(topic, 4)],
                                                       validate_only=True)))
time.sleep(0.5)
step("partitions after validate", partition_count(2))
step("grow to 3", outcomes(admin.create_partitions([NewPartitions(topic, 3)])))
step("partitions after grow", partition_count(3))
step("validate shrink to 2", outcomes(admin.create_partitions([NewPartitions(topic, 2)],
                                                              validate_only=True)))

# describe_topics, describe_cluster
step("describe topics", describe_topics([topic, topic + "-missing"]))
cluster = admin.describe_cluster(include_authorized_operations=False).result(20)
step("describe cluster", {"cluster_id": "<cluster-id>" if cluster.cluster_id else None,
                          "controller": node(cluster.controller),
                          "nodes": [node(n) for n in sorted(cluster.nodes, key=lambda n: n.id)],
                          "authorized_operations": cluster.authorized_operations})

# incremental_alter_configs and describe_configs: a topic, then the broker.
SET, APPEND, DELETE = AlterConfigOpType.SET, AlterConfigOpType.APPEND, AlterConfigOpType.DELETE
tres = ConfigResource("topic", topic)
tkeys = ["cleanup.policy", "retention.ms", "segment.bytes"]
step("topic configs before", configs(tres, tkeys))
step("topic set", incremental("topic", topic, (SET, "retention.ms", "5000"),
                              (SET, "cleanup.policy", "compact")))
step("topic configs after set", wait_configs(tres, tkeys, {
    "cleanup.policy": ["compact", 1], "retention.ms": ["5000", 1],
    "segment.bytes": ["1073741824", 5]}))
step("topic append", incremental("topic", topic, (APPEND, "cleanup.policy", "delete")))
step("topic delete", incremental("topic", topic, (DELETE, "retention.ms", None)))
step("topic configs after delete", wait_configs(tres, tkeys, {
    "cleanup.policy": ["compact,delete", 1], "retention.ms": ["604800000", 5],
    "segment.bytes": ["1073741824", 5]}))
step("topic set bad value", incremental("topic", topic, (SET, "retention.ms", "soon")))
step("topic set unknown", incremental("topic", topic, (SET, "no.such.config", "1")))
step("missing topic set", incremental("topic", topic + "-missing", (SET, "retention.ms", "1")))
bres = ConfigResource("broker", "1")
bkeys = ["log.retention.ms"]
step("broker set", incremental("broker", "1", (SET, "log.retention.ms", "3600000")))
step("broker configs after set", wait_configs(bres, bkeys, {"log.retention.ms": ["3600000", 2]}))
step("broker delete", incremental("broker", "1", (DELETE, "log.retention.ms", None)))
step("broker configs after delete", wait_configs(bres, bkeys, {"log.retention.ms": [None, 5]}))
step("broker set read-only", incremental("broker", "1", (SET, "log.dirs", "/x")))

# list_offsets on records with fixed times (base, base+5, base+2 in partition 0; two in 1).
producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
for p, delta in [(0, 0), (0, 5), (0, 2), (1, 1), (1, 3)]:
    producer.produce(topic, key=b"k", value=b"v%d" % delta, partition=p, timestamp=base_ts + delta)
    producer.flush(20)
step("offsets", offsets({0: OffsetSpec.earliest(), 1: OffsetSpec.latest(),
                         2: OffsetSpec.max_timestamp()}))
step("offsets p0", [[name, offsets({0: spec})] for name, spec in [
    ("earliest", OffsetSpec.earliest()), ("latest", OffsetSpec.latest()),
    ("max_timestamp", OffsetSpec.max_timestamp()), ("for +0", OffsetSpec.for_timestamp(base_ts)),
    ("for +1", OffsetSpec.for_timestamp(base_ts + 1)),
    ("for +5", OffsetSpec.for_timestamp(base_ts + 5)),
    ("for +6", OffsetSpec.for_timestamp(base_ts + 6))]])
step("offsets missing partition", outcomes(admin.list_offsets(
    {TopicPartition(topic, 7): OffsetSpec.latest()})))

# delete_records: before offset 2 in partition 0; everything in partition 2 (empty); past the end.
step("delete records", outcomes(admin.delete_records(
    [TopicPartition(topic, 0, 2), TopicPartition(topic, 2, -1)]),
    lambda r: {"low_watermark": r.low_watermark}))
step("delete records past the end", outcomes(admin.delete_records(
    [TopicPartition(topic, 1, 9)]), lambda r: {"low_watermark": r.low_watermark}))
step("offsets after delete records", offsets({0: OffsetSpec.earliest(), 1: OffsetSpec.earliest()}))

# elect_leaders: a single node is every partition's preferred leader already.
try:
    elected = admin.elect_leaders(ElectionType.PREFERRED,
                                  [TopicPartition(topic, 0), TopicPartition(topic, 2)]).result(20)
    step("elect preferred", [[key_of(tp), error(e)] for tp, e in
                             sorted(elected.items(), key=lambda kv: key_of(kv[0]))])
except KafkaException as e:
    step("elect preferred", {"error": error(e)})
try:
    elected = admin.elect_leaders(ElectionType.PREFERRED,
                                  [TopicPartition(topic + "-missing", 0)]).result(20)
    step("elect missing topic", [[key_of(tp), error(e)] for tp, e in elected.items()])
except KafkaException as e:
    step("elect missing topic", {"error": error(e)})


# describe_user_scram_credentials: no user has any.
def scram(d):
    return {"user": d.user, "credentials": sorted([c.mechanism.name, c.iterations]
                                                  for c in d.scram_credential_infos)}


try:
    every = admin.describe_user_scram_credentials().result(20)
    step("scram all", sorted([u, scram(d)] for u, d in every.items()))
except KafkaException as e:
    step("scram all", {"error": error(e)})
step("scram named", outcomes(admin.describe_user_scram_credentials(["alice", "bob"]), scram))

# Consumer groups: a member reads partitions 0 and 1 (3 records) and commits.
consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": "ck2-member",
                     "auto.offset.reset": "earliest", "enable.auto.commit": False,
                     "log_level": 4})
consumer.subscribe([topic])
got, deadline = [], time.time() + 60
while len(got) < 3 and time.time() < deadline:
    m = consumer.poll(0.5)
    if m is not None and m.error() is None:
        got.append("%d@%d" % (m.partition(), m.offset()))
step("consumed", sorted(got))
consumer.commit(asynchronous=False)


def describe_group(d):
    return {"group_id": d.group_id, "is_simple": d.is_simple_consumer_group,
            "state": d.state.name, "type": d.type.name, "assignor": d.partition_assignor,
            "coordinator": node(d.coordinator), "authorized_operations": d.authorized_operations,
            "members": [{"member_id": "<member-id>" if m.member_id else None,
                         "client_id": m.client_id, "host": m.host,
                         "group_instance_id": m.group_instance_id,
                         "assignment": sorted(key_of(tp) for tp in m.assignment.topic_partitions)}
                        for m in d.members]}


def group_offsets(r):
    return sorted([key_of(tp), tp.offset, tp.metadata, error(tp.error)]
                  for tp in r.topic_partitions)


def listed_groups():
    r = admin.list_consumer_groups().result(20)
    return {"errors": [error(e) for e in r.errors],
            "valid": sorted([g.group_id, g.is_simple_consumer_group, g.state.name, g.type.name]
                            for g in r.valid if g.group_id.startswith(prefix + "-"))}


step("groups with a member", listed_groups())
step("describe group with a member", outcomes(admin.describe_consumer_groups([group]),
                                              describe_group))
consumer.close()
step("groups after close", listed_groups())
step("describe group after close", outcomes(admin.describe_consumer_groups(
    [group, prefix + "-never"]), describe_group))
step("group offsets", outcomes(admin.list_consumer_group_offsets(
    [ConsumerGroupTopicPartitions(group)]), group_offsets))
step("group offsets asked", outcomes(admin.list_consumer_group_offsets(
    [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 1), TopicPartition(topic, 2)])]),
    group_offsets))

# delete_topics
step("delete", outcomes(admin.delete_topics([topic])))
step("delete again", outcomes(admin.delete_topics([topic])))

print("{")
print(",\n".join("%s: %s" % (json.dumps(k), json.dumps(v, sort_keys=True)) for k, v in steps))
print("}")
