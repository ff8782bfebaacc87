"""What tests/python/failover_clients.py (confluent-kafka) and failover_kafka_python.py
(kafka-python) share for tests/cluster_failover_test.cc: the producer's pacing and its record of
acknowledgements, and the consumer's check that every acknowledged record is read once, in order,
at its offset. Each client script only adapts its library's send, poll and callbacks to these.

  SCRIPT produce BOOTSTRAP TOPIC PARTITIONS SECONDS ACKED_FILE
    Sends "v<n>" to partition n % PARTITIONS every 4 ms for SECONDS, then flushes (40 s). Prints
    "started" once 50 records are acknowledged (the test then kills the leader), writes each
    acknowledged record as "partition offset value" to ACKED_FILE, and prints "acked N failed F
    longest-gap G ms" (G: the longest time between two acknowledgements, the fail-over as the
    client saw it). Exits 0 when every record was acknowledged.
  SCRIPT consume BOOTSTRAP TOPIC GROUP ACKED_FILE SECONDS
    Reads as a member of GROUP from the earliest offsets until every record of ACKED_FILE was read
    or SECONDS passed. Exits 0 when each acknowledged record was read at its acknowledged offset,
    no offset was read twice, every partition's offsets came in rising order and nothing unknown
    was read; else prints what went wrong and exits 1."""

import sys
import time


class acks:
    """The producer's acknowledgements and failures as its delivery callbacks report them."""

    def __init__(self):
        self.acked = []  # (partition, offset, value)
        self.failed = []
        self.last = None  # time of the last acknowledgement
        self.longest_gap = 0.0

    def ok(self, partition, offset, value):
        now = time.monotonic()
        if self.last is not None:
            self.longest_gap = max(self.longest_gap, now - self.last)
        self.last = now
        self.acked.append((partition, offset, value))

    def error(self, value, err):
        self.failed.append("%s: %s" % (value, err))


def produce(send, pump, flush, partitions, seconds, acked_file, log):
    """send(value, partition) queues a record; pump() waits about 4 ms serving callbacks; flush()
    returns how many records are still unacknowledged after waiting up to 40 s."""
    start = time.monotonic()
    n = 0
    announced = False
    while time.monotonic() - start < seconds:
        send("v%d" % n, n % partitions)
        n += 1
        pump()
        if not announced and len(log.acked) >= 50:
            print("started", flush=True)
            announced = True
    left = flush()
    with open(acked_file, "w") as out:
        for partition, offset, value in log.acked:
            out.write("%d %d %s\n" % (partition, offset, value))
    print("acked %d failed %d longest-gap %d ms" % (len(log.acked), len(log.failed) + left,
                                                   log.longest_gap * 1000), flush=True)
    for f in log.failed[:10]:
        print("failed: " + f)
    return 0 if not log.failed and left == 0 and len(log.acked) == n else 1


def consume(poll, close, acked_file, seconds, retried_copies):
    """poll() returns the (partition, offset, value) records read in about half a second.
    retried_copies: the producer is not idempotent, so a retried batch the dead leader had
    replicated but not acknowledged may stand twice; such a copy (a known value at another offset)
    is counted, not a problem."""
    acked = {}  # value -> (partition, offset)
    with open(acked_file) as f:
        for line in f:
            partition, offset, value = line.split()
            acked[value] = (int(partition), int(offset))
    read_at = {}  # value -> [(partition, offset)]
    last = {}  # partition -> last offset read
    problems = []
    copies = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and len([v for v in acked if v in read_at]) < len(acked):
        for partition, offset, value in poll():
            where = (partition, offset)
            if partition in last and offset <= last[partition]:
                problems.append("out of order: %d/%d read after %d/%d" %
                                (partition, offset, partition, last[partition]))
            last[partition] = offset
            if value not in acked and not (retried_copies and value.startswith("v")):
                problems.append("unknown: %s at %d/%d" % ((value,) + where))
            elif value in acked and acked[value] != where:
                if retried_copies:
                    copies += 1
                else:
                    problems.append("moved: %s acknowledged at %d/%d, read at %d/%d" %
                                    ((value,) + acked[value] + where))
            if value in read_at and (not retried_copies or where in read_at[value]):
                problems.append("duplicate: %s read again at %d/%d" % ((value,) + where))
            read_at.setdefault(value, []).append(where)
    close()
    for v, where in acked.items():
        if where not in read_at.get(v, []):
            problems.append("missing: %s acknowledged at %d/%d" % ((v,) + where))
    print("read %d of %d acknowledged, %d unacknowledged copies, %d problems" %
          (len([v for v in acked if v in read_at]), len(acked), copies, len(problems)), flush=True)
    for p in problems[:20]:
        print(p)
    return 0 if not problems else 1


def main(produce_with, consume_with):
    """Runs the mode of sys.argv: produce_with(bootstrap, topic, partitions, seconds, acked_file)
    or consume_with(bootstrap, topic, group, acked_file, seconds)."""
    mode = sys.argv[1]
    if mode == "produce":
        bootstrap, topic, partitions, seconds, acked_file = sys.argv[2:7]
        return produce_with(bootstrap, topic, int(partitions), float(seconds), acked_file)
    bootstrap, topic, group, acked_file, seconds = sys.argv[2:7]
    return consume_with(bootstrap, topic, group, acked_file, float(seconds))
