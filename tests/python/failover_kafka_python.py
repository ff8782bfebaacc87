#!/usr/bin/python3
"""kafka-python (Debian's 2.0.2) against a cluster whose partition leader is killed, for
tests/cluster_failover_test.cc, with the arguments of failover_clients.py (its confluent-kafka
twin): an acks=all producer with retries across the fail-over, then a consumer in a group that
must read every acknowledged record once, in order, at its offset (tests/python/failover_check.py).

kafka-python 2.0.2 has no idempotent producer (enable.idempotence came with 2.1), so a batch the
dead leader had replicated but not acknowledged is written again by its retry: the same value at
a second offset. That copy was never acknowledged, so it is allowed (and counted); one in-flight
request per connection keeps each partition's acknowledged records in send order."""

import os
import sys
import time

from kafka import KafkaConsumer, KafkaProducer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import failover_check  # noqa: E402


def produce(bootstrap, topic, partitions, seconds, acked_file):
    p = KafkaProducer(
        bootstrap_servers=bootstrap.split(","),
        acks="all",
        retries=1000,
        max_in_flight_requests_per_connection=1,
        linger_ms=5,
        request_timeout_ms=10000,
        retry_backoff_ms=50,
        reconnect_backoff_ms=50,
        reconnect_backoff_max_ms=500,
        metadata_max_age_ms=1000,
    )
    log = failover_check.acks()

    def send(value, partition):
        future = p.send(topic, value.encode(), partition=partition)
        future.add_callback(lambda md: log.ok(md.partition, md.offset, value))
        future.add_errback(lambda e: log.error(value, repr(e)))

    def flush():
        p.flush(40)
        p.close(5)
        return 0  # what is not acknowledged by now has failed through its errback

    return failover_check.produce(send, lambda: time.sleep(0.004), flush, partitions, seconds,
                                  acked_file, log)


def consume(bootstrap, topic, group, acked_file, seconds):
    c = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap.split(","),
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=True,
    )

    def poll():
        return [(m.partition, m.offset, m.value.decode())
                for records in c.poll(timeout_ms=500).values() for m in records]

    return failover_check.consume(poll, c.close, acked_file, seconds, retried_copies=True)


if __name__ == "__main__":
    sys.exit(failover_check.main(produce, consume))
