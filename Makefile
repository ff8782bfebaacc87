# The two commands of the README: `make run` and `make test`. Everything else is a helper.
# Both install what they need first (scripts/install-deps, idempotent, as root on Debian 12).
BUILD       ?= build
ASAN_BUILD  ?= build-asan
FUZZ_BUILD  ?= build-fuzz
TSAN_BUILD  ?= build-tsan
FUZZ_LONG_SECONDS ?= 600
JOBS        ?= $(shell nproc)
# Tests ctest runs at once: twice the cores. An integration test mostly waits (on its broker, its
# clients and JVMs over loopback): one test a core kept 0.9 of the 2 cores busy in the release
# suite (348 CPU-seconds in about 420 s); four at once, an estimated 268 s instead of 427
# (docs/reliability.md#7). The quota tests, which measure rates, take two of the four slots
# (tests/CMakeLists.txt). Compiles stay at JOBS.
TEST_JOBS   ?= $(shell echo $$(( $(JOBS) * 2 )))
FUZZ_SECONDS ?= 20
CMAKE_FLAGS ?=
# Unity builds: each module's sources compile in batches of 8, so Asio's, spdlog's and fmt's
# headers and templates are compiled once a batch instead of once a file (a third of a cold
# sanitizer build's time, docs/reliability.md#7). Test executables stay one compile a file.
# UNITY=OFF for a tree where single files are rebuilt often.
UNITY       ?= ON
# The tests that start Apache Kafka 4.4.0 (the interop oracle: the Kafka half of a parametrised
# test, every "..._against_kafka"): `make interop` runs them, `make test` and the sanitizer
# suites leave them out (CI's 60-minute budget). tests/kafka_test_names.h holds tests to it.
KAFKA_TESTS := $(shell cat tests/kafka_tests.regex)

.PHONY: all deps build run cluster package test test-unit test-asan test-tsan crash-test soak fuzz fuzz-long bench bench-quick interop format clean

all: build

deps:
	@scripts/install-deps

$(BUILD)/build.ninja: | deps
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DTARN_UNITY=$(UNITY) $(CMAKE_FLAGS)

# Installs the build dependencies first (idempotent, under a second once they are there), so
# `make build` works on a fresh Debian machine as `make run` and `make test` do.
build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# A Debian package of the broker and the client library (cmake/tarn_install.cmake): tarn in
# /usr/bin, libtarn and its headers, a systemd unit and /etc/tarn/server.properties.
package: deps build
	cd $(BUILD) && cpack -G DEB

run: deps build
	mkdir -p data
	$(BUILD)/tarn serve

# Three brokers on one etcd on this machine (docs/cluster.md); Ctrl-C stops them all.
cluster: deps build
	scripts/cluster-up --tarn $(BUILD)/tarn

# The whole suite: unit and integration tests of the release build, then the fuzz targets for
# a bounded time each.
test: deps build
	scripts/kafka-ref fetch  # once, before tests run in parallel (they share the jar cache)
	cd $(BUILD) && ctest --output-on-failure -j $(TEST_JOBS) --timeout 600 -E '$(KAFKA_TESTS)'
	$(MAKE) fuzz

# Sanitizer trees compile with line tables only (-g1: file:line in every report, no variable info)
# and ASan+UBSan at -O1 (what ASan's authors recommend): a third to a half less compile time than
# RelWithDebInfo's -O2 -g, which made these two builds most of CI's wall time (docs/reliability.md#7).
ASAN_FLAGS  ?= -O1 -g1 -DNDEBUG
TSAN_FLAGS  ?= -O2 -g1 -DNDEBUG

test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTARN_SANITIZE=ON -DTARN_BENCH=OFF -DTARN_UNITY=$(UNITY) \
	  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$(ASAN_FLAGS)" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$(ASAN_FLAGS)"
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	scripts/kafka-ref fetch
	cd $(ASAN_BUILD) && ctest --output-on-failure -j $(TEST_JOBS) --timeout 900 -E '$(KAFKA_TESTS)'

# The whole ctest suite under ThreadSanitizer; a race in any broker the tests start makes it exit
# (halt_on_error), which fails the test.
test-tsan: deps
	cmake -S . -B $(TSAN_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTARN_TSAN=ON -DTARN_BENCH=OFF -DTARN_UNITY=$(UNITY) \
	  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=$(TSAN_FLAGS)" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$(TSAN_FLAGS)"
	cmake --build $(TSAN_BUILD) -j $(JOBS)
	scripts/kafka-ref fetch
	cd $(TSAN_BUILD) && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -j $(TEST_JOBS) --timeout 900 -E '$(KAFKA_TESTS)'

fuzz: deps
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTARN_FUZZ=ON -DTARN_BENCH=OFF -DTARN_UNITY=$(UNITY)
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzzers
	scripts/run-fuzzers $(FUZZ_BUILD) $(FUZZ_SECONDS)

# The SIGKILL crash test in its long mode: 100 kills (make test runs 5).
crash-test: deps build
	cd $(BUILD) && TARN_CRASH_KILLS=100 ./tests/crash_test

# Long tests `make test` leaves out, selected by their environment variables: the log cleaner
# with 10 M distinct keys and a dedupe buffer of an eighth of them (a few minutes); the
# transactions checker (tests/txn_checker_test.cc) for TXN_CHECK_SECONDS with 6 producers and a
# broker SIGKILL every 10 s or so (make test runs it 8 s with 3 producers and 2 kills).
# Then the cluster fault-injection checker (tests/cluster_checker_test.cc, docs/reliability.md#8)
# against a three-node Apache Kafka 4.4.0 KRaft cluster, CLUSTER_CHECK_SECONDS for each of its
# two runs (one node killed, paused or restarted at a time; one node isolated or a link cut, by
# nftables) on the schedule of CLUSTER_CHECK_SEED (make interop runs them 60 s each), and tarn's
# three brokers with one killed or restarted at a time, three times: a single-replica topic, and the
# Kafka runs' twins (replication factor 3, leaders failing over; kills, pauses, restarts, etcd
# member kills; then a broker isolated from the others or a link cut, by the same nftables rules).
TXN_CHECK_SECONDS ?= 120
CLUSTER_CHECK_SECONDS ?= 600
CLUSTER_CHECK_SEED ?= 1
soak: deps build
	cd $(BUILD) && TARN_SOAK_CLEANER_KEYS=10000000 ./tests/log_cleaner_many_keys_test
	cd $(BUILD) && TARN_TXN_CHECK_SECONDS=$(TXN_CHECK_SECONDS) TARN_TXN_CHECK_PRODUCERS=6 \
	  TARN_TXN_CHECK_KILLS=$$(( $(TXN_CHECK_SECONDS) / 10 )) ./tests/txn_checker_test
	scripts/kafka-ref fetch
	mkdir -p $(BUILD)/soak-logs
	cd $(BUILD) && TARN_CLUSTER_CHECK_SECONDS=$(CLUSTER_CHECK_SECONDS) TARN_TEST_LOG_DIR=$$PWD/soak-logs \
	  TARN_CLUSTER_CHECK_SEED=$(CLUSTER_CHECK_SEED) ./tests/cluster_checker_test \
	  --gtest_filter='cluster_checker.*against_kafka:cluster_checker.tarn_single_replica_kills*:cluster_checker.tarn_kills_and_pauses*:cluster_checker.tarn_partitions*'

# Every fuzz target for FUZZ_LONG_SECONDS each (10 minutes by default).
fuzz-long:
	$(MAKE) fuzz FUZZ_SECONDS=$(FUZZ_LONG_SECONDS)

# The micro-benchmarks, then tarn beside Apache Kafka 4.4.0 and librdkafka (scripts/bench, under
# 35 minutes; it rewrites the generated part of docs/benchmarks.md and docs/bench-results.png).
bench: deps build
	scripts/run-benchmarks $(BUILD)
	scripts/bench --build $(BUILD)

# The same comparison with small runs, under 3 minutes on an idle machine, for development.
bench-quick: deps build
	scripts/bench --quick --build $(BUILD)

# Every scenario against Apache Kafka 4.4.0 and tarn, diffed (scripts/interop; docs/compatibility.md),
# then the ctest suite's tests that start Kafka (KAFKA_TESTS above).
interop: deps build
	/usr/bin/python3 scripts/interop --tarn $(BUILD)/tarn
	scripts/kafka-ref fetch
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600 -R '$(KAFKA_TESTS)'

format: deps
	find src tests bench fuzz -name '*.h' -o -name '*.cc' | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD) $(FUZZ_BUILD)
