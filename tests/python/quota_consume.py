#!/usr/bin/python3
"""Consumes a topic from its start as fast as it can for a while with confluent-kafka (librdkafka)
under one client.id, and prints what it received: for the quota tests, which compare the rate a
limited consumer reached with its consumer_byte_rate.

  quota_consume.py BOOTSTRAP TOPIC CLIENT_ID SECONDS WARMUP_SECONDS

Prints one JSON object: the value bytes received in [WARMUP, SECONDS) and their rate (bytes a
second), every value byte received, the throttle times librdkafka saw (its statistics'
brokers.*.throttle avg/max, ms) and the number of consumer errors. It assigns partition 0 itself
(no group), so two of these on one topic read it independently."""
import json
import sys
import time

import confluent_kafka


def main():
    bootstrap, topic, client_id = sys.argv[1:4]
    seconds, warmup = float(sys.argv[4]), float(sys.argv[5])
    stats = {"throttle_max": 0, "throttle_avg": 0}

    def on_stats(js):
        for b in json.loads(js).get("brokers", {}).values():
            t = b.get("throttle", {})
            stats["throttle_max"] = max(stats["throttle_max"], t.get("max", 0))
            stats["throttle_avg"] = max(stats["throttle_avg"], t.get("avg", 0))

    c = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "client.id": client_id,
                                  "group.id": client_id, "enable.auto.commit": False,
                                  # Small fetches: a 1 MiB answer is a second of a 1 MiB/s
                                  # quota at once, which the throttle then holds back whole.
                                  "fetch.max.bytes": 65536, "max.partition.fetch.bytes": 65536,
                                  "message.max.bytes": 65536,
                                  "statistics.interval.ms": 1000, "stats_cb": on_stats})
    c.assign([confluent_kafka.TopicPartition(topic, 0, confluent_kafka.OFFSET_BEGINNING)])
    start = time.monotonic()
    counted = {"bytes": 0, "total": 0, "records": 0, "errors": 0}
    while time.monotonic() - start < seconds:
        for m in c.consume(num_messages=1000, timeout=0.1):
            if m.error() is not None:
                if m.error().code() != confluent_kafka.KafkaError._PARTITION_EOF:
                    counted["errors"] += 1
                continue
            t = time.monotonic() - start
            n = len(m.value())
            counted["total"] += n
            counted["records"] += 1
            if warmup <= t < seconds:
                counted["bytes"] += n
    c.poll(1.5)  # a last statistics callback
    c.close()
    span = seconds - warmup
    print(json.dumps({"received_bytes": counted["bytes"], "total_bytes": counted["total"],
                      "records": counted["records"], "rate": counted["bytes"] / span,
                      "errors": counted["errors"], "throttle_max_ms": stats["throttle_max"],
                      "throttle_avg_ms": stats["throttle_avg"]}))


if __name__ == "__main__":
    main()
