#!/usr/bin/python3
"""Consumes one partition with a real client and compares every record with a records.json
fixture (offset, key, value, headers, timestamp; base64 or null). Used by
tests/consume_clients_test.cc.

  consume_check.py CLIENT BOOTSTRAP TOPIC RECORDS_JSON [TARN_BINARY]

CLIENT: kcat | confluent | kafka-python | tarn. Exits 0 when all records match, 1 with the first
difference otherwise. Bounded: every client run has a timeout of a few seconds."""
import base64
import os
import json
import subprocess
import sys


def b64(v):
    return None if v is None else base64.b64decode(v)


def expected(path):
    with open(path) as f:
        doc = json.load(f)
    out = []
    for r in doc["records"]:
        out.append((r["offset"], r["timestamp"], b64(r["key"]), b64(r["value"]),
                    [(h["key"], b64(h["value"])) for h in r["headers"]]))
    return out


def parse_length_prefixed(data, with_offset_ts=True):
    """Parses '<offset> <ts> <keylen> <valuelen> <headers...>\\n<key><value>' records."""
    out, pos = [], 0
    while pos < len(data):
        nl = data.index(b"\n", pos)
        head = data[pos:nl].decode()
        pos = nl + 1
        offset, ts, klen, vlen = (int(x) for x in head.split(" ")[:4])
        key = None if klen < 0 else data[pos:pos + klen]
        pos += max(klen, 0)
        value = None if vlen < 0 else data[pos:pos + vlen]
        pos += max(vlen, 0)
        out.append((offset, ts, key, value, None))
    return out


def via_kcat(bootstrap, topic, n):
    # %K/%S: key/value length (-1 for null); headers are checked by the other clients.
    p = subprocess.run(["kcat", "-C", "-b", bootstrap, "-t", topic, "-p", "0", "-o", "beginning",
                        "-e", "-c", str(n), "-f", "%o %T %K %S\n%k%s"],
                       capture_output=True, timeout=30)
    if p.returncode != 0:
        raise SystemExit("kcat failed: " + p.stderr.decode(errors="replace"))
    return parse_length_prefixed(p.stdout)


def via_confluent(bootstrap, topic, n):
    import confluent_kafka
    c = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "unused",
                                  "enable.auto.commit": False, "api.version.request": True})
    c.assign([confluent_kafka.TopicPartition(topic, 0, confluent_kafka.OFFSET_BEGINNING)])
    out = []
    import time
    deadline = time.time() + 20
    while len(out) < n and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            raise SystemExit("confluent-kafka: " + str(m.error()))
        hs = [(k, v) for k, v in (m.headers() or [])]
        out.append((m.offset(), m.timestamp()[1], m.key(), m.value(), hs))
    c.close()
    return out


def via_kafka_python(bootstrap, topic, n):
    import kafka
    c = kafka.KafkaConsumer(bootstrap_servers=bootstrap, api_version=(2, 5),
                            enable_auto_commit=False, consumer_timeout_ms=10000)
    tp = kafka.TopicPartition(topic, 0)
    c.assign([tp])
    c.seek_to_beginning(tp)
    out = []
    for m in c:
        out.append((m.offset, m.timestamp, m.key, m.value, [(k, v) for k, v in m.headers]))
        if len(out) >= n:
            break
    c.close()
    return out


def via_tarn(bootstrap, topic, n, binary):
    # tarn consume prints text: separate fields and records with doubled control bytes, which no
    # fixture key, value or header holds (their binary values are ascending byte runs).
    p = subprocess.run([binary, "consume", "--bootstrap-server", bootstrap, "--topic", topic,
                        "--from-beginning", "--max-messages", str(n), "--timeout-ms", "10000",
                        "--property", "print.offset=true", "--property", "print.timestamp=true",
                        "--property", "print.key=true", "--property", "print.headers=true",
                        "--property", "key.separator=\x1f\x1f", "--property", "line.separator=\x1e\x1e"],
                       capture_output=True, timeout=30)
    if p.returncode != 0:
        raise SystemExit("tarn consume failed: " + p.stderr.decode(errors="replace"))
    out = []
    for line in p.stdout.split(b"\x1e\x1e")[:-1]:
        ts, off, hdrs, key, value = line.split(b"\x1f\x1f")
        hs = []
        if hdrs != b"NO_HEADERS":
            for h in hdrs.split(b","):
                k, _, v = h.partition(b":")
                hs.append((k.decode(), None if v == b"null" else v))
        out.append((int(off.split(b":")[1]), int(ts.split(b":")[1]),
                    None if key == b"null" else key, None if value == b"null" else value, hs))
    return out


def main():
    client, bootstrap, topic, path = sys.argv[1:5]
    want = expected(path)
    if client == "kcat":
        got = via_kcat(bootstrap, topic, len(want))
    elif client == "confluent":
        got = via_confluent(bootstrap, topic, len(want))
    elif client == "kafka-python":
        got = via_kafka_python(bootstrap, topic, len(want))
    elif client == "tarn":
        got = via_tarn(bootstrap, topic, len(want), sys.argv[5])
    else:
        raise SystemExit("unknown client " + client)
    if len(got) != len(want):
        print(f"{client}: got {len(got)} records, want {len(want)}")
        return 1
    for g, w in zip(got, want):
        g_off, g_ts, g_key, g_value, g_headers = g
        w_off, w_ts, w_key, w_value, w_headers = w
        if client == "tarn" and any(h[1] is not None and (b"," in h[1]) for h in w_headers):
            g_headers = None  # header values holding the headers separator print ambiguously
        checks = [("offset", g_off, w_off), ("timestamp", g_ts, w_ts), ("key", g_key, w_key),
                  ("value", g_value, w_value)]
        if g_headers is not None:
            checks.append(("headers", g_headers, w_headers))
        for name, a, b in checks:
            if a != b:
                print(f"{client}: offset {w_off}: {name} {a!r} != {b!r}")
                return 1
    print(f"{client}: {len(got)} records match")
    return 0


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    # confluent-kafka 1.7 drops one reference too many for each None header value it returned,
    # which aborts the interpreter at exit ("none_dealloc"); skip the finalization.
    os._exit(rc)
