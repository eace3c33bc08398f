# strata build. Sources are found by wildcard: a module's *.c files (in its
# folder and, for runtime/, its concern folders; runtime/device/cuda/ apart) form
# its library, *_main.c files are tool entry points, tests/unit/*/test_*.c are
# cmocka suites, tests/e2e/e2e_*.sh end-to-end scripts, tests/fuzz/fuzz_*.c libFuzzer
# targets (linked with formats/*.c plus what a " * fuzz-link: FILES -lLIB"
# line in the target's header comment names), tests/bench/bench_*.c
# benchmarks, tests/lib/*.c the tests' library linked into every suite (its
# *_main.c: test programs). Adding a file needs no edit here.

CC      ?= cc
PREFIX  ?= /usr/local
SHARED  ?= $(abspath $(or $(STRATA_SHARED),../shared))
NVCC    ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)

OPT      ?= -O2
SAN      ?=
CSTD     := -std=c11 -D_DEFAULT_SOURCE -D_FILE_OFFSET_BITS=64
WARN     := -Wall -Wextra -Werror
# No fused multiply-adds the source does not spell (fmaf): logits must not
# depend on the compiler (clang contracts a*b+c by default, gcc -std=c11 not).
FPFLAGS  := -ffp-contract=off
CFLAGS   ?=
ALLCFLAGS = $(CSTD) $(OPT) $(WARN) $(FPFLAGS) $(SAN) -pthread -I. $(CFLAGS)
LDLIBS   ?=
ALLLIBS   = $(LDLIBS) -lm -pthread

# Build outputs are kept per compiler and per variant so `make CC=clang`
# and `make asan` never reuse objects built with other flags.
VARIANT ?= $(notdir $(firstword $(CC)))
BUILD   ?= build/$(VARIANT)
BIN     ?= bin

# pkg-config flags for optional libraries, resolved once; missing ones are empty.
pc = $(shell pkg-config --silence-errors $(1) $(2))
RUNTIME_LIBS := $(call pc,--libs,zlib) -lopenblas $(call pc,--libs,libcurl libmicrohttpd jansson libpcre2-8 libpng libjpeg libwebp)
RUNTIME_LIBS := $(if $(wildcard /usr/include/*/cblas.h /usr/include/cblas.h /usr/include/openblas/cblas.h),$(RUNTIME_LIBS),$(filter-out -lopenblas,$(RUNTIME_LIBS)))
TOOL_LIBS    := $(call pc,--libs,zlib jansson)
CMOCKA_LIBS  := $(or $(call pc,--libs,cmocka),-lcmocka)

MODULES := formats convert pack runtime
lib_srcs = $(filter-out %_main.c,$(wildcard $(1)/*.c $(1)/*/*.c))
objs     = $(patsubst %.c,$(BUILD)/%.o,$(call lib_srcs,$(1)))

FORMATS_OBJS := $(call objs,formats)
CONVERT_OBJS := $(call objs,convert)
PACK_OBJS    := $(call objs,pack)
RUNTIME_OBJS := $(filter-out $(BUILD)/runtime/device/cuda/%,$(call objs,runtime))
# the web pages of `strata serve`, compiled in (tools/embed_web.sh)
WEB_FILES    := $(sort $(wildcard runtime/serve/web/*))
RUNTIME_OBJS += $(BUILD)/gen/web_files.o

LIBFORMATS := $(BUILD)/libformats.a
LIBCONVERT := $(BUILD)/libconvert.a
LIBPACK    := $(BUILD)/libpack.a
LIBRUNTIME := $(BUILD)/libruntime.a

TOOLS := $(BIN)/grams2imatrix $(BIN)/iq3pack $(BIN)/packindex $(BIN)/strata

TEST_SRCS  := $(wildcard tests/unit/*/test_*.c)
TEST_BINS  := $(patsubst %.c,$(BUILD)/tests/%,$(notdir $(TEST_SRCS)))
# the tests' own library, compiled apart so that each test's -MMD file lists that test's headers
TEST_LIB   := $(patsubst %.c,$(BUILD)/%.o,$(filter-out %_main.c,$(wildcard tests/lib/*.c)))
# strata serve with the tests' fake engine, for the end-to-end scripts
STRATA_FAKE := $(BUILD)/tests/strata-fake
E2E_SRCS   := $(wildcard tests/e2e/e2e_*.sh)
vpath test_%.c $(sort $(dir $(TEST_SRCS)))
BENCH_SRCS := $(wildcard tests/bench/bench_*.c)
BENCH_BINS := $(patsubst tests/bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))
FUZZ_SRCS  := $(wildcard tests/fuzz/fuzz_*.c)
CU_SRCS    := $(wildcard runtime/device/cuda/*.cu)

.PHONY: all test asan bench cuda strata-cuda fuzz install clean tests help demo
all: $(TOOLS)

# The shipped model end to end: its pack (routed experts in IQ3, weighted by the
# importance matrix of its calibration split), built once into packs/tiny-moe,
# then served on DEMO_PORT. Needs no network.
DEMO_PORT ?= 8080
demo: $(TOOLS)
	@if [ -f packs/tiny-moe/index.txt ]; then echo "packs/tiny-moe is already built"; \
	elif [ -e packs/tiny-moe ]; then echo "packs/tiny-moe exists without index.txt (an interrupted build?): move it away" >&2; exit 1; \
	else mkdir -p packs && $(BIN)/iq3pack build models/tiny-moe/tiny-moe.gguf --imatrix models/tiny-moe/imatrix.gguf -o packs/tiny-moe; fi
	$(BIN)/strata serve packs/tiny-moe --port $(DEMO_PORT)

help:
	@echo "make            build every tool into bin/"
	@echo "make test       run all tests (cmocka suites + end-to-end scripts)"
	@echo "make asan       the test suite under AddressSanitizer + UBSan"
	@echo "make bench      benchmarks, each beside a baseline measured in the same run"
	@echo "make cuda       compile the CUDA sources with nvcc (no-op without nvcc)"
	@echo "make strata-cuda  bin/strata-cuda: strata with the CUDA backend (nvcc, cuBLAS)"
	@echo "make fuzz       libFuzzer targets (clang), bounded time each (FUZZ_SECONDS)"
	@echo "make install    copy the tools to \$$PREFIX/bin (PREFIX=$(PREFIX))"
	@echo "make demo       build packs/tiny-moe from the shipped model and serve it (DEMO_PORT=8080)"

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/gen/web_files.c: $(WEB_FILES) tools/embed_web.sh
	@mkdir -p $(dir $@)
	sh tools/embed_web.sh $@ $(WEB_FILES)
$(BUILD)/gen/web_files.o: $(BUILD)/gen/web_files.c
	$(CC) $(ALLCFLAGS) -c $< -o $@

$(LIBFORMATS): $(FORMATS_OBJS)
$(LIBCONVERT): $(CONVERT_OBJS)
$(LIBPACK): $(PACK_OBJS)
$(LIBRUNTIME): $(RUNTIME_OBJS)
$(BUILD)/lib%.a:
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^ $(if $^,,$(BUILD)/empty.o)

# every library archive needs at least one member
$(BUILD)/empty.o:
	@mkdir -p $(dir $@)
	echo 'typedef int strata_empty_unit;' | $(CC) $(ALLCFLAGS) -x c -c - -o $@
$(LIBFORMATS) $(LIBCONVERT) $(LIBPACK) $(LIBRUNTIME): | $(BUILD)/empty.o

ALL_LIBS := $(LIBRUNTIME) $(LIBPACK) $(LIBCONVERT) $(LIBFORMATS)

$(BIN)/grams2imatrix: $(BUILD)/convert/grams2imatrix_main.o $(LIBCONVERT) $(LIBFORMATS)
	@mkdir -p $(BIN)
	$(CC) $(ALLCFLAGS) $^ -o $@ $(TOOL_LIBS) $(ALLLIBS)
$(BIN)/iq3pack: $(BUILD)/pack/iq3pack_main.o $(LIBPACK) $(LIBCONVERT) $(LIBFORMATS)
	@mkdir -p $(BIN)
	$(CC) $(ALLCFLAGS) $^ -o $@ $(TOOL_LIBS) $(ALLLIBS)
$(BIN)/packindex: $(BUILD)/pack/packindex_main.o $(LIBPACK) $(LIBFORMATS)
	@mkdir -p $(BIN)
	$(CC) $(ALLCFLAGS) $^ -o $@ $(TOOL_LIBS) $(ALLLIBS)
$(BIN)/strata: $(BUILD)/runtime/cli/strata_main.o $(LIBRUNTIME) $(LIBFORMATS)
	@mkdir -p $(BIN)
	$(CC) $(ALLCFLAGS) $^ -o $@ $(RUNTIME_LIBS) $(TOOL_LIBS) $(ALLLIBS)

$(BUILD)/tests/%: %.c $(ALL_LIBS) $(TEST_LIB) tests/lib/test_util.h
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -MMD -MP $< $(TEST_LIB) $(ALL_LIBS) -o $@ $(CMOCKA_LIBS) $(RUNTIME_LIBS) $(TOOL_LIBS) $(ALLLIBS)

$(BUILD)/bench/%: tests/bench/%.c $(ALL_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) $< $(ALL_LIBS) -o $@ $(RUNTIME_LIBS) $(TOOL_LIBS) $(ALLLIBS)

# A test program, not a tool: `strata serve` with the fake engine
# (tests/lib/strata_fake_main.c), so that bin/strata carries no test engine.
$(STRATA_FAKE): tests/lib/strata_fake_main.c $(ALL_LIBS) $(TEST_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -MMD -MP $< $(TEST_LIB) $(ALL_LIBS) -o $@ $(CMOCKA_LIBS) $(RUNTIME_LIBS) $(TOOL_LIBS) $(ALLLIBS)

# The benchmark programs are built with the tests (not run: `make bench` does
# that), so a change to an interface they use cannot leave them unbuildable.
tests: $(TEST_BINS) $(TOOLS) $(STRATA_FAKE) $(BENCH_BINS)

# The runner prints one closing line: "N passed, N failed". It runs as many
# suites at once as make's -j says (make test -j2), one without -j.
TEST_JOBS ?= $(or $(patsubst -j%,%,$(filter -j%,$(MAKEFLAGS))),1)
test: tests
	@STRATA_SHARED=$(SHARED) STRATA_BIN=$(abspath $(BIN)) STRATA_FAKE=$(abspath $(STRATA_FAKE)) STRATA_TESTS=$(abspath $(BUILD)/tests) bash tests/run.sh -j $(TEST_JOBS) $(TEST_BINS) $(E2E_SRCS)

ASAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all -g
asan:
	$(MAKE) test VARIANT=asan-$(notdir $(firstword $(CC))) BIN=build/asan-$(notdir $(firstword $(CC)))/bin \
	    OPT="-O1" SAN="$(ASAN_FLAGS)" \
	    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1

bench: $(BENCH_BINS) $(TOOLS)
	@for b in $(BENCH_BINS); do echo "== $$b"; STRATA_SHARED=$(SHARED) ./$$b || exit 1; done

CU_OBJS     := $(patsubst runtime/device/cuda/%.cu,$(BUILD)/cuda/%.o,$(CU_SRCS))
CU_HDRS     := runtime/device/cuda/scuda_impl.cuh runtime/device/cuda/cuda_backend.h runtime/device/expert_cache.h runtime/kernels/weight.h
CUDA_C_OBJS := $(patsubst runtime/device/cuda/%.c,$(BUILD)/cuda-c/%.o,$(wildcard runtime/device/cuda/*.c))
NVCCFLAGS   ?= -O2
CUDA_LIBS   ?= -lcublas -lcudart

ifeq ($(strip $(NVCC)),)
cuda:
	@echo "make cuda: nvcc not found; the CUDA backend is not built (the CPU backend is unaffected)."
strata-cuda:
	@echo "make strata-cuda: nvcc not found; bin/strata-cuda is not built." && exit 1
else
cuda: $(CU_OBJS)
	@echo "make cuda: compiled $(words $(CU_SRCS)) CUDA source(s) with $(NVCC)"
strata-cuda: $(BIN)/strata-cuda
endif

$(BUILD)/cuda/%.o: runtime/device/cuda/%.cu $(CU_HDRS)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -std=c++17 -I. --compiler-options -Wall,-Wextra,-Werror -c $< -o $@

# The C side of the CUDA backend (backend_cuda.c: device.h on the GPU); kept
# out of $(BUILD)/cuda so that the .cu objects can be linked on their own.
$(BUILD)/cuda-c/%.o: runtime/device/cuda/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALLCFLAGS) -DSTRATA_CUDA -MMD -MP -c $< -o $@

# bin/strata-cuda: strata with the CUDA backend: the CPU build's runtime
# objects minus the device stub, plus backend_cuda.c and the .cu objects,
# linked by nvcc with cuBLAS. bin/strata never links CUDA.
$(BIN)/strata-cuda: $(BUILD)/runtime/cli/strata_main.o $(CUDA_C_OBJS) $(filter-out $(BUILD)/runtime/device/device_cpu_stub.o,$(RUNTIME_OBJS)) $(CU_OBJS) $(LIBFORMATS)
	@mkdir -p $(BIN)
	$(NVCC) -o $@ $^ $(CUDA_LIBS) $(RUNTIME_LIBS) $(TOOL_LIBS) $(LDLIBS) -lm -lpthread

FUZZ_SECONDS ?= 30
FUZZ_CC ?= clang
fuzz:
	@command -v $(FUZZ_CC) >/dev/null || { echo "make fuzz needs clang"; exit 1; }
	@set -e; for f in $(FUZZ_SRCS); do \
	    n=$$(basename $$f .c); mkdir -p build/fuzz/corpus-$$n; \
	    extra=$$(sed -n '/^ \* fuzz-link: /{s///;s|\*/||;p;}' $$f); \
	    $(FUZZ_CC) $(CSTD) -O1 -g -I. -fsanitize=fuzzer,address,undefined $$f \
	        $(filter-out %_main.c,$(wildcard formats/*.c)) $$extra -o build/fuzz/$$n $(TOOL_LIBS) -lm -pthread; \
	    echo "== $$n for $(FUZZ_SECONDS)s"; \
	    if [ -x tests/fuzz/seed.sh ]; then STRATA_SHARED=$(SHARED) sh tests/fuzz/seed.sh $$n build/fuzz/corpus-$$n; fi; \
	    STRATA_SHARED=$(SHARED) build/fuzz/$$n -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix=build/fuzz/$$n- build/fuzz/corpus-$$n; \
	done

install: $(TOOLS)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(TOOLS) $(DESTDIR)$(PREFIX)/bin/

clean:
	rm -rf build bin

-include $(shell find build -name '*.d' 2>/dev/null)
