#!/usr/bin/python3
"""A confluent-kafka (librdkafka) consumer with client.rack, for tests/cluster_replication_test.cc
(KIP-392 follower fetching): reads partition 0 of TOPIC from offset 0 until it has COUNT records
and prints "records N" and "fetched-from B", B the broker librdkafka's statistics say it fetched
the partition from (its "broker" of the partition, the preferred read replica when the leader
named one), and "leader L" as librdkafka knows it.

  follower_fetch.py BOOTSTRAP TOPIC RACK COUNT

Exits 0 with COUNT records read in order, 1 otherwise; bounded by 20 s."""
import json
import sys
import time

import confluent_kafka


def main():
    bootstrap, topic, rack, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    seen_brokers = []
    leader = [-1]

    def stats(text):
        doc = json.loads(text)
        p = doc.get("topics", {}).get(topic, {}).get("partitions", {}).get("0")
        if p is None:
            return
        leader[0] = p.get("leader", -1)
        b = p.get("broker", -1)
        if b >= 0 and (not seen_brokers or seen_brokers[-1] != b):
            seen_brokers.append(b)

    c = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "follower-fetch",  # assign() below: the group is never joined
        "client.rack": rack,
        "enable.auto.commit": False,
        "statistics.interval.ms": 100,
        "stats_cb": stats,
        "fetch.wait.max.ms": 100,
    })
    c.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
    offsets = []
    deadline = time.monotonic() + 20
    while len(offsets) < count and time.monotonic() < deadline:
        msg = c.poll(0.2)
        if msg is None or msg.error():
            continue
        offsets.append(msg.offset())
    # One more statistics round, so that the broker of the last fetches is reported.
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        c.poll(0.1)
    c.close()
    print("records %d" % len(offsets))
    print("fetched-from %s" % " ".join(str(b) for b in seen_brokers))
    print("leader %d" % leader[0], flush=True)
    return 0 if offsets == list(range(count)) else 1


if __name__ == "__main__":
    sys.exit(main())
