# The two brokers of `make interop`: Apache Kafka 4.4.0 through scripts/kafka-ref and tarn's
# `tarn serve`, each on a free loopback port with its own data directory. Both are stopped by
# stop_all(), which the driver runs on every exit path.
import os
import signal
import socket
import subprocess
import time

from . import wire

# Broker properties both brokers get (Kafka's server.properties through kafka-ref start
# --property, tarn's --override): the group scenarios need a group's first join answered at
# once (Kafka's default waits 3 s for more members; kafka-ref sets 0 too, stated here so the
# suite does not depend on it), and no offsets-expiry pass during the run (Kafka's first comes
# 10 minutes after it loaded __consumer_offsets and deletes the empty groups without offsets,
# writing tombstones on one broker and not, or later, on the other).
PROPERTIES = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.retention.check.interval.ms": "3600000",
    # The cleaner scenario waits for each broker's cleaner; Kafka's thread sleeps 15 s by default
    # after a round that found nothing to clean.
    "log.cleaner.backoff.ms": "100",
}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_ready(port, alive, timeout_s):
    """Until a Metadata request is answered on 127.0.0.1:port."""
    deadline = time.time() + timeout_s
    last = None
    while time.time() < deadline:
        if not alive():
            raise RuntimeError("broker exited during startup")
        try:
            c = wire.Connection(port, timeout_s=2)
            try:
                c.metadata([], version=1)
                return
            finally:
                c.close()
        except (OSError, ConnectionError, Exception) as e:  # not up yet
            last = e
            time.sleep(0.2)
    raise RuntimeError("broker on port %d not ready within %ds (%s)" % (port, timeout_s, last))


class KafkaBroker:
    name = "kafka"

    def __init__(self, repo, work_dir):
        self.repo = repo
        self.dir = os.path.join(work_dir, "kafka")
        self.port = None
        self.started = False

    def start(self):
        self.port = free_port()
        r = subprocess.run([os.path.join(self.repo, "scripts/kafka-ref"), "start", "--port",
                            str(self.port), "--dir", self.dir, "--timeout", "120"] +
                           [a for kv in PROPERTIES.items() for a in ("--property", "%s=%s" % kv)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("kafka-ref start failed: " + r.stderr[-2000:])
        self.started = True

    def data_dir(self):
        return os.path.join(self.dir, "data")

    def stop(self):
        if not self.started:
            return
        self.started = False
        subprocess.run([os.path.join(self.repo, "scripts/kafka-ref"), "stop", "--dir", self.dir,
                        "--keep"], capture_output=True, text=True)

    def log_tail(self):
        try:
            with open(os.path.join(self.dir, "server.log"), errors="replace") as f:
                return f.read()[-3000:]
        except OSError:
            return ""

    def alive(self):
        try:
            with open(os.path.join(self.dir, "kafka.pid")) as f:
                os.kill(int(f.read().strip()), 0)
            return True
        except (OSError, ValueError):
            return False


class TarnBroker:
    name = "tarn"

    def __init__(self, binary, work_dir):
        self.binary = binary
        self.dir = os.path.join(work_dir, "tarn")
        self.port = None
        self.proc = None

    def start(self):
        os.makedirs(os.path.join(self.dir, "data"), exist_ok=True)
        self.port = free_port()
        self.log = open(os.path.join(self.dir, "server.log"), "ab")
        self.proc = subprocess.Popen(
            [self.binary, "serve", "--override", "listeners=PLAINTEXT://127.0.0.1:%d" % self.port,
             "--override", "advertised.listeners=PLAINTEXT://127.0.0.1:%d" % self.port,
             "--override", "log.dirs=" + self.data_dir(), "--override", "node.id=1"] +
            [a for kv in PROPERTIES.items() for a in ("--override", "%s=%s" % kv)],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, start_new_session=True)
        wait_ready(self.port, lambda: self.proc.poll() is None, 30)

    def data_dir(self):
        return os.path.join(self.dir, "data")

    def stop(self):
        if self.proc is None:
            return
        proc, self.proc = self.proc, None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.log.close()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self):
        try:
            with open(os.path.join(self.dir, "server.log"), errors="replace") as f:
                return f.read()[-3000:]
        except OSError:
            return ""
