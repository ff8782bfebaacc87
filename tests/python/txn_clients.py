#!/usr/bin/python3
"""Transactions with confluent-kafka (librdkafka), for tests/transactions_test.cc. Every mode
prints one event per line (flushed) for the test to read while the process runs.

  txn_clients.py setup BOOTSTRAP TOPIC PARTITIONS
      creates TOPIC; prints "created".
  txn_clients.py run BOOTSTRAP TOPIC TXN_ID PLAN
      one transactional producer; PLAN is a comma-separated list of transactions, "cN" (N
      records, committed) or "aN" (aborted), e.g. c5,a3,c2. Record values are
      "<txn index>-<record index>-<c|a>", spread round robin over the topic's partitions.
      Prints "init", then "committed I" / "aborted I" per transaction, then "done".
  txn_clients.py consume BOOTSTRAP TOPIC PARTITIONS ISOLATION IDLE_MS [END]
      reads every partition from the beginning with isolation.level ISOLATION
      (read_committed|read_uncommitted) until each is at its end (see at_end) or, failing that,
      nothing arrived for IDLE_MS; prints "record P O VALUE" per record, then "end COUNT".
  txn_clients.py fence BOOTSTRAP TOPIC TXN_ID
      producer A begins a transaction and sends "fenced-a"; producer B with the same
      transactional id initializes (fencing A, whose open transaction is aborted); A's commit
      fails: prints "a-commit-failed FATAL_OR_NOT CODE_NAME"; B commits "fenced-b": "b-committed".
  txn_clients.py produce BOOTSTRAP TOPIC N
      N plain (non-transactional) records "in-<i>" to partition 0; prints "produced N".
  txn_clients.py ctp BOOTSTRAP IN OUT GROUP TXN_ID commit|abort
      consume-transform-produce: a consumer of GROUP assigned IN partition 0 (from its committed
      offset, else the beginning) reads to IN's end (at_end below; or until idle for 2 s), a
      transactional producer writes each value upper-cased to OUT partition 0, flushes them,
      sends the consumer's position with send_offsets_to_transaction, and commits or aborts;
      prints "consumed N", then "committed" or "aborted".
  txn_clients.py committed BOOTSTRAP TOPIC GROUP
      prints "committed 0 O" (OffsetFetch of partition 0; -1001 for none).
  txn_clients.py hang BOOTSTRAP TOPIC TXN_ID N TIMEOUT_MS
      begins a transaction (transaction.timeout.ms TIMEOUT_MS), sends N records "hang-<i>"
      (key "k<i>", so a compacted topic takes them), flushes, prints "open" and sleeps until
      killed.
  txn_clients.py keyed BOOTSTRAP TOPIC TXN_ID KEYS PLAN SLEEP_MS
      one transactional producer writing keys k0..k<KEYS-1> to partition 0, one transaction per
      letter of PLAN (comma-separated): "c" every key committed, "a" every key aborted (flushed
      first), "d" a committed tombstone for k0..k4. Values are "<TXN_ID>-<index>-<letter>".
      Sleeps SLEEP_MS before each transaction (so segment.ms rolls the log between them).
      Prints "committed I" / "aborted I", then "done".
  txn_clients.py kconsume BOOTSTRAP TOPIC ISOLATION IDLE_MS [END]
      as consume, partition 0 only, printing "record O KEY VALUE" (VALUE "null" for a
      tombstone), then "end COUNT".

A partition is at its end when librdkafka reports PARTITION_EOF (enable.partition.eof) at an
offset that is the partition's high watermark, or END or past it. For read_committed the EOF
comes at the last stable offset, which is the high watermark only once no transaction is open
there, so a marker still being written is waited for; a test that leaves a transaction open on
purpose passes the last stable offset it expects as END. The data is written before these
modes run, so the end is final: reading on for IDLE_MS more (as they did, 2-3 s a call) saw
nothing more; IDLE_MS stays the bound when the end never comes.

Exits 0 once done."""
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

NO_END = 2**62  # no END given: only the high watermark ends a read
# What the consumers that read to the end (at_end) add to their configuration: end-of-partition
# events, and a fetch at the end waits 100 ms for records, not 500 (each read ends with one).
TO_THE_END = {"enable.partition.eof": True, "fetch.wait.max.ms": 100}


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def producer(bootstrap, txn_id, timeout_ms=60000):
    return Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id,
                     "transaction.timeout.ms": timeout_ms, "linger.ms": 5})


def partitions_of(bootstrap, topic):
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    return len(md.topics[topic].partitions)


def setup(bootstrap, topic, partitions):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, int(partitions), 1)]).values():
        f.result(timeout=30)
    say("created")


def run(bootstrap, topic, txn_id, plan):
    n = partitions_of(bootstrap, topic)
    p = producer(bootstrap, txn_id)
    p.init_transactions(30)
    say("init")
    k = 0
    for i, step in enumerate(plan.split(",")):
        kind, count = step[0], int(step[1:])
        p.begin_transaction()
        for j in range(count):
            p.produce(topic, value=f"{i}-{j}-{kind}".encode(), partition=k % n)
            k += 1
        if kind == "c":
            p.commit_transaction(30)
            say(f"committed {i}")
        else:
            p.flush(30)  # the records are in the log before the abort marker
            p.abort_transaction(30)
            say(f"aborted {i}")
    say("done")


def at_end(c, m, end):
    """Whether `m`, an error event, is the partition's end (the docstring's at_end)."""
    if m.error().code() != KafkaError._PARTITION_EOF:
        return False
    _, high = c.get_watermark_offsets(TopicPartition(m.topic(), m.partition()), cached=True)
    return m.offset() >= high or m.offset() >= end


def consume(bootstrap, topic, partitions, isolation, idle_ms, end=NO_END):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "txn-check",
                  "enable.auto.commit": False, "isolation.level": isolation,
                  "auto.offset.reset": "earliest", **TO_THE_END})
    c.assign([TopicPartition(topic, i, 0) for i in range(int(partitions))])
    count = 0
    ended = set()
    last = time.monotonic()
    while time.monotonic() - last < int(idle_ms) / 1000.0 and len(ended) < int(partitions):
        m = c.poll(0.2)
        if m is None:
            continue
        if m.error():
            if at_end(c, m, int(end)):
                ended.add(m.partition())
            continue
        last = time.monotonic()
        count += 1
        say(f"record {m.partition()} {m.offset()} {m.value().decode()}")
    c.close()
    say(f"end {count}")


def fence(bootstrap, topic, txn_id):
    a = producer(bootstrap, txn_id)
    a.init_transactions(30)
    a.begin_transaction()
    a.produce(topic, value=b"fenced-a", partition=0)
    a.flush(30)
    b = producer(bootstrap, txn_id)
    b.init_transactions(60)
    try:
        a.commit_transaction(30)
        say("a-committed")
    except KafkaException as e:
        err = e.args[0]
        say(f"a-commit-failed {'fatal' if err.fatal() else 'not-fatal'} {err.name()}")
    b.begin_transaction()
    b.produce(topic, value=b"fenced-b", partition=0)
    b.commit_transaction(30)
    say("b-committed")


def produce(bootstrap, topic, n):
    p = Producer({"bootstrap.servers": bootstrap})
    for i in range(int(n)):
        p.produce(topic, value=f"in-{i}".encode(), partition=0)
    p.flush(30)
    say(f"produced {n}")


def committed_offset(consumer, topic):
    """OffsetFetch of partition 0, retried while the group coordinator is still being placed
    (a broker whose __consumer_offsets was just created answers NOT_COORDINATOR for a while)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return consumer.committed([TopicPartition(topic, 0)], timeout=30)[0].offset
        except KafkaException as e:
            if time.monotonic() > deadline or not e.args[0].retriable() and e.args[0].name() not in (
                    "NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS",
                    "COORDINATOR_NOT_AVAILABLE"):
                raise
            time.sleep(0.5)


def ctp(bootstrap, src, dst, group, txn_id, outcome):
    config = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
              "isolation.level": "read_committed", "auto.offset.reset": "earliest"}
    # The group's committed offset, asked by a consumer of its own: after a committed() call a
    # consumer's first fetch waits a second.
    lookup = Consumer(config)
    committed = committed_offset(lookup, src)
    lookup.close()
    c = Consumer({**config, **TO_THE_END})
    c.assign([TopicPartition(src, 0, committed if committed >= 0 else 0)])
    p = producer(bootstrap, txn_id)
    p.init_transactions(30)
    p.begin_transaction()
    count = 0
    last = time.monotonic()
    while time.monotonic() - last < 2.0:
        m = c.poll(0.2)
        if m is None:
            continue
        if m.error():
            if at_end(c, m, NO_END):
                break
            continue
        last = time.monotonic()
        count += 1
        p.produce(dst, value=m.value().upper(), partition=0)
    say(f"consumed {count}")
    # The records are in the log before the marker: an abort drops what is still queued (the
    # read stops at the end now, a moment after the last produce()).
    p.flush(30)
    p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 30)
    if outcome == "commit":
        p.commit_transaction(30)
        say("committed")
    else:
        p.abort_transaction(30)
        say("aborted")
    c.close()


def committed(bootstrap, topic, group):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "enable.auto.commit": False})
    say(f"committed 0 {committed_offset(c, topic)}")
    c.close()


def hang(bootstrap, topic, txn_id, n, timeout_ms):
    p = producer(bootstrap, txn_id, int(timeout_ms))
    p.init_transactions(30)
    p.begin_transaction()
    for i in range(int(n)):
        p.produce(topic, key=f"k{i}".encode(), value=f"hang-{i}".encode(), partition=0)
    p.flush(30)
    say("open")
    while True:
        time.sleep(1)


def keyed(bootstrap, topic, txn_id, keys, plan, sleep_ms):
    p = producer(bootstrap, txn_id)
    p.init_transactions(30)
    for i, kind in enumerate(plan.split(",")):
        time.sleep(int(sleep_ms) / 1000.0)
        p.begin_transaction()
        for k in range(5 if kind == "d" else int(keys)):
            value = None if kind == "d" else f"{txn_id}-{i}-{kind}".encode()
            p.produce(topic, key=f"k{k}".encode(), value=value, partition=0)
        if kind == "a":
            p.flush(30)  # in the log before the abort marker
            p.abort_transaction(30)
            say(f"aborted {i}")
        else:
            p.commit_transaction(30)
            say(f"committed {i}")
    say("done")


def kconsume(bootstrap, topic, isolation, idle_ms, end=NO_END):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "txn-check",
                  "enable.auto.commit": False, "isolation.level": isolation,
                  "auto.offset.reset": "earliest", **TO_THE_END})
    c.assign([TopicPartition(topic, 0, 0)])
    count = 0
    last = time.monotonic()
    while time.monotonic() - last < int(idle_ms) / 1000.0:
        m = c.poll(0.2)
        if m is None:
            continue
        if m.error():
            if at_end(c, m, int(end)):
                break
            continue
        last = time.monotonic()
        count += 1
        value = "null" if m.value() is None else m.value().decode()
        say(f"record {m.offset()} {m.key().decode()} {value}")
    c.close()
    say(f"end {count}")


def main():
    mode, args = sys.argv[1], sys.argv[2:]
    {"setup": setup, "run": run, "consume": consume, "fence": fence, "hang": hang,
     "produce": produce, "ctp": ctp, "committed": committed, "keyed": keyed,
     "kconsume": kconsume}[mode](*args)


if __name__ == "__main__":
    main()
