#!/usr/bin/python3
"""confluent-kafka (librdkafka) against a cluster whose partition leader is killed, for
tests/cluster_failover_test.cc: an idempotent acks=all producer across the fail-over, then a
consumer in a group that must read every acknowledged record once, in order, at its offset.
Modes, arguments and checks: tests/python/failover_check.py."""

import os
import sys

import confluent_kafka

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import failover_check  # noqa: E402


def produce(bootstrap, topic, partitions, seconds, acked_file):
    p = confluent_kafka.Producer({
        "bootstrap.servers": bootstrap,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        "message.timeout.ms": 40000,
        "request.timeout.ms": 5000,
        "retry.backoff.ms": 50,
        "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 500,
        "topic.metadata.refresh.interval.ms": 1000,
    })
    log = failover_check.acks()

    def delivered(err, msg):
        if err is not None:
            log.error(msg.value().decode(), err)
        else:
            log.ok(msg.partition(), msg.offset(), msg.value().decode())

    return failover_check.produce(
        lambda value, partition: p.produce(topic, value.encode(), partition=partition,
                                           on_delivery=delivered),
        lambda: p.poll(0.004), lambda: p.flush(40), partitions, seconds, acked_file, log)


def consume(bootstrap, topic, group, acked_file, seconds):
    c = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": True,
    })
    c.subscribe([topic])

    def poll():
        msg = c.poll(0.5)
        if msg is None:
            return []
        if msg.error():
            if msg.error().code() != confluent_kafka.KafkaError._PARTITION_EOF:
                print("consumer error: %s" % msg.error(), flush=True)
            return []
        return [(msg.partition(), msg.offset(), msg.value().decode())]

    return failover_check.consume(poll, c.close, acked_file, seconds, retried_copies=False)


if __name__ == "__main__":
    sys.exit(failover_check.main(produce, consume))
