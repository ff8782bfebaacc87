#!/usr/bin/python3
"""confluent-kafka (librdkafka) against a cluster whose partition leader is killed, for
tests/cluster_failover_test.cc: an idempotent acks=all producer across the fail-over, then a
consumer in a group that must read every acknowledged record once, in order, at its offset.

  failover_clients.py produce BOOTSTRAP TOPIC PARTITIONS SECONDS ACKED_FILE
    Sends "v<n>" to partition n % PARTITIONS every 4 ms for SECONDS, then flushes (40 s). Prints
    "started" once 50 records are acknowledged (the test then kills the leader), writes each
    acknowledged record as "partition offset value" to ACKED_FILE, and prints "acked N failed F
    longest-gap G ms" (G: the longest time between two acknowledgements, the fail-over as the
    client saw it). Exits 0 when every record was acknowledged.
  failover_clients.py consume BOOTSTRAP TOPIC GROUP ACKED_FILE SECONDS
    Subscribes as a member of GROUP from the earliest offsets and reads until every record of
    ACKED_FILE was read or SECONDS passed. Exits 0 when each acknowledged record was read exactly
    once at its acknowledged offset, every partition's offsets came in rising order with no
    record read twice, and nothing unknown was read; else prints what went wrong and exits 1."""
import sys
import time

import confluent_kafka


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
    acked = []
    failed = []
    last_ack = [None, 0.0]  # time of the last acknowledgement, the longest gap

    def delivered(err, msg):
        if err is not None:
            failed.append("%s: %s" % (msg.value().decode(), err))
            return
        now = time.monotonic()
        if last_ack[0] is not None:
            last_ack[1] = max(last_ack[1], now - last_ack[0])
        last_ack[0] = now
        acked.append((msg.partition(), msg.offset(), msg.value().decode()))

    start = time.monotonic()
    n = 0
    announced = False
    while time.monotonic() - start < seconds:
        p.produce(topic, ("v%d" % n).encode(), partition=n % partitions, on_delivery=delivered)
        n += 1
        p.poll(0.004)
        if not announced and len(acked) >= 50:
            print("started", flush=True)
            announced = True
    left = p.flush(40)
    with open(acked_file, "w") as out:
        for partition, offset, value in acked:
            out.write("%d %d %s\n" % (partition, offset, value))
    print("acked %d failed %d longest-gap %d ms" % (len(acked), len(failed) + left,
                                                   last_ack[1] * 1000), flush=True)
    for f in failed[:10]:
        print("failed: " + f)
    return 0 if not failed and left == 0 and len(acked) == n else 1


def consume(bootstrap, topic, group, acked_file, seconds):
    acked = {}  # value -> (partition, offset)
    with open(acked_file) as f:
        for line in f:
            partition, offset, value = line.split()
            acked[value] = (int(partition), int(offset))
    c = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": True,
    })
    c.subscribe([topic])
    seen = {}  # value -> times read
    last = {}  # partition -> last offset read
    problems = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and len([v for v in acked if v in seen]) < len(acked):
        msg = c.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            if msg.error().code() != confluent_kafka.KafkaError._PARTITION_EOF:
                print("consumer error: %s" % msg.error(), flush=True)
            continue
        value = msg.value().decode()
        partition, offset = msg.partition(), msg.offset()
        seen[value] = seen.get(value, 0) + 1
        if seen[value] > 1:
            problems.append("duplicate: %s read again at %d/%d" % (value, partition, offset))
        if partition in last and offset <= last[partition]:
            problems.append("out of order: %d/%d read after %d/%d" %
                            (partition, offset, partition, last[partition]))
        last[partition] = offset
        if value not in acked:
            problems.append("unknown: %s at %d/%d" % (value, partition, offset))
        elif acked[value] != (partition, offset):
            problems.append("moved: %s acknowledged at %d/%d, read at %d/%d" %
                            ((value,) + acked[value] + (partition, offset)))
    c.close()
    missing = [v for v in acked if v not in seen]
    problems += ["missing: %s acknowledged at %d/%d" % ((v,) + acked[v]) for v in missing]
    print("read %d of %d acknowledged, %d problems" % (len(seen), len(acked), len(problems)),
          flush=True)
    for p in problems[:20]:
        print(p)
    return 0 if not problems else 1


def main():
    mode = sys.argv[1]
    if mode == "produce":
        bootstrap, topic, partitions, seconds, acked_file = sys.argv[2:7]
        return produce(bootstrap, topic, int(partitions), float(seconds), acked_file)
    bootstrap, topic, group, acked_file, seconds = sys.argv[2:7]
    return consume(bootstrap, topic, group, acked_file, float(seconds))


if __name__ == "__main__":
    sys.exit(main())
