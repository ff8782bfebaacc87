# The admin calls of confluent-kafka-python (librdkafka) beyond topics_confluent.py, as far as
# Debian 12's confluent-kafka 1.7.0 has them: create_partitions (validate_only, assignments, the
# count errors), the legacy alter_configs for a topic and for the broker (read back with
# describe_configs), list_topics for the partitions, and a consumer's ListOffsets (watermarks and
# offsets_for_times). incremental_alter_configs, describe_cluster, describe_topics, list_offsets,
# delete_records and elect_leaders came with confluent-kafka 2.x. Prints canonical lines, the same
# against tarn and Kafka 4.4.0; exits 1 on failure.
# Run: /usr/bin/python3 admin_confluent.py host:port topic-prefix base-timestamp-ms
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

bootstrap, prefix, base_ts = sys.argv[1], sys.argv[2], int(sys.argv[3])
topic = prefix + "-adm"
# log_level 4: librdkafka's notices (partition counts changing) are not part of the output.
admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 4})


def error_of(futures):
    for f in futures.values():
        try:
            f.result(20)
        except KafkaException as e:
            return "%s %s" % (e.args[0].name(), e.args[0].str())
    return "none"


def partitions(name, expected=None):
    """The partition count Metadata shows; with expected, waits up to 10 s for it (Kafka's
    brokers learn a change from the metadata log a moment after the answer)."""
    deadline = time.time() + (10 if expected is not None else 0)
    while True:
        t = admin.list_topics(name, timeout=20).topics[name]
        n = len(t.partitions) if t.error is None else -1
        if expected is None or n == expected or time.time() > deadline:
            return n
        time.sleep(0.1)


def configs(resource, keys):
    entries = admin.describe_configs([resource])[resource].result(20)
    return " ".join("%s=%s:%d" % (k, entries[k].value, entries[k].source) for k in keys)


def wait_configs(resource, keys, want):
    deadline = time.time() + 10
    seen = configs(resource, keys)
    while seen != want and time.time() < deadline:
        time.sleep(0.2)
        seen = configs(resource, keys)
    return seen


print("create:", error_of(admin.create_topics(
    [NewTopic(topic, 2, 1, config={"cleanup.policy": "compact"})])))
print("partitions:", partitions(topic, 2))

# create_partitions
print("validate to 4:", error_of(admin.create_partitions([NewPartitions(topic, 4)],
                                                         validate_only=True)))
time.sleep(0.5)
print("after validate:", partitions(topic))
print("grow to 3:", error_of(admin.create_partitions([NewPartitions(topic, 3)])))
print("after grow:", partitions(topic, 3))
print("again 3:", error_of(admin.create_partitions([NewPartitions(topic, 3)])))
print("shrink to 2:", error_of(admin.create_partitions([NewPartitions(topic, 2)])))
print("missing topic:", error_of(admin.create_partitions([NewPartitions(topic + "-x", 2)])))
print("assign [1]:", error_of(admin.create_partitions(
    [NewPartitions(topic, 4, replica_assignment=[[1]])])))
print("after assign:", partitions(topic, 4))
print("assign [7]:", error_of(admin.create_partitions(
    [NewPartitions(topic, 5, replica_assignment=[[7]])])))
print("assign two for one:", error_of(admin.create_partitions(
    [NewPartitions(topic, 5, replica_assignment=[[1], [1]])])))
# librdkafka refuses counts above 100,000 itself; the broker refuses more than 10,000 new ones.
print("a hundred thousand:", error_of(admin.create_partitions([NewPartitions(topic, 100000)])))

# Legacy AlterConfigs: the given set replaces a resource's overrides.
res = ConfigResource("topic", topic, set_config={"retention.ms": "5000"})
print("alter topic:", error_of(admin.alter_configs([res])))
keys = ["cleanup.policy", "retention.ms"]
print("topic configs:", wait_configs(ConfigResource("topic", topic), keys,
                                     "cleanup.policy=delete:5 retention.ms=5000:1"))
bad = ConfigResource("topic", topic, set_config={"retention.ms": "soon"})
print("alter topic bad value:", error_of(admin.alter_configs([bad])))
missing = ConfigResource("topic", topic + "-x", set_config={"retention.ms": "1"})
print("alter missing topic:", error_of(admin.alter_configs([missing])))
broker = ConfigResource("broker", "1", set_config={"log.retention.ms": "7200000"})
print("alter broker:", error_of(admin.alter_configs([broker])))
bkeys = ["log.retention.ms"]
print("broker configs:", wait_configs(ConfigResource("broker", "1"), bkeys,
                                      "log.retention.ms=7200000:2"))
print("alter broker read-only:", error_of(admin.alter_configs(
    [ConfigResource("broker", "1", set_config={"log.dirs": "/x"})])))
print("alter broker validate only:", error_of(admin.alter_configs(
    [ConfigResource("broker", "1", set_config={"num.io.threads": "4"})], validate_only=True)))
print("clear broker:", error_of(admin.alter_configs([ConfigResource("broker", "1",
                                                                    set_config={})])))
print("broker configs after clear:", wait_configs(ConfigResource("broker", "1"), bkeys,
                                                  "log.retention.ms=None:5"))

# ListOffsets through a consumer: watermarks and lookups by time, on records with fixed times
# (base, base+5, base+2 in partition 0).
producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
for i, delta in enumerate([0, 5, 2]):
    producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i, partition=0,
                     timestamp=base_ts + delta)
    producer.flush(20)
consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": prefix + "-adm-offsets",
                     "enable.auto.commit": False})
print("watermarks p0:", consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=20))
print("watermarks p1:", consumer.get_watermark_offsets(TopicPartition(topic, 1), timeout=20))
for delta in (0, 1, 3, 5, 6):
    found = consumer.offsets_for_times([TopicPartition(topic, 0, base_ts + delta)], timeout=20)
    print("offset for time +%d:" % delta, found[0].offset, found[0].error)
consumer.close()

print("delete:", error_of(admin.delete_topics([topic])))
print("DONE")
