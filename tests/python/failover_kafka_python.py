#!/usr/bin/python3
"""kafka-python (Debian's 2.0.2) against a cluster whose partition leader is killed, for
tests/cluster_failover_test.cc, with the arguments of failover_clients.py (its confluent-kafka
twin): an acks=all producer with retries across the fail-over, then a consumer in a group that
must read every acknowledged record once, in order, at its offset.

kafka-python 2.0.2 has no idempotent producer (enable.idempotence came with 2.1), so a batch the
dead leader had replicated but not acknowledged is written again by its retry: the same value at
a second offset. That copy was never acknowledged, so it is allowed (and counted); one in-flight
request per connection keeps each partition's acknowledged records in send order.

  failover_kafka_python.py produce BOOTSTRAP TOPIC PARTITIONS SECONDS ACKED_FILE
  failover_kafka_python.py consume BOOTSTRAP TOPIC GROUP ACKED_FILE SECONDS
(as failover_clients.py)."""
import sys
import time

from kafka import KafkaConsumer, KafkaProducer


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
    acked = []
    failed = []
    last_ack = [None, 0.0]  # time of the last acknowledgement, the longest gap

    def delivered(value):
        def on_success(md):
            now = time.monotonic()
            if last_ack[0] is not None:
                last_ack[1] = max(last_ack[1], now - last_ack[0])
            last_ack[0] = now
            acked.append((md.partition, md.offset, value))

        def on_error(e):
            failed.append("%s: %r" % (value, e))

        return on_success, on_error

    start = time.monotonic()
    n = 0
    announced = False
    while time.monotonic() - start < seconds:
        value = "v%d" % n
        ok, err = delivered(value)
        p.send(topic, value.encode(), partition=n % partitions).add_callback(ok).add_errback(err)
        n += 1
        time.sleep(0.004)
        if not announced and len(acked) >= 50:
            print("started", flush=True)
            announced = True
    p.flush(40)
    p.close(5)
    with open(acked_file, "w") as out:
        for partition, offset, value in acked:
            out.write("%d %d %s\n" % (partition, offset, value))
    print("acked %d failed %d longest-gap %d ms" % (len(acked), len(failed),
                                                   last_ack[1] * 1000), flush=True)
    for f in failed[:10]:
        print("failed: " + f)
    return 0 if not failed and len(acked) == n else 1


def consume(bootstrap, topic, group, acked_file, seconds):
    acked = {}  # value -> (partition, offset)
    with open(acked_file) as f:
        for line in f:
            partition, offset, value = line.split()
            acked[value] = (int(partition), int(offset))
    c = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap.split(","),
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=True,
    )
    read_at = {}  # value -> [(partition, offset)]
    last = {}  # partition -> last offset read
    problems = []
    copies = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and len([v for v in acked if v in read_at]) < len(acked):
        for tp, records in c.poll(timeout_ms=500).items():
            for msg in records:
                value = msg.value.decode()
                where = (msg.partition, msg.offset)
                if msg.partition in last and msg.offset <= last[msg.partition]:
                    problems.append("out of order: %d/%d read after %d/%d" %
                                    (msg.partition, msg.offset, msg.partition, last[msg.partition]))
                last[msg.partition] = msg.offset
                if value not in acked and not value.startswith("v"):
                    problems.append("unknown: %s at %d/%d" % ((value,) + where))
                if value in acked and acked[value] != where:
                    copies += 1  # a retry's copy of a record acknowledged elsewhere
                if where in read_at.get(value, []):
                    problems.append("duplicate: %s read again at %d/%d" % ((value,) + where))
                read_at.setdefault(value, []).append(where)
    c.close()
    for v, where in acked.items():
        if where not in read_at.get(v, []):
            problems.append("missing: %s acknowledged at %d/%d" % ((v,) + where))
    print("read %d of %d acknowledged, %d unacknowledged copies, %d problems" %
          (len([v for v in acked if v in read_at]), len(acked), copies, len(problems)), flush=True)
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
