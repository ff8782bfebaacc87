# The consumer-group scenarios of `make interop`: FindCoordinator, the classic group protocol
# (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), committed offsets (OffsetCommit, OffsetFetch,
# OffsetDelete), the group admin APIs (DescribeGroups, ListGroups, DeleteGroups) and KIP-848's
# ConsumerGroupHeartbeat and ConsumerGroupDescribe, all hand-built (wire.py) at several versions
# each, flexible and not. Every scenario uses group and topic names of its own; each group it
# registers with ctx.group() also has its __consumer_offsets records compared on disk (Kafka's
# DumpLogSegments --offsets-decoder over both brokers' partition files, scripts/interop).
#
# What legitimately differs is normalised rather than masked where the structure still says
# something: a member id the broker generates is replaced by `<member N>` (N in the order this
# scenario first saw it, so "the leader is the member that joined first" is still compared), and
# its shape (`interop-<uuid>`) is observed separately; topic ids become `<id of TOPIC>`. Lists
# whose order Kafka takes from a hash map (members, groups, topics of an all-offsets fetch) are
# sorted. Each scenario ends with every member gone, so no session or rebalance timer fires
# later, while the other scenarios run, on one broker and not the other.
import re
import time

from . import wire
from .scenarios import Mask, scenario

OFFSETS_TOPIC = "__consumer_offsets"
OFFSETS_PARTITIONS = 50  # offsets.topic.num.partitions, the same default on both brokers

NONE, UNKNOWN_TOPIC_OR_PARTITION, OFFSET_METADATA_TOO_LARGE = 0, 3, 12
COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR = 14, 15, 16
ILLEGAL_GENERATION, INCONSISTENT_GROUP_PROTOCOL, INVALID_GROUP_ID = 22, 23, 24
UNKNOWN_MEMBER_ID, INVALID_SESSION_TIMEOUT, REBALANCE_IN_PROGRESS = 25, 26, 27
INVALID_REQUEST, NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND, MEMBER_ID_REQUIRED = 42, 68, 69, 79
FENCED_INSTANCE_ID, GROUP_SUBSCRIBED_TO_TOPIC, UNKNOWN_TOPIC_ID = 82, 86, 100
FENCED_MEMBER_EPOCH, UNSUPPORTED_ASSIGNOR = 110, 112

SESSION_MS, REBALANCE_MS = 30000, 20000


def java_string_hash(s):
    h = 0
    data = s.encode("utf-16-be")  # Java hashes UTF-16 code units
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def offsets_partition(group):
    """Kafka's partitionFor: Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions."""
    h = java_string_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % OFFSETS_PARTITIONS


# The groups whose __consumer_offsets records are compared, in a fixed order: each gets a name
# (its base, or base-N) whose partition no earlier one has, as far as 50 partitions allow, so its
# records have the same offsets on both brokers whatever else the suite wrote, and the names do
# not depend on which scenarios run. "interop" is the confluent consumer's group.id; "" is
# group-join-errors' (Kafka commits offsets for the empty group id). Groups a scenario never
# creates (named -nosuch) need no partition and keep their plain names.
DISK_GROUPS = [
    "grp-join-versions", "grp-rebalance", "grp-static", "grp-leave", "grp-join-errors",
    "grp-commit", "grp-commit-member", "grp-fetch", "grp-fetch-second", "grp-describe",
    "grp-describe-empty", "grp-describe-left", "grp-describe-consumer", "grp-list-classic",
    "grp-list-simple", "grp-list-consumer", "grp-delete-nonempty", "grp-delete-offsets",
    "grp-delete-emptied", "grp-delete-consumer", "grp-offset-delete", "grp-offset-delete-simple",
    "grp-cg-heartbeat", "grp-cg-heartbeat-v0", "grp-cg-heartbeat-classic", "grp-cg-describe",
    "grp-cg-describe-classic",
]


def _allocate(bases):
    used, names = {offsets_partition("interop"), offsets_partition("")}, {}
    for base in bases:
        name = base
        for n in range(1, 1000):
            if offsets_partition(name) not in used:
                break
            name = "%s-%d" % (base, n)
        if offsets_partition(name) in used:
            name = base  # every partition is taken: share one (records are filtered by group)
        used.add(offsets_partition(name))
        names[base] = name
    return names


_GROUP_NAMES = _allocate(DISK_GROUPS)


UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
                     r"|[A-Za-z0-9_-]{22}$")

# Masks every group scenario shares: the clock in the __consumer_offsets records and batches.
GROUP_MASKS = [
    Mask("disk.offsets.*.createTime", "the coordinator's clock"),
    Mask("disk.offsets.*.batch.CreateTime", "the coordinator's clock"),
    Mask("disk.offsets.*.batch.crc", "the CRC covers the timestamps and the member ids"),
]


# --- observation helpers ----------------------------------------------------------------------


def ids(ctx):
    if not hasattr(ctx, "aliases"):
        ctx.aliases = {}  # generated member id -> "<member N>"
        ctx.topic_ids = {}  # topic id bytes -> "<id of TOPIC>"
        ctx.groups = []  # groups whose __consumer_offsets records are compared
    return ctx


def alias(ctx, member_id, label=None):
    """Registers a member id the broker generated; observes its shape under label."""
    ids(ctx)
    if member_id and member_id not in ctx.aliases:
        ctx.aliases[member_id] = "<member %d>" % (len(ctx.aliases) + 1)
        if label:
            ctx.obs[label + ".member_id_shape"] = UUID_RE.sub("<uuid>", member_id)
    return ctx.aliases.get(member_id, member_id)


def norm(ctx, key, v):
    ids(ctx)
    if isinstance(v, bytes):
        if key.endswith("topic_id") and len(v) == 16:
            return ctx.topic_ids.get(v, "<unknown topic id %s>" % v.hex())
        if key.endswith("assignment"):
            return wire.decode_consumer_assignment(v)
        return v.hex()
    if isinstance(v, str):
        if len(v) > 256:  # metadata of 4096 bytes: its length and first bytes
            return "<%d chars: %s...>" % (len(v), v[:16])
        return ctx.aliases.get(v, v)
    return v


# The field that names an entry of a response list, in order of preference.
IDENTITY = ("group_id", "name", "topic_name", "topic_id", "partition_index", "member_id", "key")


def identity(ctx, entry):
    for k in IDENTITY:
        if k in entry:
            v = norm(ctx, k, entry[k])
            return (0, v, "") if isinstance(v, int) else (1, 0, str(v))
    return (2, 0, "")


def observe(ctx, prefix, obj, key=""):
    """Flattens a decoded response into ctx.obs: prefix.field, prefix.list[i].field. A list of
    entries is observed sorted by each entry's name (IDENTITY): Kafka answers several groups,
    topics or partitions in the order of its shards and hash maps, not the request's, and no
    client depends on the order."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if not k.startswith("_"):
                observe(ctx, prefix + "." + k, v, k)
    elif isinstance(obj, list) and obj and isinstance(obj[0], dict):
        ctx.obs[prefix + ".count"] = len(obj)
        for i, x in enumerate(sorted(obj, key=lambda e: identity(ctx, e))):
            observe(ctx, "%s[%d]" % (prefix, i), x, key)
    elif isinstance(obj, list):
        ctx.obs[prefix] = [norm(ctx, key, x) for x in obj]
    else:
        ctx.obs[prefix] = norm(ctx, key, obj)


def sort_by(items, *keys):
    return sorted(items, key=lambda x: tuple(str(x.get(k)) for k in keys))


def call(ctx, conn, label, api, version, body, record=True):
    """One request and its answer, observed under label; a closed connection is observed as
    such (and the connection is reopened) instead of failing the scenario."""
    try:
        r = conn.request(api, version, body)
    except ConnectionError:
        ctx.obs[label + ".response"] = "connection closed"
        conn.reopen()
        return None
    if record:
        observe(ctx, label, r)
    return r


class Conn(wire.Connection):
    def __init__(self, ctx, client_id="interop"):
        self.port, self.cid = ctx.port, client_id
        super().__init__(ctx.port, timeout_s=40.0, client_id=client_id)

    def reopen(self):
        try:
            self.close()
        except OSError:
            pass
        wire.Connection.__init__(self, self.port, timeout_s=40.0, client_id=self.cid)


def wait_coordinator(ctx, group):
    """Until the broker coordinates the group (Kafka first creates __consumer_offsets and loads
    its partitions: COORDINATOR_NOT_AVAILABLE, then NOT_COORDINATOR or
    COORDINATOR_LOAD_IN_PROGRESS for a while). Not observed."""
    deadline = time.time() + 60
    c = Conn(ctx)
    try:
        while True:
            f = c.request(wire.FIND_COORDINATOR, 3, {"key": group, "key_type": 0})
            err = f["error_code"]
            if err == NONE:
                r = c.request(wire.OFFSET_FETCH, 8, {"groups": [
                    {"group_id": group, "member_id": None, "member_epoch": -1, "topics": []}],
                    "require_stable": False})
                err = r["groups"][0]["error_code"]
            if err == NONE:
                return
            if err not in (COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS,
                           NOT_COORDINATOR) or time.time() > deadline:
                raise RuntimeError("group %s: coordinator not ready (error %d)" % (group, err))
            time.sleep(0.2)
    finally:
        c.close()


def group(ctx, base, disk=True):
    """The suite's name for this scenario's group `base` (one of DISK_GROUPS with disk), its
    coordinator ready; with disk, its __consumer_offsets records are compared after the run."""
    ids(ctx)
    name = _GROUP_NAMES[base] if disk else base
    if disk and name not in ctx.groups:
        ctx.groups.append(name)
    wait_coordinator(ctx, name)
    return name


def topic(ctx, name, partitions=1, configs=None):
    ids(ctx)
    c = ctx.conn()
    try:
        r = c.create_topic(name, configs, partitions=partitions)
    finally:
        c.close()
    ctx.obs["create_topic.%s.error" % name] = r["error_code"]
    ctx.topics.append(name)
    deadline = time.time() + 15
    while True:  # every partition led (Kafka elects them asynchronously)
        c = ctx.conn()
        try:
            t = c.metadata([name])["topics"][0]
            ready = (t["error_code"] == 0 and len(t["partitions"]) == partitions
                     and all(p["leader_id"] >= 0 for p in t["partitions"]))
            if ready:
                ready = all(c.list_offset(name, -1, partition=p)["error_code"] == 0
                            for p in range(partitions))
        finally:
            c.close()
        if ready:
            ctx.topic_ids[t["topic_id"]] = "<id of %s>" % name
            return t["topic_id"]
        if time.time() > deadline:
            raise RuntimeError("topic %s has no leaders after 15s" % name)
        time.sleep(0.1)


# --- a classic group member -------------------------------------------------------------------

SYNC_FOR_JOIN = {0: 0, 1: 0, 2: 1, 3: 2, 4: 3, 5: 3, 6: 4, 7: 5, 8: 5, 9: 5}
HEARTBEAT_FOR_JOIN = {0: 0, 1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 6: 4, 7: 4, 8: 4, 9: 4}
LEAVE_FOR_JOIN = {0: 0, 1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 6: 4, 7: 4, 8: 5, 9: 5}


class Member:
    """One classic-protocol member on its own connection: its member id and generation as the
    coordinator last gave them."""

    def __init__(self, ctx, group_id, topics=("t",), instance_id=None, protocol_type="consumer",
                 protocols=None, session_ms=SESSION_MS, rebalance_ms=REBALANCE_MS):
        self.ctx, self.group = ctx, group_id
        self.conn = Conn(ctx)
        self.instance_id = instance_id
        self.member_id, self.generation = "", -1
        self.protocol_type = protocol_type
        self.protocols = protocols if protocols is not None else [
            ("range", wire.consumer_subscription(topics))]
        self.session_ms, self.rebalance_ms = session_ms, rebalance_ms
        self.pending = None
        self.protocol_name = None

    def close(self):
        self.conn.close()

    def join_body(self, **kw):
        if "protocols" in kw:
            kw["protocols"] = [{"name": n, "metadata": m} for n, m in kw["protocols"]]
        b = {"group_id": self.group, "session_timeout_ms": self.session_ms,
             "rebalance_timeout_ms": self.rebalance_ms, "member_id": self.member_id,
             "group_instance_id": self.instance_id, "protocol_type": self.protocol_type,
             "protocols": [{"name": n, "metadata": m} for n, m in self.protocols],
             "reason": None}
        b.update(kw)
        return b

    def send_join(self, version, **kw):
        body = self.join_body(**kw)
        self.conn.send_request(wire.JOIN_GROUP, version, body)
        self.pending, self.sent_member_id = version, body["member_id"]

    def receive_join(self, label, members_sorted=True):
        version, self.pending = self.pending, None
        try:
            r = self.conn.receive_response(wire.JOIN_GROUP, version)
        except ConnectionError:
            self.ctx.obs[label + ".response"] = "connection closed"
            self.conn.reopen()
            return None
        if r["member_id"] and r["member_id"] != self.sent_member_id:  # the broker's
            alias(self.ctx, r["member_id"], label)
        if r["error_code"] in (NONE, MEMBER_ID_REQUIRED) and r["member_id"]:
            self.member_id = r["member_id"]
        if r["error_code"] == NONE:
            self.generation = r["generation_id"]
            self.protocol_name = r["protocol_name"]
        if members_sorted:
            r["members"] = sorted(r["members"], key=lambda m: norm(self.ctx, "", m["member_id"]))
        observe(self.ctx, label, r)
        return r

    def join(self, label, version, **kw):
        self.send_join(version, **kw)
        return self.receive_join(label)

    def join_required(self, label, version, **kw):
        """A new dynamic member's join: from v4 the coordinator first answers MEMBER_ID_REQUIRED
        with the member id to join with (KIP-394)."""
        r = self.join(label, version, **kw)
        if r is not None and r["error_code"] == MEMBER_ID_REQUIRED:
            r = self.join(label + ".rejoin", version, **kw)
        return r

    def sync_body(self, assignments=(), **kw):
        b = {"group_id": self.group, "generation_id": self.generation,
             "member_id": self.member_id, "group_instance_id": self.instance_id,
             "protocol_type": self.protocol_type, "protocol_name": self.protocol_name,
             "assignments": [{"member_id": m, "assignment": a} for m, a in assignments]}
        b.update(kw)
        return b

    def send_sync(self, version, assignments=(), **kw):
        self.conn.send_request(wire.SYNC_GROUP, version, self.sync_body(assignments, **kw))
        self.pending = version

    def receive_sync(self, label):
        version, self.pending = self.pending, None
        try:
            r = self.conn.receive_response(wire.SYNC_GROUP, version)
        except ConnectionError:
            self.ctx.obs[label + ".response"] = "connection closed"
            self.conn.reopen()
            return None
        observe(self.ctx, label, r)
        return r

    def sync(self, label, version, assignments=(), **kw):
        self.send_sync(version, assignments, **kw)
        return self.receive_sync(label)

    def heartbeat(self, label, version, **kw):
        b = {"group_id": self.group, "generation_id": self.generation,
             "member_id": self.member_id, "group_instance_id": self.instance_id}
        b.update(kw)
        return call(self.ctx, self.conn, label, wire.HEARTBEAT, version, b)

    def leave(self, label, version, **kw):
        if version <= 2:
            b = {"group_id": self.group, "member_id": self.member_id}
        else:
            b = {"group_id": self.group, "members": [
                {"member_id": self.member_id, "group_instance_id": self.instance_id,
                 "reason": "interop" if version >= 5 else None}]}
        b.update(kw)
        return call(self.ctx, self.conn, label, wire.LEAVE_GROUP, version, b)

    def commit(self, label, version, topics, **kw):
        args = {"generation": self.generation, "member_id": self.member_id,
                "instance_id": self.instance_id}
        args.update(kw)
        return commit(self.ctx, self.conn, label, version, self.group, topics, **args)


def leader_assignment(members, topic, partitions):
    """Round-robin of the topic's partitions over the members (the leader's choice: any
    deterministic one will do)."""
    out = []
    for i, m in enumerate(members):
        out.append((m.member_id, wire.consumer_assignment(
            [(topic, [p for p in range(partitions) if p % len(members) == i])])))
    return out


def wait_members(ctx, group_id, n, state="PreparingRebalance"):
    """Until DescribeGroups shows n members in `state` (a join sent on another connection has
    reached the coordinator). Not observed."""
    c = Conn(ctx)
    deadline = time.time() + 15
    try:
        while time.time() < deadline:
            g = c.request(wire.DESCRIBE_GROUPS, 0, {"groups": [group_id]})["groups"][0]
            if g["group_state"] == state and len(g["members"]) >= n:
                return
            time.sleep(0.05)
    finally:
        c.close()
    raise RuntimeError("group %s: %d members in %s not seen within 15s" % (group_id, n, state))


def form_group(ctx, label, group_id, n, topic_name, partitions=1, version=5, **kw):
    """n members joined at one generation and synced (Stable): the first joins alone, the others
    join while it is Stable, it rejoins on REBALANCE_IN_PROGRESS and the leader assigns."""
    members = [Member(ctx, group_id, topics=(topic_name,), **kw) for _ in range(n)]
    first = members[0]
    first.join_required("%s.m1.join" % label, version)
    if n == 1:
        first.sync("%s.m1.sync" % label, SYNC_FOR_JOIN[version],
                   leader_assignment(members, topic_name, partitions))
        return members
    for i, m in enumerate(members[1:], 2):
        if version >= 4 and m.instance_id is None:
            m.join("%s.m%d.join" % (label, i), version)  # MEMBER_ID_REQUIRED
        m.send_join(version)
    wait_members(ctx, group_id, n)
    # The followers' answers first: a static member's id first appears in its own answer, and
    # the aliases are given in this order, not in the order of the leader's member list.
    first.send_join(version)
    for i, m in enumerate(members[1:], 2):
        m.receive_join("%s.m%d.joined" % (label, i))
    first.receive_join("%s.m1.rejoin" % label)
    for m in members[1:]:
        m.send_sync(SYNC_FOR_JOIN[version])
    first.sync("%s.m1.sync" % label, SYNC_FOR_JOIN[version],
               leader_assignment(members, topic_name, partitions))
    for i, m in enumerate(members[1:], 2):
        m.receive_sync("%s.m%d.sync" % (label, i))
    return members


def leave_all(ctx, label, members):
    """Every member leaves in one LeaveGroup v3; their connections close."""
    call(ctx, members[0].conn, label, wire.LEAVE_GROUP, 3, {
        "group_id": members[0].group, "members": [
            {"member_id": m.member_id, "group_instance_id": m.instance_id, "reason": None}
            for m in members]})
    for m in members:
        m.close()


# --- offsets ----------------------------------------------------------------------------------


def commit(ctx, conn, label, version, group_id, topics, generation=-1, member_id="",
           instance_id=None, retention_ms=-1):
    """topics: [(name or topic id bytes, [(partition, offset, leader epoch, metadata)])]."""
    body = {"group_id": group_id, "generation_id_or_member_epoch": generation,
            "member_id": member_id, "group_instance_id": instance_id,
            "retention_time_ms": retention_ms,
            "topics": [{"name": t if isinstance(t, str) else "",
                        "topic_id": t if isinstance(t, bytes) else b"\x00" * 16,
                        "partitions": [{"partition_index": p, "committed_offset": o,
                                        "committed_leader_epoch": e, "committed_metadata": md}
                                       for p, o, e, md in parts]} for t, parts in topics]}
    return call(ctx, conn, label, wire.OFFSET_COMMIT, version, body)


def fetch(ctx, conn, label, version, groups, require_stable=False):
    """groups: [(group id, topics or None, member id, member epoch)] (one group below v8);
    topics: [(name or topic id bytes, [partitions])]."""
    def topics_of(ts, v):
        if ts is None:
            return None
        return [{"name": t if isinstance(t, str) else "",
                 "topic_id": t if isinstance(t, bytes) else b"\x00" * 16,
                 "partition_indexes": list(ps)} for t, ps in ts]
    if version < 8:
        g, ts = groups[0][0], groups[0][1]
        body = {"group_id": g, "topics": topics_of(ts, version), "require_stable": require_stable}
    else:
        body = {"groups": [{"group_id": g, "member_id": mid, "member_epoch": ep,
                            "topics": topics_of(ts, version)} for g, ts, mid, ep in groups],
                "require_stable": require_stable}
    try:
        r = conn.request(wire.OFFSET_FETCH, version, body)
    except ConnectionError:
        ctx.obs[label + ".response"] = "connection closed"
        conn.reopen()
        return None
    observe(ctx, label, r)
    return r


def describe(ctx, conn, label, version, groups, include_ops=False):
    r = call(ctx, conn, label, wire.DESCRIBE_GROUPS, version,
             {"groups": groups, "include_authorized_operations": include_ops}, record=False)
    if r is not None:
        for g in r["groups"]:
            g["members"] = sorted(g["members"], key=lambda m: norm(ctx, "", m["member_id"]))
        observe(ctx, label, r)
    return r


def list_groups(ctx, conn, label, version, prefix, states=(), types=()):
    """ListGroups filtered to this scenario's groups (names starting with prefix), sorted."""
    r = call(ctx, conn, label, wire.LIST_GROUPS, version,
             {"states_filter": list(states), "types_filter": list(types)}, record=False)
    if r is not None:
        r["groups"] = sort_by([g for g in r["groups"] if g["group_id"].startswith(prefix)],
                              "group_id")
        observe(ctx, label, r)
    return r


# --- KIP-848 consumer-group members -----------------------------------------------------------


def cg_heartbeat(ctx, conn, label, version, group_id, member_id, epoch, topics=None,
                 owned=None, instance_id=None, rack_id=None, rebalance_ms=-1, assignor=None,
                 regex=None, record=True):
    """owned: [(topic id bytes, [partitions])] or None."""
    body = {"group_id": group_id, "member_id": member_id, "member_epoch": epoch,
            "instance_id": instance_id, "rack_id": rack_id, "rebalance_timeout_ms": rebalance_ms,
            "subscribed_topic_names": None if topics is None else list(topics),
            "subscribed_topic_regex": regex, "server_assignor": assignor,
            "topic_partitions": None if owned is None else [
                {"topic_id": t, "partitions": list(p)} for t, p in owned]}
    try:
        r = conn.request(wire.CONSUMER_GROUP_HEARTBEAT, version, body)
    except ConnectionError:
        ctx.obs[label + ".response"] = "connection closed"
        conn.reopen()
        return None
    if r["member_id"] and not member_id:
        alias(ctx, r["member_id"], label)
    if r["assignment"] is not None:
        r["assignment"]["topic_partitions"] = sorted(
            ({"topic_id": tp["topic_id"], "partitions": sorted(tp["partitions"])}
             for tp in r["assignment"]["topic_partitions"]),
            key=lambda tp: norm(ctx, "topic_id", tp["topic_id"]))
    if record:
        observe(ctx, label, r)
        if r["assignment"] is None:
            ctx.obs[label + ".assignment"] = None
    return r


def owned_of(r):
    """The assignment of a ConsumerGroupHeartbeat answer as the owned partitions of the next."""
    return [(tp["topic_id"], tp["partitions"]) for tp in r["assignment"]["topic_partitions"]]


def cg_describe(ctx, conn, label, version, groups, include_ops=False):
    r = call(ctx, conn, label, wire.CONSUMER_GROUP_DESCRIBE, version,
             {"group_ids": groups, "include_authorized_operations": include_ops}, record=False)
    if r is not None:
        for g in r["groups"]:
            g["members"] = sort_by(g["members"], "member_id")
            for m in g["members"]:
                for a in ("assignment", "target_assignment"):
                    m[a]["topic_partitions"] = sorted(
                        ({"topic_id": tp["topic_id"], "topic_name": tp["topic_name"],
                          "partitions": sorted(tp["partitions"])}
                         for tp in m[a]["topic_partitions"]), key=lambda tp: tp["topic_name"])
        observe(ctx, label, r)
    return r


class CGMember:
    """A KIP-848 member on its own connection: its epoch and the partitions it owns (the last
    assignment it was given, acknowledged in its next heartbeat as a client does), and the
    distinct assignments it was given in order."""

    def __init__(self, ctx, group_id, member_id, topics, instance_id=None, rack_id=None,
                 assignor=None, version=1):
        self.ctx, self.group, self.member_id = ctx, group_id, member_id
        self.conn = Conn(ctx)
        self.topics, self.instance_id, self.rack_id = list(topics), instance_id, rack_id
        self.assignor, self.version = assignor, version
        self.epoch, self.owned, self.history = 0, [], []

    def _took(self, r):
        if r is None or r["error_code"] != NONE:
            return r
        if r["member_id"]:
            self.member_id = r["member_id"]
        self.epoch = r["member_epoch"]
        if r["assignment"] is not None:
            self.owned = owned_of(r)
            shown = ["%s:%s" % (norm(self.ctx, "topic_id", t), p) for t, p in self.owned]
            if not self.history or self.history[-1] != shown:
                self.history.append(shown)
        return r

    def join(self, label, brief=False):
        """brief: the group has members, so whether this answer already carries the new target
        is timing (see converge); only its error and member id are observed."""
        r = cg_heartbeat(
            self.ctx, self.conn, label, self.version, self.group, self.member_id, 0,
            topics=self.topics, owned=[], instance_id=self.instance_id, rack_id=self.rack_id,
            rebalance_ms=30000, assignor=self.assignor, record=not brief)
        if brief and r is not None:
            for k in ("error_code", "error_message", "member_id", "heartbeat_interval_ms"):
                observe(self.ctx, label + "." + k, r[k], k)
        return self._took(r)

    def heartbeat(self, label, **kw):
        args = {"owned": self.owned, "instance_id": self.instance_id}
        args.update(kw)
        epoch = args.pop("epoch", self.epoch)
        return self._took(cg_heartbeat(self.ctx, self.conn, label, self.version, self.group,
                                       self.member_id, epoch, **args))

    def poll(self):
        """An unobserved heartbeat: when it comes relative to the assignment is timing."""
        body = {"group_id": self.group, "member_id": self.member_id, "member_epoch": self.epoch,
                "instance_id": self.instance_id, "rack_id": None, "rebalance_timeout_ms": -1,
                "subscribed_topic_names": None, "subscribed_topic_regex": None,
                "server_assignor": None, "topic_partitions": [
                    {"topic_id": t, "partitions": list(p)} for t, p in self.owned]}
        r = self.conn.request(wire.CONSUMER_GROUP_HEARTBEAT, self.version, body)
        if r["error_code"] != NONE:
            raise RuntimeError("member %s: heartbeat error %d %s" % (
                self.member_id, r["error_code"], r["error_message"]))
        if r["assignment"] is not None:
            r["assignment"]["topic_partitions"] = sorted(
                r["assignment"]["topic_partitions"], key=lambda tp: norm(
                    self.ctx, "topic_id", tp["topic_id"]))
            for tp in r["assignment"]["topic_partitions"]:
                tp["partitions"] = sorted(tp["partitions"])
        return self._took(r)

    def close(self):
        self.conn.close()


def converge(ctx, label, group_id, members):
    """Heartbeats every member until the group is Stable with each member at the group epoch and
    owning its target (Kafka 4.4 computes a new target at most once per
    group.consumer.assignment.interval.ms, 1 s, and off the request thread, so when a heartbeat
    first carries it is timing); then observes each member's distinct assignments so far, its
    epoch, and the group as ConsumerGroupDescribe shows it."""
    c = Conn(ctx)
    deadline = time.time() + 20
    try:
        while True:
            for m in members:
                m.poll()
            g = c.request(wire.CONSUMER_GROUP_DESCRIBE, 1, {
                "group_ids": [group_id], "include_authorized_operations": False})["groups"][0]
            def owned(x, which):
                return sorted((tp["topic_name"], sorted(tp["partitions"]))
                              for tp in x[which]["topic_partitions"])
            done = (g["group_state"] == "Stable" and g["assignment_epoch"] == g["group_epoch"]
                    and all(x["member_epoch"] == g["group_epoch"] and
                            owned(x, "assignment") == owned(x, "target_assignment")
                            for x in g["members"]))
            if done:
                break
            if time.time() > deadline:
                ctx.obs[label + ".converged"] = False
                break
            time.sleep(0.2)
        for m in members:
            ctx.obs["%s.%s.assignments" % (label, norm(ctx, "", m.member_id))] = m.history
            ctx.obs["%s.%s.epoch" % (label, norm(ctx, "", m.member_id))] = m.epoch
        cg_describe(ctx, c, label + ".describe", 1, [group_id])
    finally:
        c.close()


# --- the scenarios ----------------------------------------------------------------------------


@scenario("group-find-coordinator", masks=GROUP_MASKS,
          expect={"v0.error_code": 0, "v3.error_code": 0, "v4.coordinators[0].error_code": 0})
def find_coordinator(ctx):
    """FindCoordinator for a group (key type 0) at v0-v6, single key and batched (v4+), with an
    empty key beside a real one; the node must be this broker."""
    g = group(ctx, "grp-find", disk=False)
    c = Conn(ctx)
    try:
        for v in range(7):
            r = c.request(wire.FIND_COORDINATOR, v, {"key": g, "key_type": 0,
                                                      "coordinator_keys": [g, "", g + "-other"]})
            for entry in [r] if v < 4 else r["coordinators"]:
                if entry.get("port") == ctx.port:
                    entry["port"] = "<this broker's port>"
            observe(ctx, "v%d" % v, r)
        r = c.request(wire.FIND_COORDINATOR, 0, {"key": ""})
        observe(ctx, "v0-empty-key", dict(r, port="<this broker's port>")
                if r["port"] == ctx.port else r)
    finally:
        c.close()


@scenario("group-join-sync-heartbeat-leave-versions", masks=GROUP_MASKS,
          expect={"v3.join.error_code": 0, "v0.join.generation_id": 1,
                  "v4.join.error_code": MEMBER_ID_REQUIRED, "v4.join.rejoin.error_code": 0,
                  "v9.join.error_code": MEMBER_ID_REQUIRED, "v9.join.rejoin.error_code": 0,
                  "v9.join.rejoin.skip_assignment": False})
def join_versions(ctx):
    """One member joins, syncs as leader, heartbeats and leaves at each JoinGroup version 0-9
    (with the SyncGroup, Heartbeat and LeaveGroup version of the same client era): v0-v3 join
    directly with an empty member id, v4+ get MEMBER_ID_REQUIRED first. Each leave empties the
    group, so the next join starts a new generation."""
    g = group(ctx, "grp-join-versions")
    t = "grp-join-versions-t"
    topic(ctx, t, partitions=2)
    for v in range(10):
        m = Member(ctx, g, topics=(t,))
        r = m.join_required("v%d.join" % v, v)
        ctx.obs["v%d.join.leader_is_self" % v] = r["leader"] == r["member_id"]
        m.sync("v%d.sync" % v, SYNC_FOR_JOIN[v], leader_assignment([m], t, 2))
        m.heartbeat("v%d.heartbeat" % v, HEARTBEAT_FOR_JOIN[v])
        m.leave("v%d.leave" % v, LEAVE_FOR_JOIN[v])
        m.heartbeat("v%d.heartbeat-after-leave" % v, HEARTBEAT_FOR_JOIN[v])
        m.close()
    c = Conn(ctx)
    describe(ctx, c, "describe-after", 5, [g])
    c.close()


@scenario("group-rebalance-heartbeat-states", masks=GROUP_MASKS,
          expect={"a.hb-stable.error_code": 0, "a.hb-old-generation.error_code": ILLEGAL_GENERATION,
                  "a.hb-unknown-member.error_code": UNKNOWN_MEMBER_ID,
                  "a.hb-preparing.error_code": REBALANCE_IN_PROGRESS,
                  "a.commit-completing.topics[0].partitions[0].error_code": REBALANCE_IN_PROGRESS})
def rebalance_states(ctx):
    """Two members through a rebalance, with Heartbeat, OffsetCommit and DescribeGroups in every
    state: Stable, PreparingRebalance (B joined: A's heartbeat says REBALANCE_IN_PROGRESS),
    CompletingRebalance (joined, not yet synced: heartbeats pass, commits are refused), the
    follower's SyncGroup waiting for the leader's, then B leaving and A alone again."""
    g = group(ctx, "grp-rebalance")
    t = "grp-rebalance-t"
    topic(ctx, t, partitions=3)
    c = Conn(ctx)
    a, b = Member(ctx, g, topics=(t,)), Member(ctx, g, topics=(t,))
    a.join_required("a.join", 5)
    describe(ctx, c, "describe-completing-1", 5, [g])
    a.sync("a.sync", 3, leader_assignment([a], t, 3))
    describe(ctx, c, "describe-stable-1", 5, [g])
    a.heartbeat("a.hb-stable", 3)
    a.heartbeat("a.hb-old-generation", 3, generation_id=a.generation - 1)
    a.heartbeat("a.hb-future-generation", 3, generation_id=a.generation + 1)
    a.heartbeat("a.hb-unknown-member", 3, member_id="interop-no-such-member")
    a.heartbeat("a.hb-empty-member", 3, member_id="")
    a.heartbeat("a.hb-v0", 0)
    a.heartbeat("a.hb-v4", 4)
    a.commit("a.commit-stable", 8, [(t, [(0, 1, -1, "s")])])
    b.join("b.join", 5)  # MEMBER_ID_REQUIRED
    b.send_join(5)
    wait_members(ctx, g, 2)
    describe(ctx, c, "describe-preparing", 5, [g])
    a.heartbeat("a.hb-preparing", 3)
    a.heartbeat("a.hb-preparing-old-generation", 3, generation_id=a.generation - 1)
    a.commit("a.commit-preparing", 8, [(t, [(0, 2, -1, "p")])])
    a.join("a.rejoin", 5)
    b.receive_join("b.joined")
    describe(ctx, c, "describe-completing-2", 5, [g])
    a.heartbeat("a.hb-completing", 3)
    a.heartbeat("a.hb-completing-old-generation", 3, generation_id=a.generation - 1)
    a.commit("a.commit-completing", 8, [(t, [(0, 3, -1, "c")])])
    b.send_sync(3)  # the follower's SyncGroup waits for the leader's
    time.sleep(0.3)
    a.sync("a.sync-2", 3, leader_assignment([a, b], t, 3))
    b.receive_sync("b.sync")
    describe(ctx, c, "describe-stable-2", 5, [g])
    a.heartbeat("a.hb-stable-2", 3)
    b.heartbeat("b.hb-stable-2", 3)
    a.commit("a.commit-stable-2", 8, [(t, [(0, 4, -1, "s2")])])
    b.leave("b.leave", 4)
    describe(ctx, c, "describe-after-b-left", 5, [g])
    a.heartbeat("a.hb-after-b-left", 3)
    a.join("a.rejoin-alone", 5)
    a.sync("a.sync-3", 3, leader_assignment([a], t, 3))
    a.leave("a.leave", 3)
    a.heartbeat("a.hb-after-leave", 3)
    describe(ctx, c, "describe-empty", 5, [g])
    fetch(ctx, c, "fetch", 5, [(g, [(t, [0])], None, -1)])
    # Heartbeat and SyncGroup for a group that does not exist.
    nog = "grp-rebalance-nosuch"
    call(ctx, c, "hb-unknown-group", wire.HEARTBEAT, 3, {
        "group_id": nog, "generation_id": 1, "member_id": "interop-x", "group_instance_id": None})
    call(ctx, c, "sync-unknown-group", wire.SYNC_GROUP, 3, {
        "group_id": nog, "generation_id": 1, "member_id": "interop-x", "group_instance_id": None,
        "assignments": []})
    a.close()
    b.close()
    c.close()


@scenario("group-static-members", masks=GROUP_MASKS,
          expect={"s1.join.error_code": 0, "old.hb.error_code": FENCED_INSTANCE_ID,
                  "v9.restart.skip_assignment": True})
def static_members(ctx):
    """KIP-345 static members: a join with a group instance id needs no MEMBER_ID_REQUIRED; a
    restart (the same instance id, an empty member id) takes a new member id and fences the old
    one (FENCED_INSTANCE_ID on Heartbeat, SyncGroup, OffsetCommit, LeaveGroup and JoinGroup);
    at JoinGroup v9 the restarted leader of a Stable group is told to skip the assignment
    (KIP-814); then below v9."""
    g = group(ctx, "grp-static")
    t = "grp-static-t"
    topic(ctx, t, partitions=2)
    s = Member(ctx, g, topics=(t,), instance_id="instance-1")
    s.join("s1.join", 9)
    s.sync("s1.sync", 5, leader_assignment([s], t, 2))
    old_id, old_gen = s.member_id, s.generation
    s.heartbeat("s1.hb", 4)
    # The restart: a new connection, the same instance id, no member id.
    s2 = Member(ctx, g, topics=(t,), instance_id="instance-1")
    s2.join("v9.restart", 9)
    ctx.obs["v9.restart.new_member_id"] = s2.member_id != old_id
    s2.sync("v9.restart.sync", 5, leader_assignment([s2], t, 2))
    s.heartbeat("old.hb", 4, member_id=old_id, generation_id=old_gen)
    s.sync("old.sync", 5, leader_assignment([s], t, 2), member_id=old_id)
    s.commit("old.commit", 8, [(t, [(0, 7, -1, "")])])
    s.join("old.join", 9, member_id=old_id)
    s.leave("old.leave", 4, members=[{"member_id": old_id, "group_instance_id": "instance-1",
                                      "reason": None}])
    s2.heartbeat("new.hb", 4)
    s2.commit("new.commit", 8, [(t, [(0, 8, -1, "")])])
    c = Conn(ctx)
    describe(ctx, c, "describe", 5, [g])
    # A restart at JoinGroup v5 (no SkipAssignment).
    s3 = Member(ctx, g, topics=(t,), instance_id="instance-1")
    s3.join("v5.restart", 5)
    if s3.generation != s2.generation:  # a rebalance was started: finish it
        s3.sync("v5.restart.sync", 3, leader_assignment([s3], t, 2))
    s2.heartbeat("v5.old.hb", 3)
    describe(ctx, c, "describe-2", 5, [g])
    # A second static member, then both leave by instance id with an empty member id.
    s4 = Member(ctx, g, topics=(t,), instance_id="instance-2")
    s4.send_join(5)
    wait_members(ctx, g, 2)
    s3.send_join(5)
    s4.receive_join("s4.joined")
    s3.receive_join("s3.rejoin")
    s4.send_sync(3)
    time.sleep(0.3)
    s3.sync("s3.sync", 3, leader_assignment([s3, s4], t, 2))
    s4.receive_sync("s4.sync")
    call(ctx, c, "leave-by-instance", wire.LEAVE_GROUP, 4, {"group_id": g, "members": [
        {"member_id": "", "group_instance_id": "instance-1", "reason": None},
        {"member_id": "", "group_instance_id": "instance-2", "reason": None},
        {"member_id": "", "group_instance_id": "instance-3", "reason": None}]})
    describe(ctx, c, "describe-3", 5, [g])
    for m in (s, s2, s3, s4):
        m.close()
    c.close()


@scenario("group-leave-versions", masks=GROUP_MASKS,
          expect={"v0.unknown-member.error_code": UNKNOWN_MEMBER_ID,
                  "v3.batch.members[1].error_code": UNKNOWN_MEMBER_ID})
def leave_versions(ctx):
    """LeaveGroup v0-v2 (one member id) and v3-v5 (a batch of members, with unknown ones)."""
    g = group(ctx, "grp-leave")
    t = "grp-leave-t"
    topic(ctx, t)
    c = Conn(ctx)
    ms = form_group(ctx, "form1", g, 3, t)
    call(ctx, c, "v0.unknown-member", wire.LEAVE_GROUP, 0,
         {"group_id": g, "member_id": "interop-not-a-member"})
    ms[2].leave("v1.m3", 1)
    ms[1].leave("v2.m2", 2)
    describe(ctx, c, "describe-preparing", 5, [g])
    call(ctx, c, "v3.batch", wire.LEAVE_GROUP, 3, {"group_id": g, "members": [
        {"member_id": ms[0].member_id, "group_instance_id": None},
        {"member_id": "interop-not-a-member", "group_instance_id": None}]})
    describe(ctx, c, "describe-empty", 5, [g])
    call(ctx, c, "v0.empty-group", wire.LEAVE_GROUP, 0,
         {"group_id": g, "member_id": ms[0].member_id})
    for m in ms:
        m.close()
    ms = form_group(ctx, "form2", g, 3, t)
    call(ctx, c, "v4.unknown-only", wire.LEAVE_GROUP, 4, {"group_id": g, "members": [
        {"member_id": "interop-not-a-member", "group_instance_id": None}]})
    call(ctx, c, "v5.batch", wire.LEAVE_GROUP, 5, {"group_id": g, "members": [
        {"member_id": ms[2].member_id, "group_instance_id": None, "reason": "done"},
        {"member_id": "interop-not-a-member", "group_instance_id": None, "reason": None},
        {"member_id": ms[1].member_id, "group_instance_id": None, "reason": None},
        {"member_id": ms[0].member_id, "group_instance_id": None, "reason": "bye"}]})
    describe(ctx, c, "describe-empty-2", 5, [g])
    nog = "grp-leave-nosuch"
    call(ctx, c, "v2.unknown-group", wire.LEAVE_GROUP, 2, {"group_id": nog, "member_id": "x"})
    call(ctx, c, "v4.unknown-group", wire.LEAVE_GROUP, 4, {"group_id": nog, "members": [
        {"member_id": "x", "group_instance_id": None}]})
    for m in ms:
        m.close()
    c.close()


@scenario("group-join-errors", masks=GROUP_MASKS,
          expect={"session-too-short.error_code": INVALID_SESSION_TIMEOUT,
                  "session-too-long.error_code": INVALID_SESSION_TIMEOUT,
                  "empty-group-id.v5.error_code": INVALID_GROUP_ID,
                  "other-protocol-type.error_code": INCONSISTENT_GROUP_PROTOCOL,
                  "no-common-protocol.error_code": INCONSISTENT_GROUP_PROTOCOL})
def join_errors(ctx):
    """JoinGroup's refusals: session timeouts outside group.min/max.session.timeout.ms, an empty
    group id (also on the other group APIs), an unknown member id, protocols that do not match
    the group's (another protocol type, no protocol in common, none at all), and SyncGroup v5
    naming another protocol."""
    g = group(ctx, "grp-join-errors")
    t = "grp-join-errors-t"
    topic(ctx, t)
    c = Conn(ctx)
    probe = Member(ctx, g, topics=(t,))
    probe.join("session-too-short", 5, session_timeout_ms=1000)
    probe.join("session-too-long", 5, session_timeout_ms=1800001)
    probe.join("unknown-member-id", 5, member_id="interop-made-up")
    for v in (0, 5, 9):
        probe.join("empty-group-id.v%d" % v, v, group_id="")
    call(ctx, c, "empty-group-id.heartbeat", wire.HEARTBEAT, 4,
         {"group_id": "", "generation_id": 1, "member_id": "m", "group_instance_id": None})
    call(ctx, c, "empty-group-id.sync", wire.SYNC_GROUP, 5,
         {"group_id": "", "generation_id": 1, "member_id": "m", "group_instance_id": None,
          "protocol_type": None, "protocol_name": None, "assignments": []})
    call(ctx, c, "empty-group-id.leave", wire.LEAVE_GROUP, 4,
         {"group_id": "", "members": [{"member_id": "m", "group_instance_id": None}]})
    commit(ctx, c, "empty-group-id.commit", 8, "", [(t, [(0, 1, -1, "")])])
    fetch(ctx, c, "empty-group-id.fetch", 8, [("", [(t, [0])], None, -1)])
    describe(ctx, c, "empty-group-id.describe", 5, [""])
    call(ctx, c, "empty-group-id.delete", wire.DELETE_GROUPS, 2, {"groups_names": [""]})
    # A first member with an empty protocol type, then with no protocols: nothing to join.
    probe.join("empty-protocol-type", 5, protocol_type="")
    probe.join("no-protocols", 5, protocols=[])
    a = Member(ctx, g, topics=(t,))
    a.join_required("a.join", 5)
    a.sync("a.sync", 5, leader_assignment([a], t, 1))
    a.sync("a.sync-other-protocol", 5, leader_assignment([a], t, 1), protocol_name="roundrobin")
    a.sync("a.sync-other-type", 5, leader_assignment([a], t, 1), protocol_type="connect")
    b = Member(ctx, g, topics=(t,))
    b.join("other-protocol-type", 5, protocol_type="connect")
    b.join("no-common-protocol", 5, protocols=[("roundrobin", wire.consumer_subscription([t]))])
    b.join("no-common-protocol.v9", 9,
           protocols=[("roundrobin", wire.consumer_subscription([t]))])
    describe(ctx, c, "describe", 5, [g])
    a.leave("a.leave", 5)
    for m in (probe, a, b):
        m.close()
    c.close()


@scenario("group-offset-commit-versions", masks=GROUP_MASKS,
          expect={"v8.unknown-group-generation-1.topics[0].partitions[0].error_code":
                  ILLEGAL_GENERATION,
                  "v9.unknown-group-generation-1.topics[0].partitions[0].error_code":
                  GROUP_ID_NOT_FOUND,
                  "v10.unknown-group-generation-1.topics[0].partitions[0].error_code":
                  GROUP_ID_NOT_FOUND,
                  "v8.metadata-4097.topics[0].partitions[0].error_code": OFFSET_METADATA_TOO_LARGE,
                  "v8.metadata-4096.topics[0].partitions[0].error_code": NONE,
                  "v2.topics[0].partitions[0].error_code": NONE})
def commit_versions(ctx):
    """OffsetCommit v2-v10 into a simple group (generation -1, no member): retention time
    (v2-4, an OffsetCommitValue v1 with an expire timestamp on disk), leader epochs (v6+),
    instance id (v7+), topic ids (v10); then an unknown topic, partition and topic id, metadata
    of 4096 and 4097 bytes, and a generation >= 0 for a group that does not exist (v8:
    ILLEGAL_GENERATION, v9+: GROUP_ID_NOT_FOUND)."""
    g = group(ctx, "grp-commit")
    t = "grp-commit-t"
    tid = topic(ctx, t, partitions=3)
    c = Conn(ctx)
    for v in range(2, 11):
        name = tid if v >= 10 else t
        parts = [(v % 3, 100 * v, 5 if v >= 6 else -1, "v%d" % v),
                 ((v + 1) % 3, 100 * v + 1, -1, None)]
        commit(ctx, c, "v%d" % v, v, g, [(name, parts)],
               retention_ms=86400000 if v == 3 else -1)
        fetch(ctx, c, "v%d.fetch" % v, 8, [(g, [(t, [0, 1, 2])], None, -1)])
    commit(ctx, c, "v8.unknown-topic", 8, g, [("grp-commit-no-such-topic", [(0, 1, -1, "")])])
    commit(ctx, c, "v3.unknown-topic", 3, g, [("grp-commit-no-such-topic", [(0, 1, -1, "")])])
    commit(ctx, c, "v8.unknown-partition", 8, g, [(t, [(7, 1, -1, ""), (0, 2, -1, "")])])
    commit(ctx, c, "v10.unknown-topic-id", 10, g, [(b"\x01" * 16, [(0, 1, -1, "")])])
    commit(ctx, c, "v8.metadata-4097", 8, g, [(t, [(0, 5, -1, "x" * 4097)])])
    commit(ctx, c, "v8.metadata-4096", 8, g, [(t, [(0, 6, -1, "y" * 4096)])])
    commit(ctx, c, "v4.metadata-4097", 4, g, [(t, [(0, 5, -1, "x" * 4097), (1, 9, -1, "")])])
    commit(ctx, c, "v8.no-topics", 8, g, [])
    commit(ctx, c, "v8.negative-offset", 8, g, [(t, [(2, -5, -1, "neg")])])
    for v in (7, 8, 9, 10):
        nog = "grp-commit-nosuch-v%d" % v
        commit(ctx, c, "v%d.unknown-group-generation-1" % v, v, nog,
               [(tid if v >= 10 else t, [(0, 1, -1, "")])], generation=1, member_id="interop-m")
    nog = "grp-commit-nosuch-member"
    commit(ctx, c, "v9.unknown-group-member-only", 9, nog, [(t, [(0, 1, -1, "")])],
           generation=-1, member_id="interop-m")
    fetch(ctx, c, "fetch", 8, [(g, None, None, -1)])
    for v in (8, 9):
        nog = "grp-commit-nosuch-v%d" % v
        fetch(ctx, c, "fetch-unknown-group-v%d" % v, 8, [(nog, None, None, -1)])
    describe(ctx, c, "describe", 5, [g])
    c.close()


@scenario("group-offset-commit-member-checks", masks=GROUP_MASKS,
          expect={"completing.topics[0].partitions[0].error_code": REBALANCE_IN_PROGRESS,
                  "stable.topics[0].partitions[0].error_code": NONE,
                  "wrong-generation.topics[0].partitions[0].error_code": ILLEGAL_GENERATION,
                  "unknown-member.topics[0].partitions[0].error_code": UNKNOWN_MEMBER_ID})
def commit_member_checks(ctx):
    """OffsetCommit by a classic group's member: refused while CompletingRebalance, accepted when
    Stable at v2-v10, refused with a wrong generation or member, with generation -1 while the
    group has members, and during PreparingRebalance."""
    g = group(ctx, "grp-commit-member")
    t = "grp-commit-member-t"
    tid = topic(ctx, t, partitions=2)
    a = Member(ctx, g, topics=(t,))
    a.join_required("a.join", 5)
    a.commit("completing", 8, [(t, [(0, 1, -1, "")])])
    a.sync("a.sync", 3, leader_assignment([a], t, 2))
    a.commit("stable", 8, [(t, [(0, 2, -1, "")])])
    for v in (2, 5, 6, 7, 9, 10):
        a.commit("stable.v%d" % v, v, [(tid if v >= 10 else t, [(1, 10 + v, 3, "v%d" % v)])])
    a.commit("wrong-generation", 8, [(t, [(0, 3, -1, "")])], generation=a.generation + 1)
    a.commit("wrong-generation.v9", 9, [(t, [(0, 3, -1, "")])], generation=a.generation + 1)
    a.commit("unknown-member", 8, [(t, [(0, 3, -1, "")])], member_id="interop-nobody")
    a.commit("generation-minus-1", 8, [(t, [(0, 3, -1, "")])], generation=-1, member_id="")
    a.commit("generation-minus-1-member", 8, [(t, [(0, 3, -1, "")])], generation=-1)
    a.commit("instance-id-of-nobody", 8, [(t, [(0, 3, -1, "")])], instance_id="nobody")
    b = Member(ctx, g, topics=(t,))
    b.join("b.join", 5)
    b.send_join(5)
    wait_members(ctx, g, 2)
    a.commit("preparing", 8, [(t, [(0, 4, -1, "")])])
    a.commit("preparing.old-generation", 8, [(t, [(0, 4, -1, "")])], generation=a.generation - 1)
    a.join("a.rejoin", 5)
    b.receive_join("b.joined")
    b.commit("b.completing", 8, [(t, [(0, 5, -1, "")])])
    leave_all(ctx, "leave", [a, b])
    c = Conn(ctx)
    fetch(ctx, c, "fetch", 8, [(g, [(t, [0, 1])], None, -1)])
    describe(ctx, c, "describe", 5, [g])
    c.close()


@scenario("group-offset-fetch-versions", masks=GROUP_MASKS,
          expect={"v1.topics[1].partitions[2].committed_offset": -1,
                  "v10.unknown-topic-id.groups[0].topics[0].partitions[0].error_code":
                  UNKNOWN_TOPIC_ID})
def fetch_versions(ctx):
    """OffsetFetch of committed and uncommitted partitions, of an unknown topic, and of all
    partitions (null topics), at v1, v2, v5, v6, v7 (require_stable), v8 (several groups, one
    unknown), v9 (member id and epoch) and v10 (topic ids)."""
    g = group(ctx, "grp-fetch")
    g2 = group(ctx, "grp-fetch-second")
    nog = "grp-fetch-nosuch"
    t, t2 = "grp-fetch-t", "grp-fetch-t2"
    tid, tid2 = topic(ctx, t, partitions=3), topic(ctx, t2)
    c = Conn(ctx)
    commit(ctx, c, "commit", 8, g, [(t, [(0, 10, 3, "m0"), (1, 11, -1, None)]),
                                    (t2, [(0, 20, -1, "")])])
    commit(ctx, c, "commit-v2", 2, g, [(t, [(1, 12, -1, "old")])])
    commit(ctx, c, "commit-second", 8, g2, [(t2, [(0, 30, 1, "second")])])
    some = [(t, [0, 1, 2]), (t2, [0]), ("grp-fetch-no-such-topic", [0])]
    for v in (1, 2, 5, 6, 7):
        fetch(ctx, c, "v%d" % v, v, [(g, some, None, -1)], require_stable=v == 7)
    for v in (2, 5, 7):
        fetch(ctx, c, "v%d.all" % v, v, [(g, None, None, -1)])
        fetch(ctx, c, "v%d.unknown-group" % v, v, [(nog, [(t, [0])], None, -1)])
        fetch(ctx, c, "v%d.unknown-group-all" % v, v, [(nog, None, None, -1)])
    fetch(ctx, c, "v8", 8, [(g, some, None, -1), (nog, None, None, -1), (g2, None, None, -1)])
    fetch(ctx, c, "v8.all", 8, [(g, None, None, -1)])
    fetch(ctx, c, "v9", 9, [(g, some, None, -1)])
    fetch(ctx, c, "v9.member", 9, [(g, [(t, [0])], "interop-someone", 3)])
    fetch(ctx, c, "v10", 10, [(g, [(tid, [0, 1, 2]), (tid2, [0])], None, -1)])
    fetch(ctx, c, "v10.all", 10, [(g, None, None, -1), (g2, None, None, -1)])
    fetch(ctx, c, "v10.unknown-topic-id", 10, [(g, [(b"\x02" * 16, [0])], None, -1)])
    c.close()


@scenario("group-describe-versions", masks=GROUP_MASKS,
          expect={"v0.groups[0].group_state": "Stable", "v0.groups[2].group_state": "Empty",
                  "v5.groups[4].group_state": "Dead",
                  "v6.groups[4].error_code": GROUP_ID_NOT_FOUND})
def describe_versions(ctx):
    """DescribeGroups v0-v6 of a Stable classic group of two members, an Empty group with
    offsets, an Empty classic group whose members left, a group that does not exist (Dead, and
    GROUP_ID_NOT_FOUND at v6) and a KIP-848 consumer group; with and without authorized
    operations (v3+)."""
    g = group(ctx, "grp-describe")
    ge = group(ctx, "grp-describe-empty")
    gl = group(ctx, "grp-describe-left")
    gc = group(ctx, "grp-describe-consumer")
    nog = "grp-describe-nosuch"
    t = "grp-describe-t"
    topic(ctx, t, partitions=2)
    c = Conn(ctx)
    ms = form_group(ctx, "form", g, 2, t, partitions=2)
    commit(ctx, c, "commit-empty", 8, ge, [(t, [(0, 1, -1, "")])])
    left = form_group(ctx, "form-left", gl, 1, t, partitions=2)
    leave_all(ctx, "left.leave", left)
    cg_heartbeat(ctx, c, "cg.join", 1, gc, "describe-cg-member-000001", 0, topics=[t],
                 rebalance_ms=30000, owned=[])
    groups = [g, ge, gl, nog, gc]
    for v in range(7):
        describe(ctx, c, "v%d" % v, v, groups)
        if v >= 3:
            describe(ctx, c, "v%d.ops" % v, v, groups, include_ops=True)
    cg_heartbeat(ctx, c, "cg.leave", 1, gc, "describe-cg-member-000001", -1)
    leave_all(ctx, "leave", ms)
    c.close()


@scenario("group-list-filters", masks=GROUP_MASKS)
def list_filters(ctx):
    """ListGroups v0-v5 (only this scenario's groups are observed): a Stable classic group, an
    Empty one with offsets only, and a Stable KIP-848 consumer group; v4 filters by state
    (Kafka's names, lower case, several, unknown), v5 by type and by both."""
    prefix = "grp-list-"
    ga, gb, gc = (group(ctx, "grp-list-classic"), group(ctx, "grp-list-simple"),
                  group(ctx, "grp-list-consumer"))
    t = "grp-list-t"
    topic(ctx, t)
    c = Conn(ctx)
    ms = form_group(ctx, "form", ga, 1, t)
    commit(ctx, c, "commit", 8, gb, [(t, [(0, 1, -1, "")])])
    cg_heartbeat(ctx, c, "cg.join", 1, gc, "list-cg-member-0000001", 0, topics=[t],
                 rebalance_ms=30000, owned=[])
    for v in range(6):
        list_groups(ctx, c, "v%d" % v, v, prefix)
    for name, states in (("stable", ["Stable"]), ("empty", ["Empty"]),
                         ("lower-case", ["stable"]), ("two", ["Stable", "Empty"]),
                         ("preparing", ["PreparingRebalance"]), ("unknown", ["NoSuchState"]),
                         ("dead", ["Dead"]), ("assigning", ["Assigning"])):
        list_groups(ctx, c, "v4.states-%s" % name, 4, prefix, states=states)
    for name, types in (("classic", ["classic"]), ("consumer", ["consumer"]),
                        ("upper-case", ["Consumer"]), ("both", ["classic", "consumer"]),
                        ("share", ["share"]), ("unknown", ["nosuchtype"])):
        list_groups(ctx, c, "v5.types-%s" % name, 5, prefix, types=types)
    list_groups(ctx, c, "v5.stable-consumer", 5, prefix, states=["Stable"], types=["consumer"])
    list_groups(ctx, c, "v5.empty-classic", 5, prefix, states=["Empty"], types=["classic"])
    cg_heartbeat(ctx, c, "cg.leave", 1, gc, "list-cg-member-0000001", -1)
    leave_all(ctx, "leave", ms)
    list_groups(ctx, c, "v5.after-leave", 5, prefix)
    c.close()


@scenario("group-delete", masks=GROUP_MASKS,
          expect={"v0.results[0].error_code": NON_EMPTY_GROUP,
                  "v0.results[1].error_code": GROUP_ID_NOT_FOUND,
                  "v1.results[0].error_code": NONE})
def delete_groups(ctx):
    """DeleteGroups v0-v3: a group with a member (NON_EMPTY_GROUP), one that does not exist
    (GROUP_ID_NOT_FOUND), an Empty group with offsets and an Empty classic group (deleted:
    their offsets go, DescribeGroups says Dead), a KIP-848 group with and without a member,
    v3's error messages, then the first group once its member left."""
    gn = group(ctx, "grp-delete-nonempty")
    go = group(ctx, "grp-delete-offsets")
    ge = group(ctx, "grp-delete-emptied")
    gc = group(ctx, "grp-delete-consumer")
    nog = "grp-delete-nosuch"
    t = "grp-delete-t"
    topic(ctx, t)
    c = Conn(ctx)
    ms = form_group(ctx, "form", gn, 1, t)
    commit(ctx, c, "commit", 8, go, [(t, [(0, 1, -1, "")])])
    emptied = form_group(ctx, "form-emptied", ge, 1, t)
    emptied[0].commit("emptied.commit", 8, [(t, [(0, 2, -1, "")])])
    leave_all(ctx, "emptied.leave", emptied)
    cg_heartbeat(ctx, c, "cg.join", 1, gc, "delete-cg-member-00001", 0, topics=[t],
                 rebalance_ms=30000, owned=[])
    call(ctx, c, "v0", wire.DELETE_GROUPS, 0, {"groups_names": [gn, nog]})
    call(ctx, c, "v1", wire.DELETE_GROUPS, 1, {"groups_names": [go]})
    call(ctx, c, "v2", wire.DELETE_GROUPS, 2, {"groups_names": [ge, gc]})
    call(ctx, c, "v3", wire.DELETE_GROUPS, 3, {"groups_names": [gn, nog, go, gc]})
    fetch(ctx, c, "fetch-deleted", 8, [(go, None, None, -1), (ge, None, None, -1)])
    describe(ctx, c, "describe-deleted", 5, [go, ge])
    list_groups(ctx, c, "list", 5, "grp-delete-")
    cg_heartbeat(ctx, c, "cg.leave", 1, gc, "delete-cg-member-00001", -1)
    call(ctx, c, "v3.consumer-after-leave", wire.DELETE_GROUPS, 3, {"groups_names": [gc]})
    leave_all(ctx, "leave", ms)
    call(ctx, c, "v3.after-leave", wire.DELETE_GROUPS, 3, {"groups_names": [gn]})
    list_groups(ctx, c, "list-after", 5, "grp-delete-")
    c.close()


@scenario("group-offset-delete", masks=GROUP_MASKS,
          expect={"subscribed.topics[0].partitions[0].error_code": GROUP_SUBSCRIBED_TO_TOPIC,
                  "subscribed.topics[1].partitions[0].error_code": NONE})
def offset_delete(ctx):
    """OffsetDelete v0: a topic the group's members subscribe to (GROUP_SUBSCRIBED_TO_TOPIC)
    beside one they do not (deleted), an unknown topic and partition, a group that does not
    exist; then the same topic once the group is Empty, and a simple group."""
    g = group(ctx, "grp-offset-delete")
    gs = group(ctx, "grp-offset-delete-simple")
    nog = "grp-offset-delete-nosuch"
    ta, tb = "grp-offset-delete-a", "grp-offset-delete-b"
    topic(ctx, ta, partitions=2)
    topic(ctx, tb)
    c = Conn(ctx)
    ms = form_group(ctx, "form", g, 1, ta, partitions=2)
    ms[0].commit("commit", 8, [(ta, [(0, 1, -1, ""), (1, 2, -1, "")]), (tb, [(0, 3, -1, "")])])
    body = lambda group_id, topics: {"group_id": group_id, "topics": [
        {"name": n, "partitions": [{"partition_index": p} for p in ps]} for n, ps in topics]}
    call(ctx, c, "subscribed", wire.OFFSET_DELETE, 0,
         body(g, [(ta, [0]), (tb, [0]), ("grp-offset-delete-no-such-topic", [0]), (ta, [9])]))
    call(ctx, c, "unknown-group", wire.OFFSET_DELETE, 0, body(nog, [(ta, [0])]))
    call(ctx, c, "empty-group-id", wire.OFFSET_DELETE, 0, body("", [(ta, [0])]))
    fetch(ctx, c, "fetch-1", 8, [(g, [(ta, [0, 1]), (tb, [0])], None, -1)])
    leave_all(ctx, "leave", ms)
    call(ctx, c, "after-leave", wire.OFFSET_DELETE, 0, body(g, [(ta, [0])]))
    call(ctx, c, "not-committed", wire.OFFSET_DELETE, 0, body(g, [(tb, [0])]))
    fetch(ctx, c, "fetch-2", 8, [(g, None, None, -1)])
    commit(ctx, c, "simple.commit", 8, gs, [(ta, [(0, 5, -1, "")])])
    call(ctx, c, "simple", wire.OFFSET_DELETE, 0, body(gs, [(ta, [0, 1])]))
    fetch(ctx, c, "fetch-simple", 8, [(gs, None, None, -1)])
    describe(ctx, c, "describe", 5, [g, gs])
    c.close()


@scenario("consumer-group-heartbeat", masks=GROUP_MASKS,
          expect={"a.join.error_code": 0, "a.fenced-epoch.error_code": FENCED_MEMBER_EPOCH,
                  "unknown-member.error_code": UNKNOWN_MEMBER_ID,
                  "v1.empty-member-id.error_code": INVALID_REQUEST,
                  "unsupported-assignor.error_code": UNSUPPORTED_ASSIGNOR,
                  "a.leave.member_epoch": -1})
def consumer_group_heartbeat(ctx):
    """KIP-848's ConsumerGroupHeartbeat v0-v1: a member joins (epoch 0) and gets every partition
    of its topic, heartbeats (with its fields and without), then the requests' errors (a fenced
    epoch, an unknown member, missing or invalid fields, an unknown assignor, a classic group);
    a second member joins and the partitions move to it through revocation; a static member
    leaves for a while (-2) and comes back under another member id; everyone leaves (-1); v0's
    member id generated by the coordinator."""
    g = group(ctx, "grp-cg-heartbeat")
    gv0 = group(ctx, "grp-cg-heartbeat-v0")
    gk = group(ctx, "grp-cg-heartbeat-classic")
    t, t2 = "grp-cg-heartbeat-t", "grp-cg-heartbeat-t2"
    topic(ctx, t, partitions=4)
    topic(ctx, t2)
    c = Conn(ctx)
    a = CGMember(ctx, g, "cg-heartbeat-member-a01", [t], assignor="uniform")
    a.join("a.join")
    a.heartbeat("a.full", topics=[t], rebalance_ms=30000, assignor="uniform")
    a.heartbeat("a.empty", owned=None)
    a.heartbeat("a.fenced-epoch", epoch=a.epoch + 5)
    a.heartbeat("a.older-epoch", epoch=a.epoch - 1)
    x = "cg-heartbeat-member-x0"
    cg_heartbeat(ctx, c, "unknown-member", 1, g, "cg-heartbeat-nobody-0001", 1)
    cg_heartbeat(ctx, c, "v1.empty-member-id", 1, g, "", 0, topics=[t], rebalance_ms=30000,
                 owned=[])
    cg_heartbeat(ctx, c, "no-subscription", 1, g, x + "1", 0, rebalance_ms=30000, owned=[])
    cg_heartbeat(ctx, c, "no-rebalance-timeout", 1, g, x + "2", 0, topics=[t], owned=[])
    cg_heartbeat(ctx, c, "no-owned-partitions", 1, g, x + "3", 0, topics=[t],
                 rebalance_ms=30000)
    cg_heartbeat(ctx, c, "unsupported-assignor", 1, g, x + "4", 0, topics=[t],
                 rebalance_ms=30000, assignor="no-such-assignor", owned=[])
    cg_heartbeat(ctx, c, "empty-group-id", 1, "", x + "5", 0, topics=[t], rebalance_ms=30000,
                 owned=[])
    cg_heartbeat(ctx, c, "empty-instance-id", 1, g, x + "6", 0, topics=[t], rebalance_ms=30000,
                 owned=[], instance_id="")
    cg_heartbeat(ctx, c, "leave-unknown-member", 1, g, x + "7", -1)
    cg_heartbeat(ctx, c, "v0.empty-member-id-rejoin", 0, g, "", 1)
    # A classic group with members, not of the consumer protocol, cannot take this member.
    k = form_group(ctx, "classic", gk, 1, t2, protocol_type="connect",
                   protocols=[("v1", b"\x00\x01")])
    cg_heartbeat(ctx, c, "classic-group", 1, gk, x + "8", 0, topics=[t2], rebalance_ms=30000,
                 owned=[])
    leave_all(ctx, "classic.leave", k)
    # B joins: A revokes half of the partitions before B gets them.
    time.sleep(1.1)  # past Kafka's group.consumer.assignment.interval.ms since A's target
    b = CGMember(ctx, g, "cg-heartbeat-member-b01", [t, t2])
    b.join("b.join", brief=True)
    converge(ctx, "with-b", g, [a, b])
    # A static member joins, leaves for a while (-2), returns under a new member id.
    time.sleep(1.1)
    s1 = CGMember(ctx, g, "cg-heartbeat-member-s01", [t], instance_id="cg-instance-1")
    s1.join("s.join", brief=True)
    converge(ctx, "with-s", g, [a, b, s1])
    s1.heartbeat("s.temporary-leave", epoch=-2)
    cg_describe(ctx, c, "after-temporary-leave", 1, [g])
    s2 = CGMember(ctx, g, "cg-heartbeat-member-s02", [t], instance_id="cg-instance-1")
    s2.join("s.rejoin-other-member-id", brief=True)
    converge(ctx, "s-back", g, [a, b, s2])
    s2.heartbeat("s.leave", epoch=-1)
    s1.heartbeat("s.leave-old-member-id", epoch=-1)
    b.heartbeat("b.leave", epoch=-1)
    epoch_a = a.epoch
    a.heartbeat("a.leave", epoch=-1)
    a.heartbeat("a.after-leave", epoch=epoch_a)
    cg_describe(ctx, c, "describe-empty", 1, [g])
    # v0: the coordinator generates the member id.
    v0 = CGMember(ctx, gv0, "", [t2], version=0)
    v0.join("v0.join")
    if v0.member_id:
        v0.heartbeat("v0.heartbeat")
        v0.heartbeat("v0.leave", epoch=-1)
    for m in (a, b, s1, s2, v0):
        m.close()
    c.close()


@scenario("consumer-group-describe", masks=GROUP_MASKS,
          expect={"v0.groups[0].error_code": 0, "v0.groups[2].error_code": GROUP_ID_NOT_FOUND,
                  "v1.groups[0].members[0].member_type": 1})
def consumer_group_describe(ctx):
    """ConsumerGroupDescribe v0-v1 of a consumer group of two members (one static, with a rack,
    and the range assignor), with and without authorized operations, beside a group that does
    not exist and a classic group; then the emptied group."""
    g = group(ctx, "grp-cg-describe")
    gk = group(ctx, "grp-cg-describe-classic")
    nog = "grp-cg-describe-nosuch"
    t = "grp-cg-describe-t"
    topic(ctx, t, partitions=2)
    c = Conn(ctx)
    a = CGMember(ctx, g, "cg-describe-member-a001", [t], instance_id="describe-instance",
                 rack_id="rack-1", assignor="range")
    a.join("a.join")
    time.sleep(1.1)  # past Kafka's group.consumer.assignment.interval.ms
    b = CGMember(ctx, g, "cg-describe-member-b001", [t])
    b.join("b.join", brief=True)
    converge(ctx, "converged", g, [a, b])
    k = form_group(ctx, "classic", gk, 1, t, partitions=2)
    for v in (0, 1):
        cg_describe(ctx, c, "v%d" % v, v, [g, nog, gk])
        cg_describe(ctx, c, "v%d.ops" % v, v, [g], include_ops=True)
    cg_describe(ctx, c, "empty-group-id", 1, [""])
    leave_all(ctx, "classic.leave", k)
    a.heartbeat("a.leave", epoch=-1)
    b.heartbeat("b.leave", epoch=-1)
    cg_describe(ctx, c, "empty", 1, [g])
    for m in (a, b):
        m.close()
    c.close()


# The admin scenarios register after these; they change broker configs and quotas and put them
# back (admin_scenarios.py).
from . import admin_scenarios  # noqa: E402,F401
