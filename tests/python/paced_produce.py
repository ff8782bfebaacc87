#!/usr/bin/python3
"""Produces at a steady rate with confluent-kafka (librdkafka), for tests/prometheus_scrape_test.cc,
which checks that Prometheus computes that rate from tarn's /metrics.

  paced_produce.py BOOTSTRAP TOPIC RECORDS_PER_SECOND SECONDS

Sends RECORDS_PER_SECOND / 20 records every 50 ms (100-byte values) for SECONDS, flushing each
tick, so the broker sees the rate in every second (a late tick catches up). Prints "started" after
the first acknowledgement, "at T acked N" after each tick (T: CLOCK_MONOTONIC seconds, the clock
of C++'s steady_clock, so the test can count what was acknowledged in any window), then
"acked N rate R" (R: acknowledged records a second over the run) and "errors N". Exits 0."""
import sys
import time

import confluent_kafka


def main():
    bootstrap, topic = sys.argv[1:3]
    per_second, seconds = int(sys.argv[3]), float(sys.argv[4])
    p = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    state = {"acked": 0, "errors": 0}

    def delivered(err, _msg):
        if err is None:
            state["acked"] += 1
        else:
            state["errors"] += 1

    per_tick = max(1, per_second // 20)
    value = b"v" * 100
    start = time.monotonic()
    tick = 0
    announced = False
    while time.monotonic() - start < seconds:
        for _ in range(per_tick):
            p.produce(topic, value, on_delivery=delivered)
        p.flush(5)
        if not announced and state["acked"] > 0:
            print("started", flush=True)
            announced = True
        print("at %.3f acked %d" % (time.monotonic(), state["acked"]), flush=True)
        tick += 1
        delay = start + tick * 0.05 - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    p.flush(10)
    elapsed = time.monotonic() - start
    print("acked %d rate %.1f" % (state["acked"], state["acked"] / elapsed), flush=True)
    print("errors %d" % state["errors"], flush=True)


if __name__ == "__main__":
    main()
