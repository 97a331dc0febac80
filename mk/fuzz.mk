# libFuzzer targets (tests/fuzz/fuzz_*.c), included from the Makefile.
#   make fuzz            build, then run every target for FUZZ_SECONDS (60) each
#   make fuzz-smoke      the same for ~5 s each (CI: tests/integration/test_fuzz_smoke.sh)
#   make fuzz-seeds      regenerate the walker's seed images
#   make soak            ten minutes (SOAK_SECONDS) of record -a against churning targets
# Each target is linked against the user/*.c files it exercises, compiled
# again here with the fuzzer and sanitizer instrumentation (the library
# build cannot be reused: its objects are not instrumented for coverage).

FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_OUT := build/fuzz
FUZZ_CFLAGS := -g -O1 -std=gnu11 $(WARN) $(USER_INC) -Ibpf -D_GNU_SOURCE \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-fno-omit-frame-pointer -DFUZZ_DATA_DIR='"$(CURDIR)/tests/data"'
FUZZ_TARGETS := linetable debug_offsets elf rules walker raw

# diag reports through the escaper and explains EACCES by our capabilities.
FUZZ_DIAG := user/base/diag.c user/base/text_escape.c user/target/privilege.c user/target/proc.c
fuzz_src_linetable := user/python/linetable.c
fuzz_src_debug_offsets := user/python/py_offsets.c user/python/gen/opcodes.c $(FUZZ_DIAG)
fuzz_src_elf := user/target/elf_file.c user/target/proc_root.c user/base/signals.c $(FUZZ_DIAG)
fuzz_libs_elf := -lelf -lz
fuzz_src_rules := user/oracle/rules.c $(FUZZ_DIAG)
fuzz_src_raw := user/profile/raw_read.c user/profile/out_raw.c user/profile/profile.c user/profile/sources.c $(FUZZ_DIAG)
fuzz_src_walker := user/python/stack_reader.c user/target/mem_reader.c user/python/code_cache.c user/python/pystr.c \
	user/python/linetable.c user/python/py_offsets.c user/python/gen/opcodes.c $(FUZZ_DIAG)

FUZZ_BINS := $(addprefix $(FUZZ_OUT)/fuzz_,$(FUZZ_TARGETS))

.PHONY: fuzz fuzz-build fuzz-smoke fuzz-seeds soak soak-record

$(FUZZ_OUT):
	@mkdir -p $@

.SECONDEXPANSION:
$(FUZZ_OUT)/fuzz_%: tests/fuzz/fuzz_%.c $$(fuzz_src_$$*) $(USER_HDRS) bpf/*.h | $(FUZZ_OUT)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $< $(fuzz_src_$*) -o $@ $(fuzz_libs_$*)

fuzz-build: $(FUZZ_BINS)

fuzz: fuzz-build
	@scripts/fuzz.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-smoke: fuzz-build
	@scripts/fuzz.sh 5 $(FUZZ_TARGETS)

# The seed generator is the walker target's own file, built without libFuzzer.
fuzz-seeds: | $(FUZZ_OUT)
	$(FUZZ_CC) -g -O1 -std=gnu11 $(WARN) $(USER_INC) -Ibpf -D_GNU_SOURCE -DFUZZ_SEED_MAIN \
		-DFUZZ_DATA_DIR='"$(CURDIR)/tests/data"' tests/fuzz/fuzz_walker.c \
		$(fuzz_src_walker) -o $(FUZZ_OUT)/walker_seeds
	@mkdir -p tests/fuzz/corpus/walker
	$(FUZZ_OUT)/walker_seeds tests/fuzz/corpus/walker

# The agent's soak (scripts/soak_agent.sh): an hour of record -a --rotate 60
# over churning processes, RSS, fds and caches per window; a short run:
# make soak SOAK_WINDOWS=8 SOAK_ROTATE=5. soak-record: the plain record -a
# one (scripts/soak.sh, SOAK_SECONDS).
soak: all
	@OUT=$(OUT) scripts/soak_agent.sh

soak-record: all
	@OUT=$(OUT) scripts/soak.sh
