# Helpers every area file uses (sourced by tests/run.sh). Each test runs in a subshell:
# `die` and `skip` end only that test.
die() { echo "FAILED: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }
eq() { [ "$2" = "$3" ] || die "$1: expected '$2', got '$3'"; }

# within NAME EXPECTED ACTUAL PERCENT
within() {
	awk -v e="$2" -v a="$3" -v p="$4" 'BEGIN { d = a - e; if (d < 0) d = -d; exit !(e > 0 && d <= e * p / 100) }' ||
		die "$1: expected $2 +-$4%, got $3"
}

contains() { grep -qF -- "$2" "$1" || { echo "--- $1:"; head -50 "$1"; die "'$2' not found in $1"; }; }

# pv FILE SAMPLE_INDEX FUNCTION [flat|cum]: one function's exact value, as go tool pprof reads it.
pv() {
	local col=1
	[ "${4:-flat}" = cum ] && col=4
	go tool pprof -symbolize=none -top -nodecount=100000 -nodefraction=0 -edgefraction=0 -unit=B -sample_index="$2" "$1" 2>/dev/null |
		awk -v fn="$3" -v col="$col" '
			/^ *flat/ { body = 1; next }
			body { name = $6; for (i = 7; i <= NF; i++) name = name " " $i
			       if (name == fn) { v = $col; sub(/B$/, "", v); print v; found = 1; exit } }
			END { if (!found) print "absent" }'
}

record() { "$R" --via "$VIA" "$@" >"$TMP/record.out" 2>"$TMP/record.err" || { cat "$TMP/record.err"; return 1; }; }

BPF_REASON=
bpf_check() {
	if [ "$(id -u)" != 0 ]; then
		BPF_REASON="not root: the recorder needs root (or CAP_BPF and CAP_PERFMON) to load BPF"
	elif [ ! -r /sys/kernel/btf/vmlinux ]; then
		BPF_REASON="the kernel has no BTF (/sys/kernel/btf/vmlinux)"
	elif ! "$R" --via "$VIA" -o "$TMP/probe.hsnap" -- /bin/true >"$TMP/probe.log" 2>&1; then
		BPF_REASON="the recorder cannot load or attach here: $(grep -m1 heapsnap-record "$TMP/probe.log")"
	fi
}

need_bpf() { [ "$VIA" = preload ] || [ -z "$BPF_REASON" ] || skip "$BPF_REASON"; }
# The Go whose `go tool pprof` reads our output: $GO if set, else the first on PATH (said by
# run.sh at its start). Every `go` of the tests is this one.
GO=${GO:-$(command -v go || true)}
go() { "$GO" "$@"; }
need_go() { [ -n "$GO" ] && [ -x "$GO" ] || skip "go (golang-go) is not installed: no go tool pprof to check against"; }

# What another user runs, where another user can reach it: the checkout may sit in a
# directory only its owner can enter.
# kill_tree PID: PID and every process below it (a shell function run in the background is a
# subshell whose children outlive a kill of it alone: `go tool pprof`'s pprof).
kill_tree() {
	local c
	for c in $(pgrep -P "$1"); do kill_tree "$c"; done
	kill "$1" 2>/dev/null
}

unpriv_bin() {
	mkdir -p "$TMP/ub"
	cp "$R" "$OUT/libheapsnap.so" "$T/alloc_c" "$T/libplugin.so" "$TMP/ub/"
	chmod o+x "$TMP"; chmod -R o+rX "$TMP/ub"
}

# nofp_check NAME [LEVEL]: tests/workloads/nofp.c's figures, every level up to LEVEL (default
# __libc_start_call_main, where only nofp's bytes are), in $TMP/NAME.hsnap.
nofp_check() {
	local p=$TMP/$1.pb.gz lvl
	"$A" pprof -o "$p" "$TMP/$1.hsnap" 2>/dev/null || die "$1: pprof"
	eq "$1: nofp_level3 flat" 20000 "$(pv $p inuse_space nofp_level3)"
	for lvl in nofp_level2 nofp_level1 main __libc_start_call_main; do
		eq "$1: $lvl cum" 20000 "$(pv $p inuse_space $lvl cum)"
		if [ "$lvl" = "${2:-}" ]; then break; fi
	done
}

# ---- attaching to a running process (-p) ----

# waitfor FILE TEXT: until TEXT is in FILE (a condition, not a time: up to 20 s).
waitfor() {
	local i
	for i in $(seq 400); do grep -qF -- "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
	return 1
}

need_inject() {
	[ "$(id -u)" = 0 ] || skip "not root: attaching to processes of other users needs CAP_SYS_PTRACE"
	[ -r /proc/sys/kernel/yama/ptrace_scope ] && [ "$(cat /proc/sys/kernel/yama/ptrace_scope)" = 3 ] &&
		skip "kernel.yama.ptrace_scope is 3: no process may be attached to"
	return 0
}

# fifo_target NAME TARGET...: starts TARGET with $TMP/NAME.fifo, which its commands come
# through, as its last argument (stdout $TMP/NAME.out, stderr $TMP/NAME.terr), and waits for
# its "ready PID"; sets TJOB (its job) and TPID (the pid it said). A target never ready is
# killed.
fifo_target() {
	local name=$1
	shift
	# A name used before in this run leaves its output: its "ready" would be read as this one's.
	rm -f "$TMP/$name.fifo" "$TMP/$name.out" "$TMP/$name.terr"
	mkfifo "$TMP/$name.fifo"; chmod 666 "$TMP/$name.fifo"
	"$@" "$TMP/$name.fifo" >"$TMP/$name.out" 2>"$TMP/$name.terr" &
	TJOB=$!
	waitfor "$TMP/$name.out" ready || { kill $TJOB 2>/dev/null; die "$name: the target never said ready"; }
	TPID=$(awk '/^ready/ { print $2 }' "$TMP/$name.out")
}

# inject_start NAME TARGET...: fifo_target, then attaches with the recorder's options in RARGS;
# sets TPID (the target), TJOB (its job) and RPID.
inject_start() {
	local name=$1

	fifo_target "$@"
	"$R" -v -p "$TPID" ${RARGS:--s 0} -o "$TMP/$name.hsnap" >/dev/null 2>"$TMP/$name.rerr" &
	RPID=$!
	waitfor "$TMP/$name.rerr" "attached to $TPID" || { cat "$TMP/$name.rerr"; die "$name: never attached"; }
}

# inject_finish NAME STATUS: releases the target; its own exit status and no output of ours in it.
inject_finish() {
	local rc
	echo go >"$TMP/$1.fifo"
	wait $TJOB; rc=$?
	eq "$1: the target's own exit status" "$2" $rc
	wait $RPID || { cat "$TMP/$1.rerr"; die "$1: the recorder failed"; }
	[ -s "$TMP/$1.terr" ] && { cat "$TMP/$1.terr"; die "$1: the target wrote to stderr"; }
	eq "$1: the target's stdout" "ready $TPID" "$(cat "$TMP/$1.out")"
}

# churn_check NAME FILE N: threadchurn's N threads each kept one 1234-byte block from
# churn_keep (tests/workloads/threadchurn.c), every one recorded, no event lost.
churn_check() {
	local name=$1 f=$2 n=$3 p=$TMP/$1.pb.gz lost
	"$A" pprof -o "$p" "$f" 2>/dev/null || die "$name: pprof"
	"$A" stats --json "$f" >"$TMP/$name.stats" 2>/dev/null || die "$name: stats"
	lost=$(grep -o '"lost\.[a-z_]*":[0-9]*' "$TMP/$name.stats" | awk -F: '{ s += $2 } END { print s + 0 }')
	eq "$name: lost.* in all" 0 "$lost"
	eq "$name: churn_keep inuse_objects (one per thread)" "$n" "$(pv "$p" inuse_objects churn_keep)"
	eq "$name: churn_keep inuse_space" $((n * 1234)) "$(pv "$p" inuse_space churn_keep)"
}

# libc_alloc's figures (tests/workloads/libc_alloc.c), read from $TMP/NAME.hsnap.
alloctab_check() {
	local name=$1 p=$TMP/$1.pb.gz
	"$A" pprof -o "$p" "$TMP/$name.hsnap" 2>/dev/null || die "$name: pprof"
	eq "$name: libc_malloc_kept inuse_space (__libc_malloc)" 61725 "$(pv $p inuse_space libc_malloc_kept)"
	eq "$name: libc_malloc_kept inuse_objects" 5 "$(pv $p inuse_objects libc_malloc_kept)"
	eq "$name: malloc_kept inuse_space" 3000 "$(pv $p inuse_space malloc_kept)"
	eq "$name: libc_free_temp alloc_space" 22220 "$(pv $p alloc_space libc_free_temp)"
	eq "$name: libc_free_temp inuse_space (__libc_free)" absent "$(pv $p inuse_space libc_free_temp)"
}

# ---- a process tree attached to (tests/workloads/forktree.c) ----

# tree_bytes FILE PID FUNCTION: the bytes process PID allocated in a stack through FUNCTION
# (collapsed stacks, every allocation: no go needed), 0 if none.
tree_bytes() {
	"$A" collapsed --value alloc_space --pid "$2" "$1" 2>/dev/null |
		awk -v fn="$3" '{ v = $NF; n = split(substr($0, 1, length($0) - length($NF) - 1), f, ";")
			     for (i = 1; i <= n; i++) if (f[i] == fn) { s += v; break } } END { print s + 0 }'
}

# tree_run NAME OLD NEW [RECORDER OPTIONS]: forktree with OLD children before the attach and
# NEW after, attached to (-s 0 and the options), then woken; waits for both to end. Sets TPID,
# T_OLD and T_NEW (the children's pids, in their order).
tree_run() {
	local name=$1 old=$2 new=$3 rc
	shift 3
	fifo_target "$name" "$T/forktree" "$old" "$new"
	"$R" -p "$TPID" -s 0 "$@" -o "$TMP/$name.hsnap" >/dev/null 2>"$TMP/$name.rerr" &
	RPID=$!
	waitfor "$TMP/$name.rerr" "attached to $TPID" || { kill $TJOB; cat "$TMP/$name.rerr"; die "$name: never attached"; }
	echo go >"$TMP/$name.fifo"
	wait $TJOB; rc=$?
	eq "$name: the target's own exit status" 0 $rc
	wait $RPID || { cat "$TMP/$name.rerr"; die "$name: the recorder failed"; }
	[ -s "$TMP/$name.terr" ] && { cat "$TMP/$name.terr"; die "$name: the target wrote to stderr"; }
	T_OLD=$(awk '/^old/ { print $2 }' "$TMP/$name.out")
	T_NEW=$(awk '/^new/ { print $2 }' "$TMP/$name.out")
	eq "$name: new children said" "$new" "$(echo $T_NEW | wc -w)"
}

# tree_check NAME OLD_RECORDED: forktree's figures in $TMP/NAME.hsnap, for each process by
# its pid: the parent's 3,108 bytes, each new child j's 1,000 x (j % 64 + 1) (its first calls after
# fork), each old child i's 3,000 x (i + 1) if OLD_RECORDED is yes, else none; nothing from
# before the attach.
tree_check() {
	local name=$1 f=$TMP/$1.hsnap i=0 pid
	eq "$name: the parent's tree_parent_keep" 3108 "$(tree_bytes "$f" "$TPID" tree_parent_keep)"
	eq "$name: the parent's tree_before_attach" 0 "$(tree_bytes "$f" "$TPID" tree_before_attach)"
	for pid in $T_OLD; do
		i=$((i + 1))
		eq "$name: old child $i ($pid) tree_old_keep" $([ "$2" = yes ] && echo $((3000 * i)) || echo 0) \
			"$(tree_bytes "$f" "$pid" tree_old_keep)"
		eq "$name: old child $i ($pid) tree_before_attach" 0 "$(tree_bytes "$f" "$pid" tree_before_attach)"
	done
	i=0
	for pid in $T_NEW; do
		i=$((i + 1))
		eq "$name: new child $i ($pid) tree_new_first" $((1000 * ((i - 1) % 64 + 1))) "$(tree_bytes "$f" "$pid" tree_new_first)"
	done
}

# snap_signal_check NAME N: tests/workloads/snap_signal.c, told where the recorder is, has kept
# N x 100 bytes from snap_keep and sends SIGUSR1; once the snapshot is in $TMP/NAME.hsnap
# (the recorder flushes it), the workload frees its blocks. The snapshot must hold every one.
snap_signal_check() {
	local name=$1 n=$2 f=$TMP/$1.hsnap i v
	waitfor "$TMP/$name.out" signalled || die "$name: the workload never signalled"
	for i in $(seq 400); do
		"$A" info --json "$f" 2>/dev/null | grep -q '"origin":"signal"' && break
		sleep 0.05
	done
	"$A" info --json "$f" 2>/dev/null | grep -q '"origin":"signal"' || die "$name: no signal snapshot in the file"
	echo free >"$TMP/$name.fifo"
	wait $RPID || { cat "$TMP/$name.rerr"; die "$name: the recorder failed"; }
	for v in inuse_objects:$n inuse_space:$((n * 100)); do
		eq "$name: snap_keep ${v%:*} at the signal's snapshot" "${v#*:}" \
			"$("$A" top --json -n 0 --snapshot 1 --value ${v%:*} "$f" | grep -o '"name":"snap_keep","flat":[0-9]*' | cut -d: -f3)"
	done
	# And freed after it: the snapshot does not stand for the end.
	eq "$name: snap_keep at the end" "" \
		"$("$A" top --json -n 0 "$f" | grep -o '"name":"snap_keep","flat":[1-9][0-9]*' | cut -d: -f3)"
}
