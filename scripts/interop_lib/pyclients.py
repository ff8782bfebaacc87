#!/usr/bin/python3
# The Python clients of `make interop`, run as a subprocess so a hung client cannot hang the
# suite: confluent-kafka (librdkafka) and kafka-python, producing and consuming the same records
# as tests/java/InteropClient.java and printing the same lines.
#
#   pyclients.py confluent|kafka-python produce|consume key=value...
import sys


def value(kind, i):
    if kind == "json":
        return ('{"id":%d,"user":"user-%d","event":"page_view","path":"/products/%d","ok":true}'
                % (i, i % 50, i % 200))
    return "hello-%d" % i


def records(a):
    i = 0
    base_ts = int(a["base_ts"])
    for group in a["groups"].split(","):
        batch = []
        for _ in range(int(group)):
            headers = [("trace", b"abc")] if i == 0 and a.get("header_first", "true") == "true" else []
            batch.append((i, base_ts + i, ("k%d" % i).encode(), value(a.get("value", "hello"), i).encode(),
                          headers))
            i += 1
        yield batch


def confluent_produce(a):
    from confluent_kafka import Producer
    acks = a.get("acks", "all")
    p = Producer({"bootstrap.servers": a["bootstrap"], "compression.codec": a.get("compression", "none"),
                  "acks": acks, "enable.idempotence": a.get("idempotence", "false") == "true",
                  "linger.ms": 1000, "message.timeout.ms": 20000, "batch.size": int(a.get("batch_size", 16384)),
                  "message.max.bytes": 4194304})
    p.list_topics(a["topic"], timeout=10)  # metadata first: no record waits for it alone
    acked = []
    for batch in records(a):
        for i, ts, k, v, h in batch:
            p.produce(a["topic"], key=k, value=v, partition=0, timestamp=ts, headers=h or None,
                      on_delivery=lambda err, msg, i=i: acked.append(
                          (i, err, msg.partition(), msg.offset())))
        p.flush(20)
    for i, err, part, off in sorted(acked, key=lambda x: x[0]):
        if err is not None:
            print("error: %s" % err)
        print("acked: partition %d offset %d" % (part, -1 if off is None else off))


def confluent_consume(a):
    from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING
    import time
    c = Consumer({"bootstrap.servers": a["bootstrap"], "group.id": "interop",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "enable.partition.eof": False})
    c.assign([TopicPartition(a["topic"], 0, OFFSET_BEGINNING)])
    seen, count, deadline = 0, int(a["count"]), time.time() + 20
    while seen < count and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            print("error: %s" % m.error())
            continue
        h = "".join("%s=%s;" % (k, v.decode()) for k, v in (m.headers() or []))
        print("record: offset %d key %s value %s ts %d headers %s"
              % (m.offset(), m.key().decode(), m.value().decode(), m.timestamp()[1], h))
        seen += 1
    c.close()


def kafka_python_produce(a):
    from kafka import KafkaProducer
    acks = a.get("acks", "all")
    acks = {"all": "all", "1": 1, "0": 0}[acks]
    comp = a.get("compression", "none")
    p = KafkaProducer(bootstrap_servers=a["bootstrap"], acks=acks,
                      compression_type=None if comp == "none" else comp, linger_ms=1000,
                      batch_size=int(a.get("batch_size", 16384)), max_request_size=4194304,
                      request_timeout_ms=10000)
    p.partitions_for(a["topic"])  # metadata first: no record waits for it alone
    fs = []
    for batch in records(a):
        for i, ts, k, v, h in batch:
            fs.append(p.send(a["topic"], key=k, value=v, partition=0, timestamp_ms=ts, headers=h))
        p.flush(20)
    for f in fs:
        m = f.get(20)
        print("acked: partition %d offset %d" % (m.partition, m.offset))
    p.close(5)


def kafka_python_consume(a):
    from kafka import KafkaConsumer, TopicPartition
    import time
    c = KafkaConsumer(bootstrap_servers=a["bootstrap"], group_id=None, enable_auto_commit=False,
                      auto_offset_reset="earliest", consumer_timeout_ms=1000)
    tp = TopicPartition(a["topic"], 0)
    c.assign([tp])
    c.seek_to_beginning(tp)
    seen, count, deadline = 0, int(a["count"]), time.time() + 20
    while seen < count and time.time() < deadline:
        for m in c.poll(500).get(tp, []):
            h = "".join("%s=%s;" % (k, v.decode()) for k, v in (m.headers or []))
            print("record: offset %d key %s value %s ts %d headers %s"
                  % (m.offset, m.key.decode(), m.value.decode(), m.timestamp, h))
            seen += 1
    c.close()


def main():
    client, mode = sys.argv[1], sys.argv[2]
    a = dict(x.split("=", 1) for x in sys.argv[3:])
    {("confluent", "produce"): confluent_produce, ("confluent", "consume"): confluent_consume,
     ("kafka-python", "produce"): kafka_python_produce,
     ("kafka-python", "consume"): kafka_python_consume}[(client, mode)](a)


if __name__ == "__main__":
    main()
