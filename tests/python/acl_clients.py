#!/usr/bin/python3
"""A real client (confluent-kafka, librdkafka) against a broker with ACLs, for tests/acl_test.cc.
Prints one result per line:

  produce TOPIC ok|ERROR      a delivery report of one record to TOPIC
  consume TOPIC GROUP N|ERROR a group member subscribed to TOPIC from the beginning: the number of
                              records it read before the topic's end, or the error it got
  topics T1,T2,...            the topics the cluster's metadata lists (list_topics), sorted

  acl_clients.py BOOTSTRAP ALLOWED_TOPIC DENIED_TOPIC ALLOWED_GROUP DENIED_GROUP

Bounded: every wait has a deadline; exits 0 when it could run the steps, whatever they answered.
"""
import sys
import time

from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def produce(bootstrap, topic):
    result = []
    p = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 5000,
                  "enable.idempotence": False})
    p.produce(topic, b"value", on_delivery=lambda err, msg: result.append(err))
    p.flush(10)
    if not result:
        return "no-report"
    err = result[0]
    return "ok" if err is None else err.name()


def consume(bootstrap, topic, group):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "auto.offset.reset": "earliest", "enable.partition.eof": True,
                  "session.timeout.ms": 6000})
    c.subscribe([topic])
    n = 0
    deadline = time.time() + 15
    try:
        while time.time() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    return str(n)
                return m.error().name()
            n += 1
        return "timeout after %d" % n
    finally:
        c.close()


def main():
    bootstrap, allowed, denied, group_ok, group_no = sys.argv[1:6]
    say("produce %s %s" % (allowed, produce(bootstrap, allowed)))
    say("produce %s %s" % (denied, produce(bootstrap, denied)))
    say("consume %s %s %s" % (allowed, group_ok, consume(bootstrap, allowed, group_ok)))
    say("consume %s %s %s" % (allowed, group_no, consume(bootstrap, allowed, group_no)))
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
    say("topics " + ",".join(sorted(md.topics)))


if __name__ == "__main__":
    main()
