# Topic management through kafka-python 2.0.2 (Debian's python3-kafka): KafkaAdminClient's
# CreateTopics/DescribeConfigs/DeleteTopics and Metadata v0/v1 through its KafkaClient.
# Run: /usr/bin/python3 topics_kafka_python.py host:port topic-prefix
import sys
import time

from kafka import KafkaAdminClient, KafkaClient
from kafka.errors import TopicAlreadyExistsError
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
from kafka.protocol.metadata import MetadataRequest

bootstrap, prefix = sys.argv[1], sys.argv[2]
topic = prefix + "-kpy"
admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=20000)
r = admin.create_topics([NewTopic(topic, 2, 1, topic_configs={"retention.ms": "777"})])
print("create errors:", [(name, code) for name, code, *_ in r.topic_errors])
try:
    admin.create_topics([NewTopic(topic, 2, 1)])
    print("create again: no error")
except TopicAlreadyExistsError as e:
    print("create again: TopicAlreadyExistsError")
print("listed:", topic in admin.list_topics())
cr = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
entries = {e[0]: e[1] for e in cr[0].resources[0][4]}
print("describe retention.ms:", entries["retention.ms"])

client = KafkaClient(bootstrap_servers=bootstrap, api_version=(0, 10, 0))
node = client.least_loaded_node()
deadline = time.time() + 20
while not client.ready(node) and time.time() < deadline:
    client.poll(timeout_ms=100)


def send(request):
    future = client.send(node, request)
    while not future.is_done and time.time() < deadline:
        client.poll(timeout_ms=100)
    if future.failed():
        raise future.exception
    return future


for version in (0, 1):
    future = send(MetadataRequest[version]([topic]))
    t = future.value.topics[0]
    print("metadata v%d: error %d name %s partitions %d" % (version, t[0], t[1], len(t[-1])))
future = send(MetadataRequest[0]([]))
print("metadata v0 all topics has it:", topic in [t[1] for t in future.value.topics])
client.close()
r = admin.delete_topics([topic])
print("delete errors:", [(name, code) for name, code in r.topic_error_codes])
admin.close()
print("DONE")
