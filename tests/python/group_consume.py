#!/usr/bin/python3
"""Consumer groups with confluent-kafka (librdkafka) or kafka-python, for
tests/groups_clients_test.cc. Every mode prints one event per line (flushed) for the test to read
while the process runs.

  group_consume.py setup BOOTSTRAP TOPIC COUNTS
      creates TOPIC with one partition per entry of COUNTS (e.g. 40,50,60,50) and produces that
      many records to each; prints "produced P N" per partition: the offset after the last
      record each got (confluent-kafka).
  group_consume.py produce BOOTSTRAP TOPIC COUNTS
      the same into the existing TOPIC, no creation.
  group_consume.py flow BOOTSTRAP TOPIC PARTITIONS
      produces to the existing TOPIC, round robin over its partitions, about 400 records a
      second, until SIGTERM; then flushes and prints "produced P N" per partition, the offset
      after the last record it got (confluent-kafka).
  group_consume.py consume BOOTSTRAP TOPIC GROUP [--client confluent|kafka-python]
                   [--assignor range|cooperative-sticky] [--session-ms MS] [--stop-after N]
      a group member subscribed to TOPIC; runs until SIGTERM (or until it saw N records) and
      prints "record P O T", "assigned P,P owned P,P", "revoked P,P owned P,P", "lost P,P",
      "commit P O T" for each offset a synchronous commit stored, "commit-failed ERROR", then
      "closed". T is time.monotonic_ns() (CLOCK_MONOTONIC, one clock for every process on the
      machine): when the record was returned, when the commit returned. Offsets of the partitions
      a poll returned records from are committed at most every 100 ms, and those of revoked
      partitions in the revoke callback, before they are given up.
  group_consume.py offsets BOOTSTRAP TOPIC GROUP [--client confluent|kafka-python]
      "committed P O" (or "committed P none") and "end P O" for every partition (OffsetFetch and
      ListOffsets through the client).

Exits 0 once done."""
import argparse
import os
import signal
import sys
import time


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def parts(ps):
    return ",".join(str(p) for p in sorted(ps))


stopping = False


def on_sigterm(signum, frame):
    global stopping
    stopping = True


def create(bootstrap, topic, partitions):
    import confluent_kafka.admin
    admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([confluent_kafka.admin.NewTopic(topic, partitions, 1)],
                                  operation_timeout=30, request_timeout=60)
    futures[topic].result(60)
    say("created %s %d" % (topic, partitions))


def produce(bootstrap, topic, counts):
    import confluent_kafka
    p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    errors = []
    last = [-1] * len(counts)

    def delivered(err, msg):
        if err:
            errors.append(err)
        else:
            last[msg.partition()] = max(last[msg.partition()], msg.offset())

    for part, n in enumerate(counts):
        for i in range(n):
            while True:
                try:
                    p.produce(topic, key=b"%d-%d" % (part, i), value=b"v-%d-%d" % (part, i),
                              partition=part, on_delivery=delivered)
                    break
                except BufferError:
                    p.poll(0.1)
    left = p.flush(60)
    if left or errors:
        raise SystemExit("produce failed: %r, %d left" % (errors[:5], left))
    for part in range(len(counts)):
        say("produced %d %d" % (part, last[part] + 1))


def produce_until_signalled(bootstrap, topic, partitions):
    import confluent_kafka
    p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    errors = []
    last = [-1] * partitions

    def on_delivery(err, msg):
        if err:
            errors.append(err)
        else:
            last[msg.partition()] = max(last[msg.partition()], msg.offset())

    i = 0
    say("producing")
    while not stopping:
        for _ in range(20):
            p.produce(topic, key=b"%d" % i, value=b"v-%d" % i, partition=i % partitions,
                      on_delivery=on_delivery)
            i += 1
        p.poll(0)
        time.sleep(0.05)
    left = p.flush(60)
    if left or errors:
        raise SystemExit("produce failed: %r, %d left" % (errors[:5], left))
    for part in range(partitions):
        say("produced %d %d" % (part, last[part] + 1))


def consume_confluent(args):
    import confluent_kafka
    conf = {"bootstrap.servers": args.bootstrap, "group.id": args.group,
            "enable.auto.commit": False, "auto.offset.reset": "earliest",
            "partition.assignment.strategy": args.assignor,
            "session.timeout.ms": args.session_ms, "heartbeat.interval.ms": 500}
    c = confluent_kafka.Consumer(conf)
    owned = set()
    nxt = {}        # partition -> next offset to commit, for partitions consumed from
    committed = {}  # partition -> last offset this member committed

    def commit(ps):
        offsets = [confluent_kafka.TopicPartition(args.topic, p, nxt[p]) for p in sorted(ps)
                   if p in nxt and committed.get(p) != nxt[p]]
        if not offsets:
            return
        try:
            result = c.commit(offsets=offsets, asynchronous=False)
        except confluent_kafka.KafkaException as e:
            say("commit-failed %s" % e.args[0].name())
            return
        now = time.monotonic_ns()
        for tp in result:
            if tp.error:
                say("commit-failed %d %s" % (tp.partition, tp.error.name()))
            else:
                committed[tp.partition] = tp.offset
                say("commit %d %d %d" % (tp.partition, tp.offset, now))

    def on_assign(consumer, tps):
        owned.update(tp.partition for tp in tps)
        say("assigned %s owned %s" % (parts(tp.partition for tp in tps), parts(owned)))

    def on_revoke(consumer, tps):
        revoked = {tp.partition for tp in tps}
        commit(revoked & owned)
        owned.difference_update(revoked)
        for p in revoked:
            nxt.pop(p, None)
        say("revoked %s owned %s" % (parts(revoked), parts(owned)))

    def on_lost(consumer, tps):
        lost = {tp.partition for tp in tps}
        owned.difference_update(lost)
        for p in lost:
            nxt.pop(p, None)
        say("lost %s owned %s" % (parts(lost), parts(owned)))

    try:
        c.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    except TypeError:  # a confluent-kafka without on_lost
        c.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke)
    seen = 0
    from_parts = set()
    last_commit = time.monotonic()
    while not stopping and (args.stop_after is None or seen < args.stop_after):
        m = c.poll(0.1)
        if m is not None:
            if m.error():
                if m.error().code() != confluent_kafka.KafkaError._PARTITION_EOF:
                    say("error %s" % m.error().name())
            else:
                say("record %d %d %d" % (m.partition(), m.offset(), time.monotonic_ns()))
                seen += 1
                if m.partition() in owned:
                    nxt[m.partition()] = m.offset() + 1
                    from_parts.add(m.partition())
        if from_parts and (time.monotonic() - last_commit >= 0.1 or m is None or
                           (args.stop_after is not None and seen >= args.stop_after)):
            commit(from_parts & owned)
            from_parts.clear()
            last_commit = time.monotonic()
    commit(set(nxt) & owned)
    c.close()  # revokes (on_revoke commits) and leaves the group
    say("closed")


def consume_kafka_python(args):
    import kafka
    owned = set()

    class listener(kafka.ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            owned.difference_update(tp.partition for tp in revoked)
            say("revoked %s owned %s" % (parts(tp.partition for tp in revoked), parts(owned)))

        def on_partitions_assigned(self, assigned):
            owned.update(tp.partition for tp in assigned)
            say("assigned %s owned %s" % (parts(tp.partition for tp in assigned), parts(owned)))

    # kafka-python 2.0.2 cannot tell Kafka 4 from older brokers by probing; 2.5 is its newest.
    c = kafka.KafkaConsumer(bootstrap_servers=args.bootstrap, group_id=args.group,
                            api_version=(2, 5), enable_auto_commit=False,
                            auto_offset_reset="earliest", session_timeout_ms=args.session_ms,
                            heartbeat_interval_ms=500)
    c.subscribe([args.topic], listener=listener())
    seen = 0
    while not stopping and (args.stop_after is None or seen < args.stop_after):
        batch = c.poll(timeout_ms=100)
        for tp, records in batch.items():
            for r in records:
                say("record %d %d %d" % (r.partition, r.offset, time.monotonic_ns()))
                seen += 1
        if batch:
            offsets = {tp: kafka.OffsetAndMetadata(records[-1].offset + 1, "")
                       for tp, records in batch.items()}
            try:
                c.commit(offsets)
            except kafka.errors.KafkaError as e:
                say("commit-failed %s" % type(e).__name__)
                continue
            now = time.monotonic_ns()
            for tp, o in sorted(offsets.items()):
                say("commit %d %d %d" % (tp.partition, o.offset, now))
    c.close(autocommit=False)
    say("closed")


def offsets_confluent(args):
    import confluent_kafka
    c = confluent_kafka.Consumer({"bootstrap.servers": args.bootstrap, "group.id": args.group,
                                  "enable.auto.commit": False})
    md = c.list_topics(args.topic, timeout=30)
    n = len(md.topics[args.topic].partitions)
    tps = [confluent_kafka.TopicPartition(args.topic, p) for p in range(n)]
    for tp in c.committed(tps, timeout=30):
        if tp.error:
            raise SystemExit("committed: %s" % tp.error)
        say("committed %d %s" % (tp.partition, tp.offset if tp.offset >= 0 else "none"))
    for p in range(n):
        low, high = c.get_watermark_offsets(confluent_kafka.TopicPartition(args.topic, p),
                                            timeout=30)
        say("end %d %d" % (p, high))
    c.close()


def offsets_kafka_python(args):
    import kafka
    c = kafka.KafkaConsumer(bootstrap_servers=args.bootstrap, group_id=args.group,
                            api_version=(2, 5), enable_auto_commit=False)
    ps = sorted(c.partitions_for_topic(args.topic) or [])
    tps = [kafka.TopicPartition(args.topic, p) for p in ps]
    for tp in tps:
        o = c.committed(tp)
        say("committed %d %s" % (tp.partition, "none" if o is None else o))
    for tp, o in sorted(c.end_offsets(tps).items()):
        say("end %d %d" % (tp.partition, o))
    c.close(autocommit=False)


def main():
    signal.signal(signal.SIGTERM, on_sigterm)
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["setup", "produce", "flow", "consume", "offsets"])
    ap.add_argument("bootstrap")
    ap.add_argument("topic")
    ap.add_argument("arg", help="COUNTS, PARTITIONS or GROUP")
    ap.add_argument("--client", choices=["confluent", "kafka-python"], default="confluent")
    ap.add_argument("--assignor", default="range")
    ap.add_argument("--session-ms", type=int, default=6000)
    ap.add_argument("--stop-after", type=int)
    args = ap.parse_args()
    args.group = args.arg
    if args.mode in ("setup", "produce"):
        counts = [int(x) for x in args.arg.split(",")]
        if args.mode == "setup":
            create(args.bootstrap, args.topic, len(counts))
        produce(args.bootstrap, args.topic, counts)
    elif args.mode == "flow":
        produce_until_signalled(args.bootstrap, args.topic, int(args.arg))
    elif args.mode == "consume":
        (consume_confluent if args.client == "confluent" else consume_kafka_python)(args)
    else:
        (offsets_confluent if args.client == "confluent" else offsets_kafka_python)(args)
    return 0


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    # confluent-kafka 1.7 can abort the interpreter at exit (see consume_check.py); skip it.
    os._exit(rc)
