# ampc: `make demo` (the main job) and `make test` (the whole suite) on a fresh machine.
# Both set up what they need first (tools/setup-env.sh), build, then run.

PYTHON_CMD = $(shell tools/setup-env.sh)
DEMO_PYTHON_CMD = $(shell EXTRAS=demo tools/setup-env.sh)
CC ?= cc

CORE_SRC := $(wildcard csrc/core/*.c) $(wildcard csrc/cpu/*.c)
CTEST_SRC := $(wildcard tests/c/*.c)
CBLAS_INC := $(firstword $(wildcard /usr/include/*-linux-gnu/openblas-pthread))
CBLAS_FLAGS := $(if $(CBLAS_INC),-DAMPC_WITH_CBLAS=1 -I$(CBLAS_INC) -lopenblas,)
SANITIZE := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

.PHONY: all setup build ctest test pytest demo bench clean test-emu test-asan fuzz

all: build

setup:
	@tools/setup-env.sh >/dev/null

build:
	@mkdir -p build
	flock build/.lock $(PYTHON_CMD) setup.py -q build_ext --inplace

# The C core's own unit tests, built with AddressSanitizer and UBSan (no Python involved).
build/ctest/ampc_ctest: $(CORE_SRC) $(CTEST_SRC) $(wildcard csrc/core/*.h csrc/core/*.def csrc/cpu/*.h tests/c/*.h)
	@mkdir -p build/ctest
	flock build/.lock $(CC) -std=c11 -O1 -g -fopenmp -Icsrc $(SANITIZE) -o $@ $(CORE_SRC) $(CTEST_SRC) $(CBLAS_FLAGS) -lm

ctest: build/ctest/ampc_ctest
	OMP_NUM_THREADS=2 build/ctest/ampc_ctest

pytest: build
	PYTHONPATH=python $(PYTHON_CMD) -m pytest tests -q

test: ctest build
	PYTHONPATH=python $(PYTHON_CMD) -m pytest tests -q

# The CUDA suites on the CUDA emulator (tools/cuda_emu/README.md): no GPU, a separate build in
# build/emu (the in-place extension is not touched).
test-emu:
	@mkdir -p build/emu
	flock build/emu.lock env AMPC_CUDA=emu $(PYTHON_CMD) setup.py -q build_ext
	PYTHONPATH=build/emu/pkg $(PYTHON_CMD) -m pytest -o pythonpath=build/emu/pkg tests/test_cuda_*.py -q $(PYTEST_ARGS)

# The Python suite's fast part against the extension built with AddressSanitizer and UBSan
# (build/asan; the in-place extension is not touched). Python itself is not instrumented, so the
# sanitizer runtimes are preloaded; leak reports are off (the interpreter keeps its own memory
# at exit: tests/test_leaks.py counts ampc's objects instead).
ASAN_RUNTIMES = $(shell $(CC) -print-file-name=libasan.so) $(shell $(CC) -print-file-name=libubsan.so)
ASAN_SLOW = test_examples.py test_models.py test_demo.py test_fuzz.py
# RSS under ASan measures its quarantine of freed memory, not ampc (test_leaks.py counts objects)
ASAN_DESELECT = tests/test_tensor.py::test_no_leaks_over_many_calls
test-asan:
	@mkdir -p build/asan
	flock build/asan.lock env AMPC_CUDA=0 AMPC_SANITIZE=1 $(PYTHON_CMD) setup.py -q build_ext
	LD_PRELOAD="$(ASAN_RUNTIMES)" ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 OMP_NUM_THREADS=2 \
		PYTHONPATH=build/asan/pkg $(PYTHON_CMD) -m pytest -o pythonpath=build/asan/pkg tests -q -p no:cacheprovider \
		$(addprefix --ignore=tests/,$(ASAN_SLOW)) $(addprefix --deselect ,$(ASAN_DESELECT)) $(PYTEST_ARGS)

# The differential fuzzer against torch (tests/fuzz/): N cases over SEEDS in worker processes;
# prints cases per op and outcome, and each failure class with a reproducer.
N ?= 100000
SEEDS ?= 1,2,3,4,5,6,7,8,9,10
fuzz: build
	PYTHONPATH=python $(PYTHON_CMD) tests/fuzz/cli.py --n $(N) --seeds $(SEEDS)

demo:
	@mkdir -p build
	flock build/.lock $(DEMO_PYTHON_CMD) setup.py -q build_ext --inplace
	PYTHONPATH=python $(DEMO_PYTHON_CMD) -m ampc.demo

bench: build
	cd benchmarks && for b in bench_ops bench_gemm bench_autograd bench_scaler bench_optim bench_train; do \
		PYTHONPATH=../python $(PYTHON_CMD) $$b.py || exit 1; done

clean:
	rm -rf build python/ampc/_C*.so
