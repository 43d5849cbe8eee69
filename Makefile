# herd - the two commands: `make demo` and `make test`.
# A thin wrapper over CMake; set-up (Debian packages) happens first.
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

FUZZ_SECONDS ?= 60

.PHONY: all setup configure build demo test test-asan fuzz install clean

all: build

setup:
	@sh scripts/setup.sh

configure: setup
	@cmake -S . -B $(BUILD) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@sh scripts/demo.sh $(BUILD)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The unit suite again under AddressSanitizer + UBSan.
test-asan: setup
	@cmake -S . -B build-asan -DHERD_SANITIZE=ON -DHERD_BUILD_BENCH=OFF -DHERD_WITH_NCCL=OFF >/dev/null
	@cmake --build build-asan -j $(JOBS)
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS) -L 'unit|sim'

# The libFuzzer targets (fuzz/, Clang + ASan + UBSan) on their seed corpus,
# FUZZ_SECONDS each, with -rss_limit_mb=2048 -timeout=10 (scripts/fuzz.sh).
fuzz:
	@sh scripts/setup.sh --ci
	@sh scripts/fuzz.sh build-fuzz-clang $(FUZZ_SECONDS)

install: build
	@cmake --install $(BUILD)

clean:
	@rm -rf $(BUILD) build-asan build-fuzz-clang
