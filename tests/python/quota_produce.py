#!/usr/bin/python3
"""Produces as fast as it can for a while with confluent-kafka (librdkafka) under one client.id,
and prints what was acknowledged: for the quota tests, which compare the rate a limited client
reached with its producer_byte_rate.

  quota_produce.py BOOTSTRAP TOPIC CLIENT_ID SECONDS WARMUP_SECONDS VALUE_BYTES

Prints one JSON object: acked_bytes and acked_records in [WARMUP, SECONDS), the rate over that
span (bytes a second, the values' bytes), the throttle times librdkafka saw (its statistics'
brokers.*.throttle avg/max, ms) and the number of delivery errors."""
import json
import sys
import time

import confluent_kafka


def main():
    bootstrap, topic, client_id = sys.argv[1:4]
    seconds, warmup, size = float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
    stats = {"throttle_max": 0, "throttle_avg": 0}

    def on_stats(js):
        for b in json.loads(js).get("brokers", {}).values():
            t = b.get("throttle", {})
            stats["throttle_max"] = max(stats["throttle_max"], t.get("max", 0))
            stats["throttle_avg"] = max(stats["throttle_avg"], t.get("avg", 0))

    p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "client.id": client_id,
                                  "linger.ms": 5, "acks": 1, "statistics.interval.ms": 1000,
                                  "stats_cb": on_stats, "queue.buffering.max.kbytes": 4096})
    start = time.monotonic()
    counted = {"bytes": 0, "records": 0, "errors": 0}

    def on_delivery(err, msg):
        if err is not None:
            # Records withdrawn below, past SECONDS: not a delivery error.
            if err.code() not in (confluent_kafka.KafkaError._PURGE_QUEUE,
                                  confluent_kafka.KafkaError._PURGE_INFLIGHT):
                counted["errors"] += 1
            return
        t = time.monotonic() - start
        if warmup <= t < seconds:
            counted["bytes"] += len(msg.value())
            counted["records"] += 1

    value = b"q" * size
    while time.monotonic() - start < seconds:
        try:
            p.produce(topic, value=value, on_delivery=on_delivery)
        except BufferError:
            p.poll(0.01)
            continue
        p.poll(0)
    # What is queued or in flight now would be acknowledged after SECONDS, where nothing is
    # counted: withdrawn, since a limited producer took 3-4 s more to drain it (a throttle time
    # for the requests in flight, then its 4 MiB queue at 1 MiB/s).
    p.purge(in_queue=True, in_flight=True)
    p.flush(30)
    span = seconds - warmup
    print(json.dumps({"acked_bytes": counted["bytes"], "acked_records": counted["records"],
                      "rate": counted["bytes"] / span, "errors": counted["errors"],
                      "throttle_max_ms": stats["throttle_max"],
                      "throttle_avg_ms": stats["throttle_avg"]}))


if __name__ == "__main__":
    main()
