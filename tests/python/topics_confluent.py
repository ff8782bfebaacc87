# Topic management through confluent-kafka-python's AdminClient (librdkafka): create with configs,
# list via metadata, describe configs, alter (non-incremental AlterConfigs is not served, so only
# describe), delete. Prints canonical lines; exits 1 on failure.
# Run: /usr/bin/python3 topics_confluent.py host:port topic-prefix
import sys

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

bootstrap, prefix = sys.argv[1], sys.argv[2]
topic = prefix + "-confluent"
admin = AdminClient({"bootstrap.servers": bootstrap})


def error_of(futures):
    for f in futures.values():
        try:
            f.result(20)
        except KafkaException as e:
            return "%s %s" % (e.args[0].name(), e.args[0].str())
    return "none"


print("create:", error_of(admin.create_topics(
    [NewTopic(topic, 4, 1, config={"cleanup.policy": "compact", "retention.ms": "12345"})])))
print("create again:", error_of(admin.create_topics([NewTopic(topic, 1, 1)])))
print("create rf 3:", error_of(admin.create_topics([NewTopic(topic + "-rf", 1, 3)])))
md = admin.list_topics(timeout=20)
t = md.topics[topic]
print("metadata partitions:", len(t.partitions), "leaders:",
      sorted({p.leader for p in t.partitions.values()}), "brokers:", sorted(md.brokers))
res = ConfigResource("topic", topic)
configs = admin.describe_configs([res])[res].result(20)
print("describe cleanup.policy:", configs["cleanup.policy"].value,
      "retention.ms:", configs["retention.ms"].value,
      "source:", configs["retention.ms"].source,
      "segment.bytes source:", configs["segment.bytes"].source)
broker = ConfigResource("broker", "1")
bconf = admin.describe_configs([broker])[broker].result(20)
print("broker num.partitions:", bconf["num.partitions"].value)
print("delete:", error_of(admin.delete_topics([topic])))
print("delete again:", error_of(admin.delete_topics([topic])))
print("listed after delete:", topic in admin.list_topics(timeout=20).topics)
print("DONE")
