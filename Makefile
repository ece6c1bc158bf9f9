# attention-server: `make` builds everything into build/, `make test` runs every
# test, `make run` builds the server alone and serves on 127.0.0.1:8080
# (ATTN_PORT / ATTN_HOST, or `make run PORT=N`). Each of them first installs
# the Debian packages that are missing (`make deps`).

BUILD   ?= build
CC      ?= cc
OPT     ?= -O3
SAN     ?=
CFLAGS  ?= $(OPT) -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -pthread -I. $(SAN)
# Each object and test program also writes its header dependencies (.d).
CFLAGS  += -MMD -MP
LDFLAGS += $(SAN) -pthread

# OpenBLAS picks its kernels by the CPU unless OPENBLAS_CORETYPE (or
# OPENBLAS_L2_SIZE) is set in the environment: nothing here sets them, for
# `make run`, the tests and the benchmarks alike. The server checks the
# kernels it got at start and falls back to another set if they are wrong
# (server/kernels.h).

DEB_PACKAGES = build-essential pkg-config libopenblas-dev libjansson-dev \
               libmicrohttpd-dev check libcurl4-openssl-dev curl libdeflate-dev zlib1g-dev libspng-dev \
               python3 libonig-dev libutf8proc-dev

PKG = $(shell pkg-config --cflags --libs $(1) 2>/dev/null)
BLAS_CFLAGS := $(shell pkg-config --cflags openblas 2>/dev/null)
BLAS_LIBS   := $(shell pkg-config --libs openblas 2>/dev/null || echo -lopenblas)

CORE_SRC   := $(wildcard core/*.c core/*/*.c)
API_SRC    := $(wildcard api/*.c api/*/*.c)
API_SRC    := $(filter-out api/openapi/api-tables.c,$(API_SRC))
SERVER_SRC := $(wildcard server/*.c)
TEST_SRC   := $(wildcard tests/test_*.c)
TEST_LIB   := $(wildcard tests/support/*.c)

CORE_OBJ   := $(CORE_SRC:%.c=$(BUILD)/%.o)
API_OBJ    := $(API_SRC:%.c=$(BUILD)/%.o)
SERVER_OBJ := $(SERVER_SRC:%.c=$(BUILD)/%.o)
TESTLIB_OBJ:= $(TEST_LIB:%.c=$(BUILD)/%.o)
TEST_BIN   := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)

LIBCORE    := $(BUILD)/libattention.a
LIBAPI     := $(BUILD)/libattnapi.a
OPENAPI    := $(BUILD)/gen/openapi.json
OPENAPI_OBJ:= $(BUILD)/api/openapi/doc.o
API_TABLES := $(BUILD)/tools/api-tables
# tests/support/ as an archive: a test program gets check_main.c's main()
# unless it defines its own.
LIBTEST    := $(BUILD)/libtestsupport.a
SERVER     := $(BUILD)/attention-server

LIBS_CORE   = $(BLAS_LIBS) -lm
LIBS_API    = -ljansson -ldeflate -lspng -lonig -lutf8proc
LIBS_SERVER = -lmicrohttpd
LIBS_TEST   = $(shell pkg-config --libs check 2>/dev/null || echo -lcheck) -lcurl -lmicrohttpd -lz

.PHONY: all deps test asan run clean golden gen bench container-check fuzz fuzz-merge fmt-all soak
.DEFAULT_GOAL := all

all: deps
	@$(MAKE) --no-print-directory build-all

build-all: $(LIBCORE) $(LIBAPI) $(SERVER) $(TEST_BIN)

-include $(CORE_OBJ:.o=.d) $(API_OBJ:.o=.d) $(SERVER_OBJ:.o=.d) $(TESTLIB_OBJ:.o=.d) \
         $(TEST_BIN:=.d) $(OPENAPI_OBJ:.o=.d) $(API_TABLES).d

# Installs the Debian packages of $(1) that are missing, nothing when all are
# there; waits up to 120 s for another apt-get or dpkg to release the package
# lock and says what failed (tools/apt-install.sh).
define apt_install
	@tools/apt-install.sh $(1)
endef

deps:
	$(call apt_install,$(DEB_PACKAGES))

$(BUILD)/core/%.o: core/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BLAS_CFLAGS) -c $< -o $@

$(BUILD)/api/%.o: api/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/server/%.o: server/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BLAS_CFLAGS) -c $< -o $@

$(BUILD)/tests/support/%.o: tests/support/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BLAS_CFLAGS) -c $< -o $@

# Made afresh each time: `ar rcs` alone would keep the members of deleted
# or renamed sources (a stale object would then shadow the file that
# replaced it).
$(LIBCORE): $(CORE_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LIBAPI): $(API_OBJ) $(OPENAPI_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# The OpenAPI document: api-tables prints the C tables (endpoints, modules,
# outputs, errors) as JSON, api/openapi/gen.py adds the prose and
# api/examples/ and writes $(OPENAPI), which api/openapi/doc.S embeds.
# Nothing of it is committed; GET /openapi.json serves it.
$(API_TABLES): api/openapi/api-tables.c $(API_OBJ) $(LIBCORE)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(API_OBJ) $(LIBCORE) $(LDFLAGS) $(LIBS_API) $(LIBS_CORE) -o $@

$(OPENAPI): $(API_TABLES) $(wildcard api/openapi/*.py) $(wildcard api/examples/*.json)
	@mkdir -p $(dir $@)
	$(API_TABLES) > $(@D)/tables.json
	/usr/bin/python3 api/openapi/gen.py $(@D)/tables.json $@

$(OPENAPI_OBJ): api/openapi/doc.S $(OPENAPI)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DAPI_OPENAPI_JSON='"$(OPENAPI)"' -c $< -o $@

$(LIBTEST): $(TESTLIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# The viewer page at GET /: server/static/index.html with its scripts
# (server/static/*.js) and shared fragments (*.html) inlined by
# server/static/inline.py, embedded by server/viewer.S.
VIEWER_SRC  := server/static/index.html $(wildcard server/static/*.js server/static/*.html)
VIEWER_HTML := $(BUILD)/gen/viewer.html
VIEWER_OBJ  := $(BUILD)/server/viewer.o
$(VIEWER_HTML): server/static/inline.py $(VIEWER_SRC)
	@mkdir -p $(dir $@)
	/usr/bin/python3 server/static/inline.py server/static/index.html $@
$(VIEWER_OBJ): server/viewer.S $(VIEWER_HTML)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DSRV_VIEWER_HTML='"$(VIEWER_HTML)"' -c $< -o $@

# The demo model the server offers with no --model (models/shakespeare/),
# embedded by server/demo_model.S.
DEMO_DIR   := models/shakespeare
DEMO_FILES := $(addprefix $(DEMO_DIR)/,config.json model.safetensors vocab.json merges.txt)
DEMO_OBJ   := $(BUILD)/server/demo_model.o
$(DEMO_OBJ): server/demo_model.S $(DEMO_FILES)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DSRV_DEMO_CONFIG='"$(DEMO_DIR)/config.json"' \
	  -DSRV_DEMO_WEIGHTS='"$(DEMO_DIR)/model.safetensors"' -DSRV_DEMO_VOCAB='"$(DEMO_DIR)/vocab.json"' \
	  -DSRV_DEMO_MERGES='"$(DEMO_DIR)/merges.txt"' -c $< -o $@

$(SERVER): $(SERVER_OBJ) $(VIEWER_OBJ) $(DEMO_OBJ) $(LIBAPI) $(LIBCORE)
	$(CC) $(LDFLAGS) $(SERVER_OBJ) $(VIEWER_OBJ) $(DEMO_OBJ) $(LIBAPI) $(LIBCORE) $(LIBS_SERVER) $(LIBS_API) $(LIBS_CORE) -o $@

$(BUILD)/tests/%: tests/%.c $(LIBTEST) $(LIBAPI) $(LIBCORE)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BLAS_CFLAGS) $< $(LIBTEST) $(LIBAPI) $(LIBCORE) \
	  $(LDFLAGS) $(LIBS_TEST) $(LIBS_API) $(LIBS_CORE) -o $@

# The server's small modules, compiled into their unit test from source.
$(BUILD)/tests/test_server_units: server/budget.c server/cors.c server/encoding.c server/etag.c server/pool.c server/*.h

# The allocation-failure tests route the malloc calls of core/ and api/
# through the wrappers of tests/support/fail_alloc.c (test_api_chaos, test_api_bpe_chaos,
# test_api_chat_template, test_api_openai_chat).
$(BUILD)/tests/test_api_chaos: private LDFLAGS += -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc
$(BUILD)/tests/test_api_bpe_chaos: private LDFLAGS += -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc
$(BUILD)/tests/test_api_jansson_oom: private LDFLAGS += -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc
$(BUILD)/tests/test_api_chat_template: private LDFLAGS += -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc
$(BUILD)/tests/test_api_openai_chat: private LDFLAGS += -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc

# Every test program, each must run at least one check and fail none.
test: deps
	@$(MAKE) --no-print-directory build-all
	@BUILD=$(BUILD) tests/run-tests.sh $(TEST_BIN)

# The same tests under AddressSanitizer and UndefinedBehaviorSanitizer. The
# tests get the build's variables in their environment, so that a make they
# run (test_make_run's `make run`) rebuilds build-asan/ with the same flags.
ASAN_VARS := BUILD=build-asan OPT=-O1 \
	  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
asan: deps
	@$(MAKE) --no-print-directory $(ASAN_VARS) build-all
	@$(ASAN_VARS) ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  tests/run-tests.sh $(TEST_SRC:tests/%.c=build-asan/tests/%)

# `make run` builds the server alone (not the tests) and serves: on
# ATTN_HOST:ATTN_PORT from the environment when set (127.0.0.1:8080 if not),
# or on what the command line says: `make run PORT=9000 HOST=0.0.0.0`. Only
# command-line PORT and HOST become flags (a shell may export HOST itself);
# every other ATTN_* variable reaches the server as it is.
run: deps
	@$(MAKE) --no-print-directory $(SERVER)
	$(SERVER)$(if $(filter command line,$(origin PORT)), --port $(PORT))$(if $(filter command line,$(origin HOST)), --host $(HOST))

# The soak and attack suite (tests/test_server_soak.c) for SOAK_SECONDS (300
# here; `make test` runs it for 5): good clients, malformed HTTP and JSON,
# slow readers, aborted uploads and connection floods against one server on
# loopback; it reports requests served, failures, peak RSS against
# --max-memory, and whether the server survived and stopped on SIGTERM.
SOAK_SECONDS ?= 300
soak: deps
	@$(MAKE) --no-print-directory $(SERVER) $(BUILD)/tests/test_server_soak
	@SOAK_SECONDS=$(SOAK_SECONDS) BUILD=$(BUILD) tests/run-tests.sh $(BUILD)/tests/test_server_soak

# Core against PyTorch (python3-torch) on the same shapes, in the same run,
# each side at its best and beside the machine's sgemm rate (bench/run.sh),
# then JSON numbers out (the float printer) and in (the tensor scanner).
$(BUILD)/bench/bench_core: bench/bench_core.c bench/measure.c $(LIBAPI) $(LIBCORE)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BLAS_CFLAGS) $< bench/measure.c $(LIBAPI) $(LIBCORE) $(LDFLAGS) $(LIBS_API) $(LIBS_CORE) -o $@

$(BUILD)/bench/bench_serialise: bench/bench_serialise.c bench/fmt_old.c $(LIBAPI) $(LIBCORE)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< bench/fmt_old.c $(LIBAPI) $(LIBCORE) $(LDFLAGS) $(LIBS_API) $(LIBS_CORE) -o $@

# The float printer on all 2^32 bit patterns (minutes on two cores; not in
# `make test`): shortest round trip, and FMT_ALL_MODE=precision for 1..9 digits.
FMT_ALL_MODE ?= shortest
$(BUILD)/bench/fmt_all: bench/fmt_all.c bench/fmt_old.c $(LIBAPI) $(LIBCORE)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< bench/fmt_old.c $(LIBAPI) $(LIBCORE) $(LDFLAGS) $(LIBS_API) $(LIBS_CORE) -o $@

fmt-all: deps
	@$(MAKE) --no-print-directory $(BUILD)/bench/fmt_all
	$(BUILD)/bench/fmt_all 2 $(FMT_ALL_MODE)

$(BUILD)/bench/bench_gpt2: bench/bench_gpt2.c $(LIBCORE)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BLAS_CFLAGS) $< $(LIBCORE) $(LDFLAGS) $(LIBS_CORE) -o $@

# What the benchmarks share: the clock, medians, the sgemm rate, the load
# average (bench/measure.c), the memory floor of a decode step (bench/floor.c).
BENCH_HELP := bench/measure.c bench/floor.c

# Per-token decode with the key/value cache against the memory-bandwidth
# floor of the same run (GPT-2 124M shape, both families, context 128 and 512).
$(BUILD)/bench/bench_decode: bench/bench_decode.c $(BENCH_HELP) $(LIBCORE)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BLAS_CFLAGS) $< $(BENCH_HELP) $(LIBCORE) $(LDFLAGS) $(LIBS_CORE) -o $@

# The decoder families' forward (T = 128, 512) and decode step (context 128)
# on the SmolLM2-135M and Qwen2.5-0.5B shapes, against PyTorch running the
# project's reference on the same weights and the memory floor
# (bench/run_families.sh).
$(BUILD)/bench/bench_families: bench/bench_families.c $(BENCH_HELP) $(LIBAPI) $(LIBCORE)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BLAS_CFLAGS) $< $(BENCH_HELP) $(LIBAPI) $(LIBCORE) $(LDFLAGS) $(LIBS_API) $(LIBS_CORE) -o $@

# The decode steps of S generations one after the other against one batched
# step over their caches (attn_lm_step_caches), in core.
$(BUILD)/bench/bench_batch_step: bench/bench_batch_step.c $(BENCH_HELP) $(LIBCORE)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BLAS_CFLAGS) $< $(BENCH_HELP) $(LIBCORE) $(LDFLAGS) $(LIBS_CORE) -o $@

# Concurrent generations through a running server (bench/run_streams.sh):
# tokens/s, time to first token and between tokens.
$(BUILD)/bench/bench_streams: bench/bench_streams.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(LDFLAGS) -lcurl -pthread -o $@

# Half-size weights against float32 (bench/bench_half.c): the decode step of
# the GPT-2 124M and SmolLM2-135M shapes with F32, BF16 and F16 weights
# beside each one's memory floor, the T = 128 prefill, and the KL divergence
# of a BF16 copy's next-token distribution (the demo model's too).
$(BUILD)/bench/bench_half: bench/bench_half.c $(BENCH_HELP) $(LIBAPI) $(LIBCORE)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BLAS_CFLAGS) $< $(BENCH_HELP) $(LIBAPI) $(LIBCORE) $(LDFLAGS) $(LIBS_API) $(LIBS_CORE) -o $@

# The whole-model forward (both families, T = 128 and 512) as a fraction of
# the sgemm rate of the same run.
$(BUILD)/bench/bench_forward: bench/bench_forward.c $(BENCH_HELP) $(LIBCORE)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BLAS_CFLAGS) $< $(BENCH_HELP) $(LIBCORE) $(LDFLAGS) $(LIBS_CORE) -o $@

# A full activation-patching sweep (every head of the 124M shape on a
# 16-token pair) through api_handle, against PyTorch with hooks in the same
# run (bench/run_patch.sh).
$(BUILD)/bench/bench_patch: bench/bench_patch.c $(LIBAPI) $(LIBCORE)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BLAS_CFLAGS) $< $(LIBAPI) $(LIBCORE) $(LDFLAGS) $(LIBS_API) $(LIBS_CORE) -o $@

# Sentence embeddings of 32 sentences of 16 to 64 tokens through
# all-MiniLM-L6-v2's shape against PyTorch in the same run (bench/run_embed.sh).
$(BUILD)/bench/bench_embed: bench/bench_embed.c bench/measure.c $(LIBAPI) $(LIBCORE)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BLAS_CFLAGS) $< bench/measure.c $(LIBAPI) $(LIBCORE) $(LDFLAGS) $(LIBS_API) $(LIBS_CORE) -o $@

# The analyses ("analysis"): the six of the maps beside the forward that
# returns the maps (T = 128 and 1,024), and the importance sweep through
# api_handle against PyTorch with hooks in the same run (bench/run_analysis.sh).
$(BUILD)/bench/bench_analysis: bench/bench_analysis.c $(LIBAPI) $(LIBCORE)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BLAS_CFLAGS) $< $(LIBAPI) $(LIBCORE) $(LDFLAGS) $(LIBS_API) $(LIBS_CORE) -o $@

# Every comparison runs with OpenBLAS's own kernels on both sides, as on a
# machine that sets nothing: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset
# for these commands alone (docs/performance.md).
BENCH_ENV := env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE

bench: deps
	@$(MAKE) --no-print-directory build-all $(BUILD)/bench/bench_core $(BUILD)/bench/bench_serialise \
	  $(BUILD)/bench/bench_gpt2 $(BUILD)/bench/bench_forward $(BUILD)/bench/bench_decode \
	  $(BUILD)/bench/bench_half $(BUILD)/bench/bench_patch $(BUILD)/bench/bench_families $(BUILD)/bench/bench_analysis \
	  $(BUILD)/bench/bench_embed $(BUILD)/bench/bench_streams $(BUILD)/bench/bench_batch_step
	$(call apt_install,python3-torch python3-fastapi python3-uvicorn wrk nginx-light)
	$(BENCH_ENV) bench/run.sh $(BUILD)/bench/bench_core
	$(BENCH_ENV) $(BUILD)/bench/bench_core cputime
	$(BENCH_ENV) /usr/bin/python3 bench/bench_torch.py cputime
	$(BENCH_ENV) bench/run_gpt2.sh $(BUILD)/bench/bench_gpt2 $(BUILD)/bench/bench_core
	$(BENCH_ENV) $(BUILD)/bench/bench_forward 2
	$(BENCH_ENV) bench/run_decode.sh $(BUILD)/bench/bench_decode
	$(BENCH_ENV) $(BUILD)/bench/bench_half 2
	$(BENCH_ENV) bench/run_families.sh $(BUILD)/bench/bench_families
	$(BENCH_ENV) bench/run_patch.sh $(BUILD)/bench/bench_patch $(BUILD)/bench/bench_core
	$(BENCH_ENV) bench/run_analysis.sh $(BUILD)/bench/bench_analysis $(BUILD)/bench/bench_core
	$(BENCH_ENV) bench/run_embed.sh $(BUILD)/bench/bench_embed
	$(BENCH_ENV) $(BUILD)/bench/bench_serialise
	$(BENCH_ENV) /usr/bin/python3 bench/e2e.py $(SERVER)
	$(BENCH_ENV) bench/http_small.sh $(SERVER)
	$(BENCH_ENV) $(BUILD)/bench/bench_batch_step 2
	$(BENCH_ENV) bench/run_streams.sh $(SERVER) $(BUILD)/bench/bench_streams

# Rewrites the committed generated files from their generators; the test
# test_layout (tools/check-generated.sh) fails when one differs.
gen:
	$(call apt_install,python3 libonig-dev)
	/usr/bin/python3 api/numbers/gen-pow10.py > api/numbers/pow10_tables.h
	@mkdir -p $(BUILD)/tools
	$(CC) -std=c11 -O2 tools/gen-unicode.c -lonig -o $(BUILD)/tools/gen-unicode
	$(BUILD)/tools/gen-unicode > api/bpe/unicode.c

# Regenerates the golden vectors with PyTorch (Debian's python3-torch).
golden:
	$(call apt_install,python3-torch)
	/usr/bin/python3 tests/golden/generate.py tests/golden
	/usr/bin/python3 tests/golden/generate_gpt2.py tests/golden/gpt2
	/usr/bin/python3 tests/golden/generate_gptmodel.py tests/golden/gptmodel
	/usr/bin/python3 tests/golden/generate_api_model.py tests/golden/api_model
	/usr/bin/python3 tests/golden/generate_hooks.py tests/golden/hooks
	/usr/bin/python3 tests/golden/generate_inside.py tests/golden/inside
	/usr/bin/python3 tests/golden/generate_analysis.py tests/golden/analysis
	/usr/bin/python3 tests/golden/generate_checkpoint.py tests/golden/ckpt
	/usr/bin/python3 tests/golden/generate_sample.py tests/golden/sample.txt
	/usr/bin/python3 tests/golden/generate_penalties.py tests/golden/penalties.txt
	/usr/bin/python3 tests/golden/generate_generation.py tests/golden/generation
	/usr/bin/python3 tests/golden/generate_families.py tests/golden/families

CONTAINER_CHECK ?= ../shared/tools/container-check

# Builds docker/Dockerfile with podman and runs the image: /healthz, the image's
# HEALTHCHECK, the seed MultiHeadAttention request (docker/smoke.sh), exit 0 on
# SIGTERM. Needs root (installs podman and debootstrap if missing).
container-check:
	$(CONTAINER_CHECK) -f docker/Dockerfile -- docker/smoke.sh

# libFuzzer on api_handle (tests/fuzz/fuzz_api.c) with ASan and UBSan, for
# FUZZ_SECONDS, from the committed corpus; new inputs go to build-fuzz/corpus.
# `make fuzz-merge` then adds those that reach new code to tests/fuzz/corpus,
# which test_api_fuzz_corpus replays in every `make test`.
FUZZ_SECONDS ?= 300
FUZZ_BUILD   := build-fuzz
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

$(FUZZ_BUILD)/fuzz_api: tests/fuzz/fuzz_api.c tests/support/reply_check.c tests/support/reply_check.h \
                        $(CORE_SRC) $(API_SRC) core/*.h api/*.h api/*/*.h
	@mkdir -p $(dir $@)
	clang -std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror -I. $(BLAS_CFLAGS) \
	  -fsanitize=fuzzer $(FUZZ_SAN) tests/fuzz/fuzz_api.c tests/support/reply_check.c \
	  $(CORE_SRC) $(API_SRC) $(LIBS_API) $(LIBS_CORE) -o $@

fuzz:
	$(call apt_install,$(DEB_PACKAGES) clang libclang-rt-14-dev)
	@$(MAKE) --no-print-directory $(FUZZ_BUILD)/fuzz_api
	@mkdir -p $(FUZZ_BUILD)/corpus
	cd $(FUZZ_BUILD) && OPENBLAS_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=1 ./fuzz_api -max_total_time=$(FUZZ_SECONDS) \
	  -max_len=8192 -timeout=10 -rss_limit_mb=2048 -dict=../tests/fuzz/api.dict \
	  -print_final_stats=1 corpus ../tests/fuzz/corpus

fuzz-merge: $(FUZZ_BUILD)/fuzz_api
	$(FUZZ_BUILD)/fuzz_api -merge=1 tests/fuzz/corpus $(FUZZ_BUILD)/corpus

clean:
	rm -rf build build-asan $(FUZZ_BUILD)
