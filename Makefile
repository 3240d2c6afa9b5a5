# sluice: two commands do everything on a fresh Debian 12 machine.
#   make run    install what is missing, build, run sluice (probe, segment, transcribe) on the bundled sample call
#   make test   install what is missing, build, run every test (SANITIZE=1: under ASan + UBSan, as CI)
# Also: make build | debug | asan | tsan | fuzz | fuzz-ci | ci | bench | clean

JOBS      ?= $(shell nproc)
BUILD     ?= build/release
DEBUG_DIR ?= build/debug
ASAN_DIR  ?= build/asan
TSAN_DIR  ?= build/tsan
FUZZ_DIR  ?= build/fuzz
FUZZ_SECONDS    ?= 300
FUZZ_CI_SECONDS ?= 25
CMAKE_GEN := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")
SAMPLE    ?= tests/data/sample_call_8k_mulaw_stereo.wav

.PHONY: all setup test-data build debug run test asan tsan tsan-build tsan-test fuzz-build fuzz fuzz-ci ci bench clean

all: build

setup:
	@tools/setup.sh

# The games' data files the real-speech tests read (tools/setup.sh --test-data): not for make run.
test-data:
	@tools/setup.sh --test-data

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release

build: setup $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

debug: setup
	cmake -S . -B $(DEBUG_DIR) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug
	cmake --build $(DEBUG_DIR) -j $(JOBS)

run: build
	@echo "== sluice probe $(SAMPLE)"
	@$(BUILD)/tools/sluice probe $(SAMPLE)
	@echo "== sluice segment $(SAMPLE)"
	@$(BUILD)/tools/sluice segment $(SAMPLE)
	@echo "== sluice transcribe $(SAMPLE)  (default model: see models/default/MODEL_CARD.md)"
	@$(BUILD)/tools/sluice transcribe $(SAMPLE)
	@echo "== sluice serve  (Ctrl-C to stop; try: $(BUILD)/tools/sluice stream $(SAMPLE))"
	@$(BUILD)/tools/sluice serve $(SERVE_ARGS)

# `make test SANITIZE=1` (what CI runs, .ci/run): the same suite, built and run under
# AddressSanitizer + UBSan in $(ASAN_DIR); that is `make asan`.
ifeq ($(SANITIZE),1)
test: asan
else
test: build test-data
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
endif

# AddressSanitizer + UndefinedBehaviorSanitizer over the whole suite (CUDA off: the sanitizers
# do not see device code, and the CUDA tests need a GPU to say anything). -g1 (line tables only)
# keeps reports symbolised at a third less compile time than -g.
asan: setup test-data
	cmake -S . -B $(ASAN_DIR) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DSLUICE_SANITIZE=ON -DSLUICE_CUDA=OFF \
	  -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DCMAKE_C_FLAGS_DEBUG=-g1
	cmake --build $(ASAN_DIR) -j $(JOBS)
	cd $(ASAN_DIR) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:suppressions=$(CURDIR)/tests/asan.supp \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
	  UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS)

# ThreadSanitizer over the suites with threads of their own: actors (CAF's scheduler) and net
# (Beast's io threads), and the actors' CAF-DSL protocol test. Only those three binaries are built, against a CAF built with TSan
# (tools/build_tsan_caf.sh: Debian's own CAF 0.17.6 source, fetched through apt and checked by its
# SHA-256, built once into $(TSAN_CAF)): Debian's libcaf_core.so is not instrumented, and TSan
# then reports every message between two actors as a race. The CAF paths are passed explicitly,
# so a build folder configured against Debian's CAF is pointed at the instrumented one.
# tests/tsan.supp is for third-party frames only (it has no entries).
TSAN_CAF ?= build/tsan-caf
TSAN_CAF_ABS = $(abspath $(TSAN_CAF))
# `make tsan` is tsan-build then tsan-test (CI runs them as two steps).
tsan: tsan-test

tsan-build: setup
	tools/build_tsan_caf.sh $(TSAN_CAF_ABS)
	cmake -S . -B $(TSAN_DIR) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Debug -DSLUICE_TSAN=ON -DSLUICE_CUDA=OFF \
	  -DCAF_INCLUDE_DIR=$(TSAN_CAF_ABS)/include -DCAF_CORE_LIBRARY=$(TSAN_CAF_ABS)/lib/libcaf_core.so \
	  -DCAF_IO_LIBRARY=$(TSAN_CAF_ABS)/lib/libcaf_io.so \
	  -DCMAKE_CXX_FLAGS_DEBUG="-g1 -O1" -DCMAKE_C_FLAGS_DEBUG="-g1 -O1"
	cmake --build $(TSAN_DIR) -j $(JOBS) --target sluice_actors_tests sluice_actors_protocol_tests sluice_net_tests

tsan-test: tsan-build
	cd $(TSAN_DIR) && TSAN_OPTIONS="suppressions=$(CURDIR)/tests/tsan.supp halt_on_error=1 second_deadlock_stack=1" \
	  ctest --output-on-failure --timeout 900 -j $(JOBS) -R '^(actors|net)/' -E '^net/(sip|rtsp)/'

# libFuzzer targets (tests/fuzz), built with clang, ASan and UBSan in their own folder:
# `make fuzz` runs each for FUZZ_SECONDS, `make fuzz-ci` for FUZZ_CI_SECONDS (what CI does).
fuzz-build: setup
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_DIR) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DSLUICE_FUZZ=ON -DSLUICE_TESTS=OFF -DSLUICE_CUDA=OFF
	cmake --build $(FUZZ_DIR) -j $(JOBS) --target sluice_fuzz

fuzz: fuzz-build
	tests/fuzz/run.sh $(FUZZ_DIR) $(FUZZ_SECONDS)

fuzz-ci: fuzz-build
	tests/fuzz/run.sh $(FUZZ_DIR) $(FUZZ_CI_SECONDS)

# What CI runs (.ci/run): the whole suite under ASan/UBSan, then a short run of every fuzzer, both gating.
ci:
	.ci/run

# Benchmarks (never part of the tests): the model forward in C++ vs PyTorch eager, and the whole
# `sluice transcribe` pipeline vs a PyTorch reference, same model, same audio, same threads.
MODEL ?= models/default
bench: build
	$(BUILD)/tools/bench/moe_bench --model $(MODEL) --all
	$(BUILD)/tools/bench/frontend_bench --model $(MODEL) --audio $(SAMPLE) --repeats 15
	/usr/bin/python3 tools/bench/moe_bench_torch.py --model $(MODEL)
	/usr/bin/python3 tools/bench/transcribe_bench.py --sluice $(BUILD)/tools/sluice --model $(MODEL) --runs 3 $(SAMPLE)
	tools/bench/serve_bench.sh $(BUILD) $(SAMPLE) 16 64 128
	$(BUILD)/tools/bench/engine_bench --model $(MODEL) --audio $(SAMPLE) --repeats 3 --json $(BUILD)/engine_bench.json

clean:
	rm -rf build
