# The transaction admin scenarios of `make interop` (issue 23): DescribeTransactions,
# ListTransactions (state, producer id, duration and pattern filters), DescribeProducers and
# WriteTxnMarkers, hand-built at every version Kafka 4.4 serves, around a transaction of a
# hand-built transactional producer (FindCoordinator, InitProducerId, AddPartitionsToTxn, a
# transactional Produce, EndTxn), observed field by field as the admin scenarios observe theirs.
#
# The broker is shared with every other scenario: the transactional ids and the topic are this
# scenario's own (prefix txa-), and ListTransactions' answers are observed for those ids only.
# What differs by nature is masked: producer ids and the broker's clock (transaction start times,
# the markers' timestamps).
import struct
import time

from . import scenarios as base
from . import wire
from .admin_scenarios import ADMIN_MASKS
from .group_scenarios import Conn, call, observe, topic
from .scenarios import Mask, scenario

ADD_PARTITIONS_TO_TXN, END_TXN, WRITE_TXN_MARKERS = 24, 26, 27
DESCRIBE_PRODUCERS, DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 61, 65, 66
VERSIONS = {k: wire.load_schema(k) for k in (
    ADD_PARTITIONS_TO_TXN, END_TXN, WRITE_TXN_MARKERS, DESCRIBE_PRODUCERS, DESCRIBE_TRANSACTIONS,
    LIST_TRANSACTIONS)}

NONE, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR = 0, 14, 15, 16
CONCURRENT_TRANSACTIONS = 51
RETRY = (COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR,
         CONCURRENT_TRANSACTIONS)
PREFIX = "txa-"

TXN_MASKS = ADMIN_MASKS + base.PID + base.CLOCK + [
    Mask("*.transaction_start_time_ms", "the broker's clock when the transaction began",
         regex=r"(^)\d{10,}$"),
    Mask("after-*.last_timestamp", "a marker's timestamp is the broker's clock"),
    Mask("ended-*.last_timestamp", "a marker's timestamp is the broker's clock"),
]


def versions(api):
    lo, hi = VERSIONS[api]
    return range(lo, hi + 1)


def until_ready(fn, what):
    """Calls fn() until its error code is not one a client retries (Kafka creates
    __transaction_state and loads its partitions first); returns the last answer."""
    deadline = time.time() + 60
    while True:
        r = fn()
        if r[0] not in RETRY:
            return r
        if time.time() > deadline:
            raise RuntimeError("%s: still error %d after 60 s" % (what, r[0]))
        time.sleep(0.2)


def init_producer(c, transactional_id):
    def once():
        f = c.request(wire.FIND_COORDINATOR, 3, {"key": transactional_id, "key_type": 1})
        if f["error_code"] != NONE:
            return f["error_code"], None
        r = c.call(wire.INIT_PRODUCER_ID, 1, wire.INIT_PID_REQ, wire.INIT_PID_RESP,
                   {"transactional_id": transactional_id, "transaction_timeout_ms": 60000})
        return r["error_code"], r
    return until_ready(once, "InitProducerId " + transactional_id)


def add_partitions(c, transactional_id, pid, epoch, name, partitions):
    def once():
        r = c.request(ADD_PARTITIONS_TO_TXN, 3, {
            "v3_and_below_transactional_id": transactional_id, "v3_and_below_producer_id": pid,
            "v3_and_below_producer_epoch": epoch,
            "v3_and_below_topics": [{"name": name, "partitions": partitions}]})
        errors = [p["partition_error_code"] for t in r["results_by_topic_v3_and_below"]
                  for p in t["results_by_partition"]]
        return max(errors), r
    return until_ready(once, "AddPartitionsToTxn")


def transactional_batch(values, pid, epoch, sequence):
    """A v2 batch with the transactional attribute (bit 4), its CRC computed again."""
    b = bytearray(wire.build_batch(base.records(values), base.BASE_TS, producer_id=pid,
                                   producer_epoch=epoch, base_sequence=sequence))
    attributes = struct.unpack_from(">h", b, 21)[0] | 0x10
    struct.pack_into(">h", b, 21, attributes)
    struct.pack_into(">I", b, 17, wire.crc32c(bytes(b[21:])))
    return bytes(b)


def describe_transactions(ctx, c, label, ids):
    r = call(ctx, c, label, DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": ids}, record=False)
    if r is None:
        return None
    for s in r["transaction_states"]:  # Kafka lists them from a hash set
        s["topics"] = sorted(s["topics"], key=lambda t: t["topic"])
        for t in s["topics"]:
            t["partitions"] = sorted(t["partitions"])
    observe(ctx, label, r)
    return r


def list_transactions(ctx, c, label, version, states=(), pids=(), duration=-1, pattern=None):
    body = {"state_filters": list(states), "producer_id_filters": list(pids),
            "duration_filter": duration, "transactional_id_pattern": pattern}
    r = call(ctx, c, label, LIST_TRANSACTIONS, version, body, record=False)
    if r is None:
        return
    # Other scenarios' transactional ids are not this one's business; Kafka's order is its maps'.
    r["transaction_states"] = sorted(
        (s for s in r["transaction_states"] if s["transactional_id"].startswith(PREFIX)),
        key=lambda s: s["transactional_id"])
    observe(ctx, label, r)


def describe_producers(ctx, c, label, topics):
    body = {"topics": [{"name": n, "partition_indexes": ps} for n, ps in topics]}
    return call(ctx, c, label, DESCRIBE_PRODUCERS, 0, body)


def write_markers(ctx, c, label, version, markers):
    body = {"markers": [{"producer_id": pid, "producer_epoch": epoch, "transaction_result": commit,
                         "topics": [{"name": n, "partition_indexes": ps} for n, ps in topics],
                         "coordinator_epoch": coordinator_epoch, "transaction_version": 0}
                        for pid, epoch, commit, topics, coordinator_epoch in markers]}
    return call(ctx, c, label, WRITE_TXN_MARKERS, version, body)


@scenario("txn-admin-describe-list-producers-markers", masks=TXN_MASKS,
          expect={"open.transaction_states[0].transaction_state": "Ongoing",
                  # topics by name: "", "bad name!", "txa-missing", "txa-t"
                  "producers.topics[3].partitions[0].active_producers[0].current_txn_start_offset": 0,
                  "after-abort.topics[0].partitions[1].active_producers[0]."
                  "current_txn_start_offset": -1})
def txn_admin(ctx):
    t = PREFIX + "t"
    topic(ctx, t, partitions=2)
    c = Conn(ctx)
    try:
        # txa-1: epoch 1 (two InitProducerIds), a transaction over both partitions with two
        # records in each; txa-2: Empty.
        init_producer(c, PREFIX + "1")
        err, r = init_producer(c, PREFIX + "1")
        ctx.obs["init.error_code"] = err
        pid, epoch = r["producer_id"], r["producer_epoch"]
        ctx.obs["init.producer_epoch"] = epoch
        init_producer(c, PREFIX + "2")
        err, _ = add_partitions(c, PREFIX + "1", pid, epoch, t, [0, 1])
        ctx.obs["add_partitions.error_code"] = err
        for p in (0, 1):
            r = c.produce(9, t, transactional_batch(["a%d" % p, "b%d" % p], pid, epoch, 0),
                          acks=-1, partition=p, transactional_id=PREFIX + "1")
            ctx.obs["produce.p%d.error_code" % p] = r["error_code"]
            ctx.obs["produce.p%d.base_offset" % p] = r["base_offset"]

        describe_transactions(ctx, c, "open", [PREFIX + "1", PREFIX + "2", "", PREFIX + "none"])
        describe_transactions(ctx, c, "none", [])
        for v in versions(LIST_TRANSACTIONS):
            list_transactions(ctx, c, "list.v%d" % v, v)
            list_transactions(ctx, c, "list-states.v%d" % v, v,
                              states=["Ongoing", "Bogus", "Bogus", "ongoing"])
            list_transactions(ctx, c, "list-pid.v%d" % v, v, pids=[pid])
            list_transactions(ctx, c, "list-pid-unknown.v%d" % v, v, pids=[-5])
            list_transactions(ctx, c, "list-dead.v%d" % v, v, states=["Dead"])
            list_transactions(ctx, c, "list-unknown-states.v%d" % v, v, states=["Bogus"])
        list_transactions(ctx, c, "list-duration-hour", 1, duration=3600000)
        list_transactions(ctx, c, "list-duration-0", 1, states=["Ongoing"], duration=0)
        list_transactions(ctx, c, "list-pattern", 2, pattern=PREFIX + "[12]")
        list_transactions(ctx, c, "list-pattern-partial", 2, pattern="txa")
        list_transactions(ctx, c, "list-pattern-empty", 2, pattern="")
        list_transactions(ctx, c, "list-pattern-invalid", 2, states=["Bogus"], pattern=PREFIX + "(")

        describe_producers(ctx, c, "producers", [(t, [0, 1, 7]), ("txa-missing", [0]),
                                                 ("bad name!", [0]), ("", [1])])

        # The admin's abort of partition 1 (kafka-transactions.sh abort): an ABORT marker with
        # the producer's id and epoch, coordinator epoch 0; then refused ones.
        for v in versions(WRITE_TXN_MARKERS):
            write_markers(ctx, c, "stale-epoch.v%d" % v, v, [(pid, epoch - 1, False, [(t, [1])], 0)])
            write_markers(ctx, c, "unknown.v%d" % v, v,
                          [(pid, epoch, False, [("txa-missing", [0]), (t, [9])], 0)])
            write_markers(ctx, c, "no-partitions.v%d" % v, v, [(pid, epoch, False, [], 0)])
        write_markers(ctx, c, "abort", 1, [(pid, epoch, False, [(t, [1])], 0)])
        write_markers(ctx, c, "fenced-coordinator", 2, [(pid, epoch, False, [(t, [1])], -1)])
        describe_producers(ctx, c, "after-abort", [(t, [0, 1])])
        # The coordinator still has the transaction Ongoing over both partitions.
        describe_transactions(ctx, c, "after-abort-coordinator", [PREFIX + "1"])

        def end():
            r = c.request(END_TXN, 3, {"transactional_id": PREFIX + "1", "producer_id": pid,
                                       "producer_epoch": epoch, "committed": False})
            return r["error_code"], r
        ctx.obs["end.error_code"] = until_ready(end, "EndTxn")[0]
        deadline = time.time() + 30  # Kafka writes the markers after it answered
        while True:
            r = c.request(DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [PREFIX + "1"]})
            if r["transaction_states"][0]["transaction_state"] == "CompleteAbort":
                break
            if time.time() > deadline:
                raise RuntimeError("txa-1 not CompleteAbort after 30 s")
            time.sleep(0.1)
        describe_transactions(ctx, c, "ended", [PREFIX + "1"])
        describe_producers(ctx, c, "ended-producers", [(t, [0, 1])])
        list_transactions(ctx, c, "ended-list", 0, states=["CompleteAbort", "Empty"])
    finally:
        c.close()
