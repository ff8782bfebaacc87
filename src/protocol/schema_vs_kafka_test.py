#!/usr/bin/env python3
"""Checks schema/*.schema against Kafka 4.4.0's own message definitions (the JSON files inside
kafka-clients-4.4.0.jar, common/message/*.json), schema/records/*.schema against the coordinator
records of kafka-group-coordinator-4.4.0.jar (common/message/*.json there, "type"
coordinator-key / coordinator-value, "apiKey" the record type), and schema/errors.schema against
Kafka's Errors enum. Run by ctest (protocol_schema_vs_kafka): schema_vs_kafka_test.py <source dir>.

For every message and every version tarn parses it compares, field by field and in order: name,
type, nested struct name, nullable, tagged and tag, flexible override and default; and the
message's flexible versions. Kafka's valid versions must include ours. For records also the
record type and key/value kind, and that every __consumer_offsets record of the group coordinator
(offset commits, classic groups, consumer groups; not share or streams groups) has a schema. The
jars come from `scripts/kafka-ref libs` when that exists (kafka-group-coordinator is a dependency
of the broker jar it fetches), else ${TARN_CACHE:-~/.cache/tarn}/kafka-4.4.0/libs, fetched with
mvn when absent. Exit 77 (skipped) only if the jars cannot be had at all.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile

KAFKA_VERSION = "4.4.0"
SKIP = 77
# The jars the test reads: the wire messages, and the group coordinator's records.
ARTIFACTS = ("kafka-clients", "kafka-group-coordinator")
# What GoldenMessages.java --errors also needs on the class path (kafka-clients logs through it),
# fetched beside them when there is no scripts/kafka-ref.
SLF4J = "org.slf4j:slf4j-api:2.0.17"
# The group coordinator's records that tarn must carry: everything but streams groups' records.
OFFSETS_RECORDS = re.compile(r"(LegacyOffsetCommit|OffsetCommit|GroupMetadata|ConsumerGroup\w*"
                             r"|ShareGroup\w*)(Key|Value)")


def libs_dir(root):
    ref = os.path.join(root, "scripts", "kafka-ref")
    if os.access(ref, os.X_OK):
        try:
            out = subprocess.run([ref, "libs"], capture_output=True, text=True, timeout=600)
            d = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
            if out.returncode == 0 and have_jars(d):
                return d
        except (OSError, subprocess.SubprocessError):
            pass
    cache = os.environ.get("TARN_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "tarn"))
    d = os.path.join(cache, f"kafka-{KAFKA_VERSION}", "libs")
    if not have_jars(d):
        if shutil.which("mvn") is None:
            return None
        for artifact in [f"org.apache.kafka:{a}:{KAFKA_VERSION}" for a in ARTIFACTS] + [SLF4J]:
            subprocess.run(["mvn", "-q", "dependency:copy", f"-Dartifact={artifact}",
                            f"-DoutputDirectory={d}"], timeout=600, check=False)
    return d if have_jars(d) else None


def jar_name(artifact="kafka-clients"):
    return f"{artifact}-{KAFKA_VERSION}.jar"


def have_jars(d):
    return all(os.path.exists(os.path.join(d, jar_name(a))) for a in ARTIFACTS)


def strip_comments(text):
    """Removes // comments outside JSON strings."""
    out, i, in_str = [], 0, False
    while i < len(text):
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            out.append(c)
        elif text.startswith("//", i):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def kafka_range(text):
    return gen.parse_range(text, "kafka json") if text is not None else None


def norm_default(field_type, value):
    if value is None:
        return None
    if isinstance(value, bool):  # a JSON literal (DescribeLogDirsResponse.IsCordoned), not "false"
        return "true" if value else "false"
    v = str(value)
    if field_type in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
        return str(int(v, 0))
    return v


class Checker:
    def __init__(self):
        self.errors = []

    def err(self, msg):
        self.errors.append(msg)

    def compare_fields(self, where, ours, theirs, common, v):
        ours_v = [f for f in ours if gen.in_range(f.versions, v)]
        theirs_v = [f for f in theirs
                    if gen.in_range(kafka_range(f.get("versions", f.get("taggedVersions"))), v)]
        names_o = [f.name for f in ours_v]
        names_t = [f["name"] for f in theirs_v]
        if names_o != names_t:
            self.err(f"{where} v{v}: fields {names_o} != Kafka's {names_t}")
            return
        for o, t in zip(ours_v, theirs_v):
            w = f"{where}.{o.name} v{v}"
            if o.type != t["type"]:
                self.err(f"{w}: type {o.type} != Kafka's {t['type']}")
                continue
            checks = [
                ("nullable", gen.in_range(o.nullable, v),
                 gen.in_range(kafka_range(t.get("nullableVersions")), v)),
                ("tagged", gen.in_range(o.tagged, v),
                 gen.in_range(kafka_range(t.get("taggedVersions")), v)),
            ]
            if gen.in_range(o.tagged, v):
                checks.append(("tag", o.tag, t.get("tag")))
            if o.has_flexible_override or "flexibleVersions" in t:
                checks.append(("flexible", gen.in_range(o.flexible_override, v),
                               gen.in_range(kafka_range(t.get("flexibleVersions")), v)))
            checks.append(("default", norm_default(o.type, o.default),
                           norm_default(t["type"], t.get("default"))))
            for what, a, b in checks:
                if a != b:
                    self.err(f"{w}: {what} {a!r} != Kafka's {b!r}")
            sub_t = t.get("fields")
            if sub_t is None and o.is_struct:
                sub_t = common.get(o.elem_type)
            if o.is_struct or sub_t:
                self.compare_fields(f"{where}.{o.name}", o.fields, sub_t or [], common, v)


def main():
    root = sys.argv[1]
    global gen
    sys.path.insert(0, os.path.join(root, "scripts"))
    import gen_protocol as gen  # noqa: E402

    d = libs_dir(root)
    if d is None:
        print("SKIP: kafka-clients / kafka-group-coordinator jars not available (no "
              "scripts/kafka-ref, no mvn)")
        return SKIP
    jar = zipfile.ZipFile(os.path.join(d, jar_name()))
    group_jar = zipfile.ZipFile(os.path.join(d, jar_name("kafka-group-coordinator")))
    # __transaction_state's records (schema/transaction_log_*.schema, `header` messages).
    txn_jar_path = os.path.join(d, jar_name("kafka-transaction-coordinator"))
    txn_jar = zipfile.ZipFile(txn_jar_path) if os.path.exists(txn_jar_path) else None
    # __share_group_state's records (schema/share_{snapshot,update}_*.schema, `header` messages).
    share_jar_path = os.path.join(d, jar_name("kafka-share-coordinator"))
    share_jar = zipfile.ZipFile(share_jar_path) if os.path.exists(share_jar_path) else None
    messages, apis = gen.load_all(os.path.join(root, "schema"))
    records = gen.load_records(os.path.join(root, "schema"))
    c = Checker()
    checked_versions = 0
    for m in messages + records:
        path = f"common/message/{m.name}.json"
        source = group_jar if m.record_type is not None else jar
        if m.name.startswith("TransactionLog"):
            if txn_jar is None:
                c.err(f"{m.name}: no {jar_name('kafka-transaction-coordinator')} in {d}")
                continue
            source = txn_jar
        if re.match(r"Share(Snapshot|Update)(Key|Value)$", m.name):
            if share_jar is None:
                c.err(f"{m.name}: no {jar_name('kafka-share-coordinator')} in {d}")
                continue
            source = share_jar
        try:
            j = json.loads(strip_comments(source.read(path).decode("utf-8")))
        except KeyError:
            c.err(f"{m.name}: no {path} in {os.path.basename(source.filename)}")
            continue
        if m.api_key is not None and j.get("apiKey") != m.api_key:
            c.err(f"{m.name}: api key {m.api_key} != Kafka's {j.get('apiKey')}")
        if m.record_type is not None:
            if j.get("apiKey") != m.record_type:
                c.err(f"{m.name}: record type {m.record_type} != Kafka's apiKey {j.get('apiKey')}")
            if j.get("type") != f"coordinator-{m.kind}":
                c.err(f"{m.name}: a record {m.kind}, Kafka's type is {j.get('type')}")
        kv = kafka_range(j["validVersions"])
        if not (kv[0] <= m.valid[0] and m.valid[1] <= kv[1]):
            c.err(f"{m.name}: valid {gen.format_range(m.valid)} not within Kafka's "
                  f"{j['validVersions']}")
        kf = kafka_range(j["flexibleVersions"])
        common = {s["name"]: s["fields"] for s in j.get("commonStructs", [])}
        for v in range(m.valid[0], m.valid[1] + 1):
            if gen.in_range(m.flexible, v) != gen.in_range(kf, v):
                c.err(f"{m.name} v{v}: flexible differs from Kafka's {j['flexibleVersions']}")
            c.compare_fields(m.name, m.fields, j["fields"], common, v)
            checked_versions += 1

    # Every __consumer_offsets record Kafka's group coordinator defines has a schema.
    ours = {m.name for m in records}
    for path in sorted(group_jar.namelist()):
        name = re.fullmatch(r"common/message/(\w+)\.json", path)
        if name and OFFSETS_RECORDS.fullmatch(name.group(1)) and name.group(1) not in ours:
            c.err(f"{name.group(1)}: Kafka's group coordinator defines it, schema/records/ "
                  "lacks it")

    # The error table against org.apache.kafka.common.protocol.Errors, through the Java program.
    java = shutil.which("java")
    checked_errors = 0
    if java is not None:
        prog = os.path.join(root, "tests", "java", "GoldenMessages.java")
        out = subprocess.run([java, "-cp", os.path.join(d, "*"), prog, "--errors"],
                             capture_output=True, text=True, timeout=300)
        if out.returncode != 0:
            c.err(f"GoldenMessages.java --errors failed: {out.stderr[-2000:]}")
        else:
            theirs = []
            for line in out.stdout.splitlines():
                code, name, retriable, msg = line.split("\t", 3)
                theirs.append((int(code), name, retriable == "true", msg))
            ours = gen.parse_errors(os.path.join(root, "schema", "errors.schema"))
            if ours != theirs:
                for a, b in zip(ours, theirs):
                    if a != b:
                        c.err(f"errors.schema: {a} != Kafka's {b}")
                        break
                if len(ours) != len(theirs):
                    c.err(f"errors.schema: {len(ours)} errors, Kafka has {len(theirs)}")
            checked_errors = len(theirs)
    else:
        c.err("java not found: cannot check errors.schema against Kafka's Errors enum")

    for e in c.errors:
        print("MISMATCH:", e)
    print(f"checked {len(messages)} messages, {len(records)} coordinator records, "
          f"{checked_versions} message and record versions, {checked_errors} error codes against "
          f"kafka-clients and kafka-group-coordinator {KAFKA_VERSION}: {len(c.errors)} mismatches")
    return 1 if c.errors else 0


if __name__ == "__main__":
    sys.exit(main())
