#!/usr/bin/python3
"""Produces a fixed set of records with confluent-kafka (librdkafka) to partition 0 of an empty
topic with one codec, and writes them as a records.json (the format of
tests/fixtures/real-clients) for consume_check.py and ConsumeCheck.java to compare against.

  produce_records.py BOOTSTRAP TOPIC CODEC OUT_JSON

Records: explicit CreateTimes (one older than its predecessor), null keys, null and empty values,
headers with null and empty values and a repeated key, binary bytes, a 2 KiB value; sent in three
flushes so they form several batches."""
import base64
import json
import sys

import confluent_kafka


def b64(v):
    return None if v is None else base64.b64encode(v).decode()


def main():
    bootstrap, topic, codec, out = sys.argv[1:5]
    p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "compression.codec": codec,
                                  "linger.ms": 50, "acks": "all"})
    base = 1767225600000
    records = []
    for i in range(24):
        key = None if i % 7 == 3 else ("key-%d" % i).encode()
        value = None if i % 11 == 5 else (b"" if i == 6 else ("value %d " % i).encode() * (1 + i))
        if i == 13:
            value = bytes(range(256)) * 8
        headers = []
        if i % 3 == 1:
            headers = [("h", b"x%d" % i), ("h", b""), ("nul", None)]
        ts = base + 1000 * i - (5000 if i == 17 else 0)
        records.append({"offset": i, "timestamp": ts, "key": b64(key), "value": b64(value),
                        "headers": [{"key": k, "value": b64(v)} for k, v in headers]})
        errors = []
        p.produce(topic, value=value, key=key, partition=0, timestamp=ts,
                  headers=[(k, v) for k, v in headers],
                  on_delivery=lambda err, msg: errors.append(err) if err else None)
        if i in (7, 15):
            p.flush(10)
    left = p.flush(10)
    if left or errors:
        raise SystemExit("produce failed: %r, %d left" % (errors, left))
    with open(out, "w") as f:
        json.dump({"client": "python", "codec": codec, "topic": topic, "partition": 0,
                   "records": records}, f, indent=1)
    print("produced", len(records))


if __name__ == "__main__":
    main()
