# Segment comparison for `make interop`: runs Kafka's DumpLogSegments (and `tarn dump-log`) over
# the partition .log files of both brokers, parses batch and record lines into fields, and reads
# the files directly for what the dump does not show (the CRC with producerId normalised).
import os
import re
import struct
import subprocess

from . import wire

FIELD = re.compile(r"(\w+): (.*?)(?= \w+: |$)")


def log_files(data_dir, topic):
    d = os.path.join(data_dir, topic + "-0")
    if not os.path.isdir(d):
        return []
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".log"))


def run_dump(cmd, files, timeout_s=300):
    """Runs a dump tool over files; returns {path: [lines]} (stdout split at `Dumping`)."""
    if not files:
        return {}, ""
    r = subprocess.run(cmd + ["--deep-iteration", "--print-data-log", "--files", ",".join(files)],
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
