# bpfpy: one entry point. See README.md.
#   make            build build/bpfpy (BPF objects, skeletons, the binary)
#   make test       install what is missing (build + test stack), provision the
#                   target interpreters, build, run every test
#   make run        install what is missing (build + python3), build, run the
#                   oracle's default job
#   make bench      the benchmark (prints ratios; writes build/bench.json)
#   make install    PREFIX=/usr/local: the binary, man pages, bash completion,
#                   docs, snippets
#   make man        man pages into build/man/ (from --help and docs/)
# Each target asks scripts/deps.sh for its own group of Debian packages
# (build, run, unit, test); with the packages present that is one dpkg-query,
# so `make` needs neither root nor the test stack.
#   make SAN=1      build with ASan+UBSan (make test SAN=1 runs the suite so)

PREFIX ?= /usr/local
ARCH := x86
OUT := build
CLANG ?= clang
# Debian installs it in /usr/sbin, which a plain user's PATH may lack.
BPFTOOL ?= $(or $(shell command -v bpftool 2>/dev/null),/usr/sbin/bpftool)
CC ?= cc

WARN := -Wall -Wextra -Werror
CFLAGS ?= -O2 -g
# user/ holds one folder per subsystem (README: Layout); headers are included
# by their base name, so every folder is on the include path.
USER_DIRS := $(patsubst %/,%,$(sort $(dir $(wildcard user/*/*.h user/*/*/*.h))))
USER_INC := $(addprefix -I,$(USER_DIRS))
USER_HDRS := $(wildcard user/*/*.h user/*/*/*.h)
CFLAGS += -std=gnu11 $(WARN) $(USER_INC) -Ibpf -I$(OUT)/bpf -D_GNU_SOURCE
LDLIBS := -lbpf -ldw -lelf -lz -ljson-c -lprotobuf-c -lm -lpthread
ifeq ($(SAN),1)
CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
OUT := build-san
endif

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(OUT)/bpf/%.bpf.o,$(BPF_SRCS))
SKELS := $(patsubst bpf/%.bpf.c,$(OUT)/bpf/%.skel.h,$(BPF_SRCS))
# user/profile/gen, user/python/gen: generated code (protoc-c; the opcode
# tables, scripts/gen_opcode_data.sh), committed.
USER_SRCS := $(wildcard user/*/*.c user/*/*/*.c)
USER_OBJS := $(patsubst user/%.c,$(OUT)/obj/%.o,$(USER_SRCS))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(OUT)/unit/%,$(UNIT_SRCS))

.SECONDARY:
# A recipe that fails (bpftool gen skeleton > $@, say) must not leave a
# truncated target that the next make trusts.
.DELETE_ON_ERROR:
.PHONY: all deps deps-build deps-run deps-unit deps-test test unit integration run bench install man clean \
	vmlinux format targets fuzz protobuf leaderboard

all: $(OUT)/bpfpy

# Every build first makes sure the toolchain is there (a no-op when it is);
# the unit tests also need cmocka, nothing more.
$(BPF_OBJS) $(USER_OBJS) $(OUT)/obj/main.o: | deps-build
$(UNIT_BINS): | deps-unit

# Each installs only what is missing of its group (scripts/deps.sh); a no-op
# (one dpkg query) when all is there. `make deps` is everything (test).
deps-build deps-run deps-unit deps-test:
	@scripts/deps.sh $(@:deps-%=%)
deps: deps-test

$(OUT)/bpf $(OUT)/obj $(OUT)/unit:
	@mkdir -p $@

# BPF: CO-RE objects against the committed vmlinux.h, then skeletons.
$(OUT)/bpf/%.bpf.o: bpf/%.bpf.c bpf/*.h vmlinux/$(ARCH)/vmlinux.h | $(OUT)/bpf
	$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Ivmlinux/$(ARCH) -Ibpf \
		-idirafter /usr/include/$(shell $(CC) -dumpmachine) \
		$(WARN) -Wno-unused-function -c $< -o $@

$(OUT)/bpf/%.skel.h: $(OUT)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@

$(OUT)/obj/%.o: user/%.c $(USER_HDRS) bpf/bpfpy.h bpf/frame_walker.h $(SKELS) | $(OUT)/obj
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(OUT)/libbpfpy.a: $(USER_OBJS)
	rm -f $@ && $(AR) rcs $@ $^

$(OUT)/bpfpy: $(OUT)/obj/main.o $(OUT)/libbpfpy.a
	$(CC) $(LDFLAGS) $^ -o $@ $(LDLIBS)

$(OUT)/unit/%: tests/unit/%.c $(OUT)/libbpfpy.a bpf/*.h tests/unit/*.h | $(OUT)/unit
	$(CC) $(CFLAGS) -Itests/unit $(LDFLAGS) $< $(OUT)/libbpfpy.a -o $@ $(LDLIBS) -lcmocka

unit: $(UNIT_BINS)
	@tests/run_unit.sh $(UNIT_BINS)

integration: deps-test $(OUT)/bpfpy
	@OUT=$(OUT) tests/run_all.sh

test: deps-test
	@$(MAKE) --no-print-directory all $(UNIT_BINS)
	@OUT=$(OUT) tests/run_all.sh $(UNIT_BINS)

targets: deps-test
	@scripts/targets.sh

run: deps-run
	@$(MAKE) --no-print-directory all
	@$(OUT)/bpfpy oracle --default

# Every case x interpreter x {1,10} kHz x mode and peer (scripts/leaderboard.sh;
# LEADERBOARD_QUICK=1 for a short test run).
leaderboard: deps-test
	@$(MAKE) --no-print-directory all
	@OUT=$(OUT) scripts/leaderboard.sh

# BENCH_ARGS: passed to scripts/bench.py, e.g. make bench BENCH_ARGS=--quick
# or BENCH_ARGS='--only kernel --python pyenv-3.12'.
bench: deps-test
	@$(MAKE) --no-print-directory all
	@OUT=$(OUT) scripts/bench.sh $(OUT)/bench.json $(BENCH_ARGS)

# Man pages: generated from the binary's --help (the argp tables) and the
# docs pages' opening paragraphs, so they say what --help says.
man: $(OUT)/bpfpy | deps-run
	python3 scripts/gen_man.py $(OUT)/bpfpy $(OUT)/man docs

install: $(OUT)/bpfpy man
	install -D -m 0755 $(OUT)/bpfpy $(DESTDIR)$(PREFIX)/bin/bpfpy
	install -D -m 0644 -t $(DESTDIR)$(PREFIX)/share/man/man1 $(OUT)/man/*.1
	install -D -m 0644 contrib/bpfpy.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/bpfpy
	install -D -m 0644 -t $(DESTDIR)$(PREFIX)/share/doc/bpfpy README.md SECURITY.md
	install -D -m 0644 -t $(DESTDIR)$(PREFIX)/share/doc/bpfpy/docs docs/*.md
	install -d $(DESTDIR)$(PREFIX)/share/bpfpy/snippets
	cp -r snippets/. $(DESTDIR)$(PREFIX)/share/bpfpy/snippets/
	install -D -m 0755 -t $(DESTDIR)$(PREFIX)/share/bpfpy/scripts scripts/targets.sh \
		scripts/pyrun.sh scripts/oracle_cpython_unwinder.py

# user/profile/gen/profile.pb-c.[ch] are committed (protoc-c output), so building
# needs only libprotobuf-c; run this after editing user/profile/gen/profile.proto.
protobuf:
	cd user/profile/gen && protoc-c --c_out=. profile.proto

vmlinux:
	scripts/gen_vmlinux.sh vmlinux/$(ARCH)/vmlinux.h

format:
	clang-format -i bpf/*.h bpf/*.c user/main.c $(filter-out user/profile/gen/% user/python/gen/%,$(USER_SRCS) $(USER_HDRS)) tests/unit/*.c tests/unit/*.h

clean:
	rm -rf build build-san

-include mk/fuzz.mk
