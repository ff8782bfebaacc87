# Segment comparison for `make interop`: runs Kafka's DumpLogSegments (and `tarn dump-log`) over
# the partition .log files of both brokers, parses batch and record lines into fields, and reads
# the files directly for what the dump does not show (the CRC with producerId normalised).
import base64
import json
import os
import re
import struct
import subprocess

from . import wire

FIELD = re.compile(r"(\w+): (.*?)(?= \w+: |$)")


def log_files(data_dir, topic, partition=0):
    d = os.path.join(data_dir, "%s-%d" % (topic, partition))
    if not os.path.isdir(d):
        return []
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".log"))


def txnindex_files(data_dir, topic, partition=0):
    """The partition's .txnindex files that hold entries (aborted transactions)."""
    d = os.path.join(data_dir, "%s-%d" % (topic, partition))
    if not os.path.isdir(d):
        return []
    return sorted(os.path.join(d, f) for f in os.listdir(d)
                  if f.endswith(".txnindex") and os.path.getsize(os.path.join(d, f)) > 0)


def run_dump(cmd, files, timeout_s=300, options=("--deep-iteration", "--print-data-log")):
    """Runs a dump tool over files; returns {path: [lines]} (stdout split at `Dumping`)."""
    if not files:
        return {}, ""
    r = subprocess.run(cmd + list(options) + ["--files", ",".join(files)],
                       capture_output=True, text=True, timeout=timeout_s)
    out, current = {}, None
    for line in r.stdout.splitlines():
        if line.startswith("Dumping "):
            current = line[len("Dumping "):].strip()
            out[current] = []
        elif current is not None:
            out[current].append(line)
    return out, (r.stderr if r.returncode else "")


def parse_dump(lines):
    """Batch dicts, each with a 'records' list of record dicts."""
    batches = []
    for line in lines:
        s = line.lstrip("| ").rstrip()
        if s.startswith("baseOffset:"):
            b = dict(FIELD.findall(s))
            b["records"] = []
            batches.append(b)
        elif s.startswith("offset:") and batches:
            batches[-1]["records"].append(dict(FIELD.findall(s)))
        elif s.startswith("Found ") or s.startswith("Log starting offset"):
            continue
    return batches


def raw_batches(path):
    """(position, header fields, crc with producerId/epoch zeroed) for each batch of a file."""
    with open(path, "rb") as f:
        data = f.read()
    out, pos = [], 0
    while pos + 61 <= len(data):
        base_offset, length = struct.unpack_from(">qi", data, pos)
        end = pos + 12 + length
        if length < 49 or end > len(data):
            break
        body = bytearray(data[pos + 21:end])  # attributes .. end, the CRC-covered range
        attributes = struct.unpack_from(">h", body, 0)[0]
        producer_id = struct.unpack_from(">q", body, 22)[0]
        body[22:32] = b"\x00" * 10  # producerId (8) and producerEpoch (2)
        out.append({"position": pos, "attributes": attributes, "producer_id": producer_id,
                    "crc_norm": wire.crc32c(bytes(body))})
        pos = end
    return out



# --- __consumer_offsets (DumpLogSegments --offsets-decoder) -----------------------------------

OFFSETS_RECORD = re.compile(r"^(?P<head>offset: .*?) key: (?P<key>\{.*?\}) payload: (?P<payload>.*)$")
TIME_FIELDS = re.compile(r"(?i).*timestamp$")


def kafka_uuid(raw):
    """A topic id as Kafka prints it (Uuid.toString: URL-safe base64, no padding)."""
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def parse_offsets_dump(lines):
    """(batch fields, [record: (head fields, key JSON, payload JSON or None for <DELETE>)])
    per batch of a --offsets-decoder dump."""
    batches = []
    for line in lines:
        s = line.rstrip()
        if s.startswith("baseOffset:"):
            batches.append((dict(FIELD.findall(s)), []))
        elif s.startswith("| offset:") and batches:
            m = OFFSETS_RECORD.match(s[2:])
            if not m:
                batches[-1][1].append(({"unparsed": s}, None, None))
                continue
            payload = m.group("payload")
            batches[-1][1].append((dict(FIELD.findall(m.group("head"))), json.loads(m.group("key")),
                                   None if payload == "<DELETE>" else json.loads(payload)))
    return batches


def _key_group(key):
    data = key.get("data", {}) if isinstance(key, dict) else {}
    return data.get("group", data.get("groupId"))


def _normalise(v, field, aliases, topic_ids, commit_ts):
    if isinstance(v, dict):
        commit = v.get("commitTimestamp")
        return {k: _normalise(x, k, aliases, topic_ids, commit) for k, x in v.items()}
    if isinstance(v, list):
        return [_normalise(x, field, aliases, topic_ids, commit_ts) for x in v]
    if isinstance(v, str):
        if field == "topicId":
            return topic_ids.get(v, "<unknown topic id>")
        return aliases.get(v, v)
    if isinstance(v, int) and not isinstance(v, bool):
        if field == "expireTimestamp" and commit_ts is not None and v >= 0:
            return "commitTimestamp + %d" % (v - commit_ts)
        if TIME_FIELDS.match(field) and v > 0:
            return "<time>"
        if field == "metadataHash" and v != 0:
            # A hash over the subscribed topics' metadata, topic ids included (which differ
            # between brokers); tarn's own function (coordinator/consumer_group.h). Only
            # whether it is written is compared.
            return "<hash>"
    return v


# The field naming an entry of a list inside a record: the lists Kafka writes from hash maps
# (a classic group's members, a member's topics) are compared sorted by it.
ENTRY_NAME = ("memberId", "topicId", "topic")


def _entry_name(x):
    return next((str(x[k]) for k in ENTRY_NAME if k in x), "")


def _flatten(obs, prefix, v):
    if isinstance(v, dict):
        for k, x in v.items():
            _flatten(obs, prefix + "." + k, x)
    elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
        obs[prefix + ".count"] = len(v)
        for i, x in enumerate(sorted(v, key=_entry_name)):
            _flatten(obs, "%s[%d]" % (prefix, i), x)
    else:
        obs[prefix] = v


# ConsumerGroupTargetAssignmentMember (type 7): Kafka writes the member records of a new target
# assignment in the iteration order of a HashMap of member ids (TargetAssignmentBuilder), so a
# run of them in one batch is compared sorted by member id. A batch is applied as a whole.
TARGET_ASSIGNMENT_MEMBER = "7"


def _target_members_sorted(records):
    out, i = [], 0
    while i < len(records):
        j = i
        while (j < len(records) and str(records[j][1].get("type")) == TARGET_ASSIGNMENT_MEMBER):
            j += 1
        if j > i:
            run = sorted(records[i:j], key=lambda r: str(r[1].get("data", {}).get("memberId")))
            # The sorted records take the run's offsets and sequences in order.
            out += [(dict(r[0], offset=o[0].get("offset"), sequence=o[0].get("sequence")),
                     r[1], r[2]) for r, o in zip(run, records[i:j])]
            i = j
        else:
            out.append(records[i])
            i += 1
    return out


BATCH_FIELDS = ("baseOffset", "lastOffset", "count", "baseSequence", "lastSequence", "producerId",
                "producerEpoch", "partitionLeaderEpoch", "isTransactional", "isControl",
                "deleteHorizonMs", "position", "CreateTime", "size", "magic", "compresscodec",
                "crc", "isvalid")


def offsets_observations(lines, group, aliases, raw_topic_ids):
    """disk.offsets.<group>.* observations of one group's records in its __consumer_offsets
    partition (the batches that hold any of them, then each record: its offset, sizes, batch,
    and key and payload field by field), with member ids aliased as the scenario saw them, topic
    ids named, timestamps as <time> (an expire timestamp as commitTimestamp + retention)."""
    topic_ids = {kafka_uuid(k): v for k, v in raw_topic_ids.items()}
    prefix = "disk.offsets.%s" % group
    obs, n_batches, n_records = {}, 0, 0
    for fields, records in parse_offsets_dump(lines):
        mine = _target_members_sorted(
            [r for r in records if r[1] is not None and _key_group(r[1]) == group])
        if not mine:
            continue
        b = "%s.b%d" % (prefix, n_batches)
        for k in BATCH_FIELDS:
            if k in fields:
                obs["%s.batch.%s" % (b, k)] = fields[k]
        obs[b + ".batch.other_groups_records"] = len(records) - len(mine)
        for head, key, payload in mine:
            r = "%s.r%d" % (prefix, n_records)
            obs[r + ".batch"] = n_batches
            for k in ("offset", "CreateTime", "keySize", "valueSize", "sequence", "headerKeys"):
                if k in head:
                    obs["%s.%s" % (r, "createTime" if k == "CreateTime" else k)] = head[k]
            _flatten(obs, r + ".key", _normalise(key, "", aliases, topic_ids, None))
            if payload is None:
                obs[r + ".payload"] = "<DELETE>"
            else:
                _flatten(obs, r + ".payload", _normalise(payload, "", aliases, topic_ids, None))
            n_records += 1
        n_batches += 1
    obs[prefix + ".records"] = n_records
    obs[prefix + ".batches"] = n_batches
    return obs
