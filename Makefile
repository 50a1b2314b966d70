# heapsnap: a heap profiler for Linux. `make` builds, `make check` tests, `make demo` records a demo.
OUTPUT ?= .output
CC ?= gcc
CXX ?= g++
CLANG ?= clang
BPFTOOL ?= bpftool
PROTOC_C ?= protoc-c
PREFIX ?= /usr/local
DESTDIR ?=
VERSION := 0.1.0

ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')
CFLAGS ?= -O2 -g
CFLAGS += -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter -D_GNU_SOURCE \
	  -DHEAPSNAP_VERSION='"$(VERSION)"' -I$(OUTPUT) -Iformat -Ibpf -Icommon
BPF_CFLAGS := -g -O2 -Wall -Werror -target bpf -D__TARGET_ARCH_$(ARCH) -I$(OUTPUT) -Ibpf -Icommon

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

# (with the seed of the hash tables that every program reading input keeps: common/hmap.c)
FORMAT_SRCS := format/varint.c format/schema.c format/payload.c format/writer.c format/reader.c format/events3.c format/classes3.c format/stacks5.c \
	common/hmap.c common/pyline.c
FORMAT_OBJS := $(patsubst %.c,$(OUTPUT)/%.o,$(FORMAT_SRCS))
# What both programs share that is not the file format: sizes and durations on the command line,
# build-ids, safe output files, unwind tables from .eh_frame.
COMMON_SRCS := common/units.c common/buildid.c common/outfile.c common/unwtab.c
COMMON_OBJS := $(patsubst %.c,$(OUTPUT)/%.o,$(COMMON_SRCS))
RECORD_DIRS := recorder recorder/bpf recorder/preload recorder/inject
RECORD_SRCS := $(foreach d,$(RECORD_DIRS),$(wildcard $(d)/*.c))
RECORD_INC := $(addprefix -I,$(RECORD_DIRS))
RECORD_OBJS := $(patsubst %.c,$(OUTPUT)/%.o,$(RECORD_SRCS)) $(OUTPUT)/recorder/inject/inject_stub.o
ANALYZE_SRCS := $(wildcard analyzer/*.c)
# The HTML report's page (analyzer/report.html) is built into the program: a report is one file.
ANALYZE_ASSETS := analyzer/html_page.S
ANALYZE_OBJS := $(patsubst %.c,$(OUTPUT)/%.o,$(ANALYZE_SRCS)) $(OUTPUT)/analyzer/html_page.o $(OUTPUT)/profile.pb-c.o

RECORD_LIBS := -lbpf -lelf -lzstd -lz -lpthread -lm
ANALYZE_LIBS := -pthread -ldw -lelf -lprotobuf-c -lzstd -lz -liberty -ldebuginfod -lncursesw -ltinfo -lm

BINS := $(OUTPUT)/heapsnap-record $(OUTPUT)/heapsnap-analyze
LIB := $(OUTPUT)/libheapsnap.so
# The in-process recorder runs inside the target: frame pointers for its own stack walk,
# nothing exported but the hooks, and no dependency beyond libc. It sees its own folder and
# common/: the ABI it shares with the recorder (common/abi/), the allocator table and the one
# source of common/ compiled into it (unwtab.c); nothing of format/, the recorder or the analyzer.
LIB_CFLAGS := -std=gnu11 -O2 -g -fPIC -fno-omit-frame-pointer -fvisibility=hidden -ftls-model=initial-exec \
	-Wall -Wextra -Werror -Wno-unused-parameter -D_GNU_SOURCE -Icommon

.PHONY: all clean check demo bench deps install test-programs fuzz fuzz-programs realworld
.DELETE_ON_ERROR:

all: $(BINS) $(LIB)

LIB_SRCS := $(wildcard libheapsnap/*.c) common/unwtab.c
LIB_DEPS := $(LIB_SRCS) libheapsnap/*.h common/abi/*.h common/*.h common/*.def
# The library into $@, with more flags $(1).
lib_link = $(CC) $(LIB_CFLAGS) $(1) -Ilibheapsnap -shared -Wl,-soname,libheapsnap.so -Wl,-z,now -Wl,-z,nodelete \
	$(LIB_SRCS) -ldl -lpthread -o $@

$(LIB): $(LIB_DEPS) | $(OUTPUT)
	$(call msg,LIB,$@)
	$(Q)$(call lib_link,)

deps:
	$(Q)scripts/install-deps.sh

$(OUTPUT)/format $(OUTPUT)/common $(addprefix $(OUTPUT)/,$(RECORD_DIRS)) $(OUTPUT)/analyzer $(OUTPUT)/tests:
	$(Q)mkdir -p $@

$(OUTPUT):
	$(Q)mkdir -p $@

$(OUTPUT)/vmlinux.h: | $(OUTPUT)
	$(call msg,GEN,$@)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@

$(OUTPUT)/%.bpf.o: bpf/%.bpf.c bpf/heapsnap.h common/abi/event_abi.h common/unw_rows.h $(wildcard bpf/*.bpf.h) $(OUTPUT)/vmlinux.h | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< > $@

$(OUTPUT)/profile.pb-c.c $(OUTPUT)/profile.pb-c.h: proto/profile.proto | $(OUTPUT)
	$(call msg,PROTOC,$<)
	$(Q)$(PROTOC_C) --proto_path=proto --c_out=$(OUTPUT) $<

$(OUTPUT)/profile.pb-c.o: $(OUTPUT)/profile.pb-c.c
	$(call msg,CC,$@)
	$(Q)$(CC) $(filter-out -Wextra,$(CFLAGS)) -c $< -o $@

$(OUTPUT)/format/%.o: format/%.c format/*.h | $(OUTPUT)/format
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

$(OUTPUT)/common/%.o: common/%.c common/*.h common/abi/*.h | $(OUTPUT)/common
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

RECORD_HDRS := $(foreach d,$(RECORD_DIRS),$(wildcard $(d)/*.h)) format/*.h common/*.h common/abi/*.h common/*.def bpf/heapsnap.h
$(OUTPUT)/recorder/%.o: recorder/%.c $(RECORD_HDRS) $(OUTPUT)/heapsnap.skel.h | $(addprefix $(OUTPUT)/,$(RECORD_DIRS))
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $(RECORD_INC) -c $< -o $@

# The injection stub: machine code copied into the target, never run in the recorder.
$(OUTPUT)/recorder/inject/inject_stub.o: recorder/inject/inject_stub.S common/abi/inject_abi.h common/abi/event_abi.h | $(OUTPUT)/recorder/inject
	$(call msg,AS,$@)
	$(Q)$(CC) -Icommon -c $< -o $@

$(OUTPUT)/analyzer/%.o: analyzer/%.c analyzer/*.h format/*.h common/*.h common/abi/*.h $(OUTPUT)/profile.pb-c.h | $(OUTPUT)/analyzer
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) -Ianalyzer -c $< -o $@

$(OUTPUT)/analyzer/html_page.o: analyzer/html_page.S analyzer/report.html | $(OUTPUT)/analyzer
	$(call msg,AS,$@)
	$(Q)$(CC) -c $< -o $@

$(OUTPUT)/heapsnap-record: $(RECORD_OBJS) $(FORMAT_OBJS) $(COMMON_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(RECORD_LIBS) -o $@

$(OUTPUT)/heapsnap-analyze: $(ANALYZE_OBJS) $(FORMAT_OBJS) $(COMMON_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(ANALYZE_LIBS) -o $@

# ---- tests ----
TEST_CFLAGS := -O1 -g -fno-omit-frame-pointer -fno-inline -Wall -Wextra -Werror -D_GNU_SOURCE
TEST_PROGS := $(OUTPUT)/tests/test_format $(OUTPUT)/tests/test_format3 $(OUTPUT)/tests/test_stacks5 $(OUTPUT)/tests/mutate $(OUTPUT)/tests/craft $(OUTPUT)/tests/alloc_c $(OUTPUT)/tests/demo \
	$(OUTPUT)/tests/alloc_cxx $(OUTPUT)/tests/libplugin.so $(OUTPUT)/tests/garbage_ok \
	$(OUTPUT)/tests/nofp $(OUTPUT)/tests/alloc_cxx_nofp $(OUTPUT)/tests/static_once $(OUTPUT)/tests/handoff \
	$(OUTPUT)/tests/quick $(OUTPUT)/tests/scribble $(OUTPUT)/tests/unwdump $(OUTPUT)/tests/phases $(OUTPUT)/tests/live_phases $(OUTPUT)/tests/nofp_debugframe \
	$(OUTPUT)/tests/recurse \
	$(OUTPUT)/tests/growth_old $(OUTPUT)/tests/growth_new $(OUTPUT)/tests/canon_plt \
	$(OUTPUT)/tests/libcountalloc.so $(OUTPUT)/tests/linked_alloc
TEST_PROGS += $(OUTPUT)/tests/threadchurn $(OUTPUT)/tests/closefds
TEST_PROGS += $(OUTPUT)/tests/wake $(OUTPUT)/tests/libwake_plugin.so
TEST_PROGS += $(OUTPUT)/tests/attach_shapes
TEST_PROGS += $(OUTPUT)/tests/libctor_free.so
TEST_PROGS += $(OUTPUT)/tests/filter_reader
TEST_PROGS += $(OUTPUT)/tests/test_units $(OUTPUT)/tests/test_sampling
TEST_PROGS += $(OUTPUT)/tests/schemagen
TEST_PROGS += $(OUTPUT)/tests/test_pyline $(OUTPUT)/tests/craft_py

# A recording of a Python program with real line tables (t_python_crafted_*).
$(OUTPUT)/tests/craft_py: tests/unit/craft_py.c $(FORMAT_SRCS) format/*.h common/abi/event_abi.h | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror -D_GNU_SOURCE -Iformat -Ibpf -Icommon -Icommon/abi \
		$< $(FORMAT_SRCS) common/outfile.c -lzstd -lelf -o $@

# The Python line-table decoder against CPython's own tables (t_python_linetables).
$(OUTPUT)/tests/test_pyline: tests/unit/test_pyline.c tests/unit/check.h common/pyline.c common/pyline.h | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror -D_GNU_SOURCE -Icommon \
		-fsanitize=address,undefined -fno-sanitize-recover=all $< common/pyline.c -o $@
TEST_PROGS += $(OUTPUT)/tests/libc_alloc
TEST_PROGS += $(OUTPUT)/tests/pydump $(OUTPUT)/tests/transient

$(OUTPUT)/tests/pydump: tests/unit/pydump.c $(FORMAT_SRCS) format/*.h common/abi/event_abi.h | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror -D_GNU_SOURCE -Iformat -Ibpf -Icommon -Icommon/abi \
		$< $(FORMAT_SRCS) common/outfile.c -lzstd -lelf -o $@

$(OUTPUT)/tests/test_format: tests/unit/test_format.c tests/unit/check.h $(FORMAT_SRCS) format/*.h | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror -Wno-unused-parameter -D_GNU_SOURCE -Iformat -Ibpf -Icommon \
		-fsanitize=address,undefined -fno-sanitize-recover=all $< $(FORMAT_SRCS) common/outfile.c -lzstd -lelf -o $@

$(OUTPUT)/tests/test_format3: tests/unit/test_format3.c tests/unit/check.h $(FORMAT_SRCS) format/*.h | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror -Wno-unused-parameter -D_GNU_SOURCE -Iformat -Ibpf -Icommon \
		-fsanitize=address,undefined -fno-sanitize-recover=all $< $(FORMAT_SRCS) common/outfile.c -lzstd -lelf -o $@

$(OUTPUT)/tests/test_stacks5: tests/unit/test_stacks5.c tests/unit/check.h $(FORMAT_SRCS) format/*.h | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror -Wno-unused-parameter -D_GNU_SOURCE -Iformat -Ibpf -Icommon \
		-fsanitize=address,undefined -fno-sanitize-recover=all $< $(FORMAT_SRCS) common/outfile.c -lzstd -lelf -o $@

$(OUTPUT)/tests/test_units: tests/unit/test_units.c tests/unit/check.h common/units.c common/units.h | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror -D_GNU_SOURCE -Icommon \
		-fsanitize=address,undefined -fno-sanitize-recover=all $< common/units.c -o $@

$(OUTPUT)/tests/test_sampling: tests/unit/test_sampling.c tests/unit/check.h recorder/sampling.c recorder/sampling.h bpf/heapsnap.h format/record.h \
		| $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror -D_GNU_SOURCE -Irecorder -Iformat -Ibpf -Icommon \
		-fsanitize=address,undefined -fno-sanitize-recover=all $< recorder/sampling.c -lm -o $@

$(OUTPUT)/tests/unwdump: tests/unit/unwdump.c common/unwtab.c common/unwtab.h | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror -D_GNU_SOURCE -Iformat -Ibpf -Icommon \
		-fsanitize=address,undefined -fno-sanitize-recover=all $< common/unwtab.c -lelf -o $@

$(OUTPUT)/tests/craft: tests/unit/craft.c $(FORMAT_SRCS) format/*.h | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror -Wno-unused-parameter -D_GNU_SOURCE -Iformat -Ibpf -Icommon \
		$< $(FORMAT_SRCS) common/outfile.c -lzstd -lelf -o $@

$(OUTPUT)/tests/mutate: tests/unit/mutate.c $(FORMAT_SRCS) format/*.h | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror -Wno-unused-parameter -D_GNU_SOURCE -Iformat -Ibpf -Icommon \
		$< $(FORMAT_SRCS) common/outfile.c -lzstd -lelf -o $@

# The schema's bytes pinned (t_format_schema); sanitized, as it feeds the reader damaged payloads.
$(OUTPUT)/tests/schemagen: tests/unit/schemagen.c $(FORMAT_SRCS) format/*.h | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror -D_GNU_SOURCE -Iformat -Ibpf -Icommon \
		-fsanitize=address,undefined -fno-sanitize-recover=all $< $(FORMAT_SRCS) common/outfile.c -lzstd -lelf -o $@

$(OUTPUT)/tests/alloc_c: tests/workloads/alloc_c.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -ldl -lpthread -o $@

# Reads libheapsnap.so's filter of sampled blocks as its free hook does (tests/workloads/filter_reader.c).
$(OUTPUT)/tests/filter_reader: tests/workloads/filter_reader.c libheapsnap/libheapsnap.h common/abi/*.h | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) -Icommon -Ilibheapsnap \
		$< -lpthread -o $@

# Non-PIE, with canonical PLT entries for the allocator (tests/workloads/canon_plt.c).
$(OUTPUT)/tests/canon_plt: tests/workloads/canon_plt.c tests/workloads/fifo_rounds.h | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) -no-pie -fno-pic $< -lpthread -o $@

# Non-PIE as canon_plt: runtimes' shapes an attach meets (tests/workloads/attach_shapes.c).
$(OUTPUT)/tests/attach_shapes: tests/workloads/attach_shapes.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) -no-pie -fno-pic $< -lpthread -ldl -o $@

# Sampled blocks freed by glibc after the library detaches (tests/workloads/pool_detach.c).
TEST_PROGS += $(OUTPUT)/tests/pool_detach
$(OUTPUT)/tests/pool_detach: tests/workloads/pool_detach.c tests/workloads/fifo_rounds.h | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -lpthread -o $@

# A countdown drawn in a sampled session, then an attach that records every event
# (tests/workloads/stale_countdown.cc).
TEST_PROGS += $(OUTPUT)/tests/stale_countdown
$(OUTPUT)/tests/stale_countdown: tests/workloads/stale_countdown.cc tests/workloads/fifo_rounds.h | $(OUTPUT)/tests
	$(call msg,CXX,$@)
	$(Q)$(CXX) -O1 -g -fno-omit-frame-pointer -Wall -Wextra -Werror $< -lpthread -o $@

# A countdown run down by calls a dormant library passes on (tests/workloads/dormant_countdown.c).
TEST_PROGS += $(OUTPUT)/tests/dormant_countdown
$(OUTPUT)/tests/dormant_countdown: tests/workloads/dormant_countdown.c tests/workloads/fifo_rounds.h | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -lpthread -o $@

# An allocator a program links, with a SysV hash table only (tests/workloads/countalloc.c).
$(OUTPUT)/tests/libcountalloc.so: tests/workloads/countalloc.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared -Wl,--hash-style=sysv $< -o $@

$(OUTPUT)/tests/linked_alloc: tests/workloads/linked_alloc.c tests/workloads/fifo_rounds.h $(OUTPUT)/tests/libcountalloc.so | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -L$(OUTPUT)/tests -lcountalloc -Wl,-rpath,'$$ORIGIN' -lpthread -o $@

# One program built twice: the new build has every line moved (tests/workloads/growth.c).
$(OUTPUT)/tests/growth_old: tests/workloads/growth.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -o $@

$(OUTPUT)/tests/growth_new: tests/workloads/growth.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) -DMOVED $< -o $@

$(OUTPUT)/tests/transient: tests/workloads/transient.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -o $@

$(OUTPUT)/tests/phases: tests/workloads/phases.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -o $@

$(OUTPUT)/tests/live_phases: tests/workloads/live_phases.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -o $@

$(OUTPUT)/tests/recurse: tests/workloads/recurse.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -o $@

# A failed realloc and temporary allocations, by each way in (t_failed_realloc_temporary).
TEST_PROGS += $(OUTPUT)/tests/failrealloc
# The runtime's nothrow new freed by its plain sized delete (t_preload_nothrow_pair).
TEST_PROGS += $(OUTPUT)/tests/nothrow_pair
$(OUTPUT)/tests/nothrow_pair: tests/workloads/nothrow_pair.cc | $(OUTPUT)/tests
	$(call msg,CXX,$@)
	$(Q)$(CXX) -O1 -g -fno-omit-frame-pointer -fsized-deallocation -Wall -Wextra -Werror $< -o $@
# A replacement operator new not built on malloc, in a library of its own (t_preload_own_new).
TEST_PROGS += $(OUTPUT)/tests/own_new $(OUTPUT)/tests/libown_new.so
$(OUTPUT)/tests/libown_new.so: tests/workloads/own_new.cc | $(OUTPUT)/tests
	$(call msg,CXX,$@)
	$(Q)$(CXX) -O1 -g -fPIC -shared -DOWN_NEW_LIB -Wall -Wextra -Werror $< -o $@
$(OUTPUT)/tests/own_new: tests/workloads/own_new.cc $(OUTPUT)/tests/libown_new.so | $(OUTPUT)/tests
	$(call msg,CXX,$@)
	$(Q)$(CXX) -O1 -g -fno-omit-frame-pointer -Wall -Wextra -Werror $< -L$(OUTPUT)/tests -lown_new -Wl,-rpath,'$$ORIGIN' -o $@
# Sampled blocks in libheapsnap.so's pool, by every allocator (tests/workloads/pool_paths.c).
TEST_PROGS += $(OUTPUT)/tests/pool_paths
$(OUTPUT)/tests/pool_paths: tests/workloads/pool_paths.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -lpthread -o $@
$(OUTPUT)/tests/failrealloc: tests/workloads/failrealloc.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) -Wno-alloc-size-larger-than $< -o $@

# Frees named by class, against the workload's own count of temporary allocations.
TEST_PROGS += $(OUTPUT)/tests/classes
$(OUTPUT)/tests/classes: tests/workloads/classes.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -lpthread -o $@

# The sampler's draws against Poisson's spread (t_sampler_strata).
TEST_PROGS += $(OUTPUT)/tests/strata
$(OUTPUT)/tests/strata: tests/workloads/strata.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -o $@

# A fork child that exits holding blocks while its parent runs on (t_analyzer_exited_ages).
TEST_PROGS += $(OUTPUT)/tests/child_exit
$(OUTPUT)/tests/child_exit: tests/workloads/child_exit.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -o $@

# A snapshot by SIGUSR1 with no pause after the events it must hold (t_snapshot_signal_drained).
TEST_PROGS += $(OUTPUT)/tests/snap_signal
$(OUTPUT)/tests/snap_signal: tests/workloads/snap_signal.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -o $@

# A free the in-process recorder does not see (t_analyzer_counters_agree).
TEST_PROGS += $(OUTPUT)/tests/unseen_free
$(OUTPUT)/tests/unseen_free: tests/workloads/unseen_free.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -o $@

# A process tree, children before and after an attach (t_attach_children and kin).
TEST_PROGS += $(OUTPUT)/tests/forktree
$(OUTPUT)/tests/forktree: tests/workloads/forktree.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -o $@

$(OUTPUT)/tests/libc_alloc: tests/workloads/libc_alloc.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -o $@

$(OUTPUT)/tests/quick: tests/workloads/quick.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -o $@

# Attached while asleep, then allocating at once as it wakes (t_inject_wake).
$(OUTPUT)/tests/wake: tests/workloads/wake.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) -rdynamic $< -ldl -lpthread -o $@

$(OUTPUT)/tests/libwake_plugin.so: tests/workloads/wake_plugin.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared $< -o $@

$(OUTPUT)/tests/scribble: tests/workloads/scribble.c common/abi/shm.h common/abi/event_abi.h bpf/heapsnap.h | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) -Icommon/abi -Ibpf -Icommon $< -o $@

$(OUTPUT)/tests/threadchurn: tests/workloads/threadchurn.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -lpthread -o $@

# Threads whose first allocator call is inside pthread_getattr_np (t_realprog_getattr_*).
TEST_PROGS += $(OUTPUT)/tests/getattr_thread
$(OUTPUT)/tests/getattr_thread: tests/workloads/getattr_thread.c tests/workloads/fifo_rounds.h | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -lpthread -o $@

# A program that puts a file of its own at the number of the memory's descriptor
# (t_realprog_stolen_fd).
TEST_PROGS += $(OUTPUT)/tests/steal_fd
$(OUTPUT)/tests/steal_fd: tests/workloads/steal_fd.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -o $@

# An executable with an allocator of its own, ahead of any preloaded one (t_realprog_own_malloc).
TEST_PROGS += $(OUTPUT)/tests/own_malloc
$(OUTPUT)/tests/own_malloc: tests/workloads/own_malloc.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) -fno-builtin $< -o $@

$(OUTPUT)/tests/closefds: tests/workloads/closefds.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -o $@

$(OUTPUT)/tests/handoff: tests/workloads/handoff.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -lpthread -o $@

$(OUTPUT)/tests/demo: tests/workloads/demo.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) -O2 -fno-inline $< -o $@

$(OUTPUT)/tests/alloc_cxx: tests/workloads/alloc_cxx.cc | $(OUTPUT)/tests
	$(call msg,CXX,$@)
	$(Q)$(CXX) -O1 -g -fno-omit-frame-pointer -fno-inline -Wall -Wextra -Werror $< -o $@

$(OUTPUT)/tests/libplugin.so: tests/workloads/plugin.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) -fPIC -shared $< -o $@

$(OUTPUT)/tests/libctor_free.so: tests/workloads/ctor_free.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) -fno-builtin -fPIC -shared $< -o $@

# Built without frame pointers on purpose: the --stack dwarf tests.
$(OUTPUT)/tests/nofp: tests/workloads/nofp.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -g -fomit-frame-pointer -fno-optimize-sibling-calls -Wall -Wextra -Werror $< -o $@

# The same with its call frame information only in .debug_frame, which a test moves into a
# separate debug file: the unwinder must find it through --debug-dir.
$(OUTPUT)/tests/nofp_debugframe: tests/workloads/nofp.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) -O1 -g -fomit-frame-pointer -fno-optimize-sibling-calls -fno-asynchronous-unwind-tables \
		-fno-unwind-tables -Wall -Wextra -Werror $< -o $@

$(OUTPUT)/tests/alloc_cxx_nofp: tests/workloads/alloc_cxx.cc | $(OUTPUT)/tests
	$(call msg,CXX,$@)
	$(Q)$(CXX) -O1 -g -fomit-frame-pointer -fno-inline -Wall -Wextra -Werror $< -o $@

$(OUTPUT)/tests/static_once: tests/workloads/static_once.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) -static $(TEST_CFLAGS) $< -o $@

$(OUTPUT)/tests/garbage_ok: tests/workloads/garbage.c | $(OUTPUT)/tests
	$(call msg,CC,$@)
	$(Q)$(CC) $(TEST_CFLAGS) $< -o $@

$(OUTPUT)/tests/alloc_rust: tests/workloads/alloc_rust.rs | $(OUTPUT)/tests
	$(call msg,RUSTC,$@)
	$(Q)rustc -C opt-level=1 -C debuginfo=2 -C force-frame-pointers=yes -C panic=abort $< -o $@ 2>/dev/null || \
		rustc -C opt-level=1 -C debuginfo=2 -C force-frame-pointers=yes $< -o $@

$(OUTPUT)/tests/alloc_rust_nofp: tests/workloads/alloc_rust.rs | $(OUTPUT)/tests
	$(call msg,RUSTC,$@)
	$(Q)rustc -C opt-level=1 -C debuginfo=2 -C force-frame-pointers=no $< -o $@

# ASan/UBSan builds of both programs, for tests/run.sh's sanitizer test.
SAN_FLAGS := -std=gnu11 -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
	-D_GNU_SOURCE -DHEAPSNAP_VERSION='"$(VERSION)-asan"' -I$(OUTPUT) -Iformat -Ibpf -Icommon

$(OUTPUT)/asan/heapsnap-analyze: $(ANALYZE_SRCS) $(ANALYZE_ASSETS) analyzer/report.html $(FORMAT_SRCS) $(COMMON_SRCS) \
		$(OUTPUT)/profile.pb-c.c analyzer/*.h format/*.h common/*.h
	$(call msg,CC-ASAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SAN_FLAGS) -Ianalyzer $(ANALYZE_SRCS) $(ANALYZE_ASSETS) $(FORMAT_SRCS) $(COMMON_SRCS) $(OUTPUT)/profile.pb-c.c \
		$(ANALYZE_LIBS) -o $@

$(OUTPUT)/asan/heapsnap-record: $(RECORD_SRCS) $(FORMAT_SRCS) $(COMMON_SRCS) $(OUTPUT)/heapsnap.skel.h $(RECORD_HDRS) format/*.h \
		common/*.h
	$(call msg,CC-ASAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(SAN_FLAGS) $(RECORD_INC) $(RECORD_SRCS) recorder/inject/inject_stub.S $(FORMAT_SRCS) $(COMMON_SRCS) $(RECORD_LIBS) -o $@

# libFuzzer targets (clang's -fsanitize=fuzzer): the reader alone, and replay with every report.
FUZZ_CC ?= clang
FUZZ_FLAGS := -std=gnu11 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-D_GNU_SOURCE -DHEAPSNAP_VERSION='"$(VERSION)-fuzz"' -I$(OUTPUT) -Iformat -Ibpf -Icommon -Ianalyzer -Itests/fuzz
FUZZ_PROGS := $(OUTPUT)/fuzz/fuzz_reader $(OUTPUT)/fuzz/fuzz_replay $(OUTPUT)/fuzz/fuzz_unwtab $(OUTPUT)/fuzz/fuzz_pyline

$(OUTPUT)/fuzz/fuzz_pyline: tests/fuzz/fuzz_pyline.c common/pyline.c common/pyline.h
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) $< common/pyline.c -o $@

$(OUTPUT)/fuzz/fuzz_unwtab: tests/fuzz/fuzz_unwtab.c common/unwtab.c common/unwtab.h bpf/heapsnap.h
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) $< common/unwtab.c -o $@

$(OUTPUT)/fuzz/fuzz_reader: tests/fuzz/fuzz_reader.c tests/fuzz/fuzz_common.h $(FORMAT_SRCS) format/*.h
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) $< $(FORMAT_SRCS) common/outfile.c -lzstd -lelf -o $@

$(OUTPUT)/fuzz/fuzz_replay: tests/fuzz/fuzz_replay.c tests/fuzz/fuzz_common.h $(filter-out analyzer/analyze_main.c,$(ANALYZE_SRCS)) \
		$(ANALYZE_ASSETS) analyzer/report.html $(FORMAT_SRCS) $(COMMON_SRCS) $(OUTPUT)/profile.pb-c.c analyzer/*.h format/*.h
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_FLAGS) $< $(filter-out analyzer/analyze_main.c,$(ANALYZE_SRCS)) $(ANALYZE_ASSETS) $(FORMAT_SRCS) $(COMMON_SRCS) \
		$(OUTPUT)/profile.pb-c.c $(ANALYZE_LIBS) -o $@

fuzz-programs: $(FUZZ_PROGS) $(OUTPUT)/tests/craft $(OUTPUT)/tests/craft_py

# FUZZ_SECONDS per target (default 60); `make check` runs them for a few seconds each.
fuzz: deps
	$(Q)$(MAKE) --no-print-directory fuzz-programs
	$(Q)OUTPUT=$(OUTPUT) scripts/fuzz.sh $(or $(FUZZ_SECONDS),60)

TEST_PROGS += $(FUZZ_PROGS)
TEST_PROGS += $(OUTPUT)/asan/heapsnap-analyze $(OUTPUT)/asan/heapsnap-record $(OUTPUT)/bench/genfile

test-programs: $(TEST_PROGS)
	-$(Q)$(MAKE) --no-print-directory $(OUTPUT)/tests/alloc_rust $(OUTPUT)/tests/alloc_rust_nofp

check: deps
	$(Q)$(MAKE) --no-print-directory all test-programs
	$(Q)OUTPUT=$(OUTPUT) tests/run.sh

# The real-program matrix (tests/realworld.sh, docs/REALWORLD.md): ripgrep, sqlite3, git, redis,
# node, PostgreSQL, chromium and CPython's tests, each under every way in; ~25 minutes.
realworld: deps
	$(Q)$(MAKE) --no-print-directory all test-programs
	$(Q)OUTPUT=$(OUTPUT) tests/realworld.sh

demo: deps
	$(Q)$(MAKE) --no-print-directory all $(OUTPUT)/tests/demo
	$(Q)OUTPUT=$(OUTPUT) scripts/demo.sh

BENCH_PROGS := $(OUTPUT)/bench/workload $(OUTPUT)/bench/workload_cxx $(OUTPUT)/bench/genfile $(OUTPUT)/bench/libfloor.so \
	$(OUTPUT)/bench/libfloor_countdown.so $(OUTPUT)/bench/libfloor_filter.so $(OUTPUT)/bench/libfloor_both.so \
	$(OUTPUT)/bench/dense/libheapsnap.so

$(OUTPUT)/bench:
	$(Q)mkdir -p $@

$(OUTPUT)/bench/workload: bench/workload.c bench/pin.h | $(OUTPUT)/bench
	$(call msg,CC,$@)
	$(Q)$(CC) -O2 -g -fno-omit-frame-pointer -Wall -Wextra -Werror $< -lpthread -o $@

$(OUTPUT)/bench/workload_cxx: bench/workload_cxx.cc bench/pin.h | $(OUTPUT)/bench
	$(call msg,CXX,$@)
	$(Q)$(CXX) -O2 -g -fno-omit-frame-pointer -Wall -Wextra -Werror $< -o $@

# libheapsnap.so placing samples in its pool from 4 KiB: the bench's dense sampling, where a
# sample's cost is weighed (bench/bench.sh).
$(OUTPUT)/bench/dense/libheapsnap.so: $(LIB_DEPS)
	$(call msg,LIB,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(call lib_link,-DPOOL_MIN_RATE=4096u)

# The interposition floor: allocators that only forward, preloaded as libheapsnap.so is.
FLOOR_CFLAGS := -O2 -g -fPIC -shared -fvisibility=hidden -fno-omit-frame-pointer -Wall -Wextra -Werror
$(OUTPUT)/bench/libfloor.so: bench/floor.c | $(OUTPUT)/bench
	$(call msg,LIB,$@)
	$(Q)$(CC) $(FLOOR_CFLAGS) $< -ldl -o $@

# The floor with a byte sampler's checks at their cheapest (bench/floor.c): what they cost alone.
$(OUTPUT)/bench/libfloor_countdown.so: bench/floor.c | $(OUTPUT)/bench
	$(call msg,LIB,$@)
	$(Q)$(CC) $(FLOOR_CFLAGS) -DFLOOR_COUNTDOWN $< -ldl -o $@

$(OUTPUT)/bench/libfloor_filter.so: bench/floor.c | $(OUTPUT)/bench
	$(call msg,LIB,$@)
	$(Q)$(CC) $(FLOOR_CFLAGS) -DFLOOR_FILTER $< -ldl -o $@

$(OUTPUT)/bench/libfloor_both.so: bench/floor.c | $(OUTPUT)/bench
	$(call msg,LIB,$@)
	$(Q)$(CC) $(FLOOR_CFLAGS) -DFLOOR_COUNTDOWN -DFLOOR_FILTER $< -ldl -o $@

$(OUTPUT)/bench/genfile: bench/genfile.c $(FORMAT_OBJS) $(OUTPUT)/common/outfile.o | $(OUTPUT)/bench
	$(call msg,CC,$@)
	$(Q)$(CC) $(CFLAGS) $< $(FORMAT_OBJS) $(OUTPUT)/common/outfile.o -lzstd -lelf -o $@

bench: deps
	$(Q)$(MAKE) --no-print-directory all $(BENCH_PROGS)
	$(Q)OUTPUT=$(OUTPUT) bench/bench.sh

# Man pages made from each program's --help: its options, defaults and examples, one place.
MANS := $(OUTPUT)/man/heapsnap-record.1 $(OUTPUT)/man/heapsnap-analyze.1

$(OUTPUT)/man/heapsnap-record.1: $(OUTPUT)/heapsnap-record scripts/mkman.py
	$(call msg,MAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)python3 scripts/mkman.py $< $(VERSION) "record the heap allocations of a process or a host" >$@

$(OUTPUT)/man/heapsnap-analyze.1: $(OUTPUT)/heapsnap-analyze scripts/mkman.py
	$(call msg,MAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)python3 scripts/mkman.py $< $(VERSION) "replay heapsnap recordings and report on the heap" >$@

install: all $(MANS)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/heapsnap $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 0755 $(BINS) $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 $(LIB) $(DESTDIR)$(PREFIX)/lib/heapsnap/
	install -m 0644 $(MANS) $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 0644 scripts/heapsnap-completion.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/heapsnap-record
	install -m 0644 scripts/heapsnap-completion.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/heapsnap-analyze

clean:
	$(call msg,CLEAN,$(OUTPUT))
	$(Q)rm -rf $(OUTPUT)
