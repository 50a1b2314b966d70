# The live view in a real terminal: tmux draws it (new-session -x -y), send-keys types at it,
# capture-pane reads what it shows and display says whether the alternate screen is still
# on. The figures are tests/workloads/live_phases.c's (phase_second 5 x 7000 bytes, held on a
# FIFO until the test lets it go); the terminal's modes are `stty -g`'s before and after.

need_tmux() { command -v tmux >/dev/null || skip "tmux is not installed (scripts/install-deps.sh installs it)"; }

# A tmux server of the test's own, and a session on it running a shell line.
tx() { tmux -L "hs$$" "$@"; }
tx_start() { tx new-session -d -s v -x "$1" -y "$2" "$3" || die "tmux new-session"; }
# Until the server has gone: a new session started while it exits may reach it and fail.
tx_end() {
	local i
	tx kill-server 2>/dev/null
	for i in $(seq 100); do tx ls >/dev/null 2>&1 || return 0; sleep 0.05; done
}
pane() { tx capture-pane -p -t v "$@"; }
# waitpane STRING: until the pane shows STRING (20 s).
waitpane() {
	local i
	for i in $(seq 400); do pane | grep -qF -- "$1" && return 0; sleep 0.05; done
	return 1
}
# waitfile FILE: until FILE exists and is not empty (20 s).
waitfile() {
	local i
	for i in $(seq 400); do [ -s "$1" ] && return 0; sleep 0.05; done
	return 1
}
view_die() {
	echo "--- the pane:"
	pane 2>/dev/null
	tx_end
	[ -n "${VIEW_PIDS:-}" ] && kill $VIEW_PIDS 2>/dev/null
	die "$@"
}
alt_screen() { tx display -p -t v '#{alternate_on}'; }

# (g) heapsnap-record -p PID --live on a terminal: the full-screen view of the attached
# program's functions as they allocate; its keys; q ends the recorder with 0, the terminal
# as it was, the target running, the file whole with the view's figures.
t_live_view_attach() {
	need_tmux
	trap tx_end EXIT # a failed check leaves no server, nor what runs in it
	need_inject
	local w f=$TMP/va.hsnap
	rm -f "$TMP/lp.fifo"
	mkfifo "$TMP/lp.fifo"
	"$T/live_phases" "$TMP/lp.fifo" 2>"$TMP/va.w.err" &
	w=$!
	VIEW_PIDS=$w
	waitfor "$TMP/va.w.err" kept || view_die "the workload did not start"
	tx_start 160 48 "stty -g >$TMP/va.before; $R -p $w -s 0 --live --refresh 0.3s -o $f 2>$TMP/va.err; echo \$? >$TMP/va.rc; stty -g >$TMP/va.after; exec sleep 600"
	waitpane "every event" || { cat "$TMP/va.err"; view_die "no view"; }
	contains "$TMP/va.err" "attached to $w"
	# Phase two runs after the attach: its 5 x 7000 bytes, exact, from its named function.
	echo go >"$TMP/lp.fifo"
	waitpane " phase_second" || view_die "phase_second never shown"
	waitpane "live 35,000 B in 5 blocks" || view_die "the header's live heap"
	pane | grep -qE '^ +35,000 +35,000 +5 .* phase_second$' || view_die "phase_second's row: own, total, blocks"
	pane | grep -qF "process $w live_phases" || view_die "the process"
	pane | grep -qF "via inject" || view_die "the way in"
	pane | grep -qF "lost: none" || view_die "the losses"
	[ "$(alt_screen)" = 1 ] || view_die "not in the alternate screen while it runs"
	# Keys: sort by another column, native frames, a snapshot marked by the recorder.
	tx send-keys -t v '>'
	waitpane "TOTAL*" || view_die "> did not sort by TOTAL"
	tx send-keys -t v v
	waitpane "(native frames)" || view_die "v did not switch to native frames"
	tx send-keys -t v p
	waitpane "(native frames, process $w live_phases)" || view_die "p did not choose the process"
	tx send-keys -t v t
	waitpane "(native frames, thread $w)" || view_die "t did not choose the thread"
	pane | grep -qE '^ +35,000 +35,000 +5 .* phase_second$' || view_die "phase_second's row, of its thread"
	tx send-keys -t v t
	waitpane "(native frames, process $w live_phases)" || view_die "t did not go back to every thread"
	tx send-keys -t v p
	waitpane "(native frames)" || view_die "p did not go back to every process"
	tx send-keys -t v m
	waitpane "snapshot marked" || view_die "m: no snapshot"
	waitpane "^ snapshot (1)" || view_die "the snapshot not on the chart"
	tx send-keys -t v q
	waitfile "$TMP/va.rc" || view_die "q did not end the recorder"
	eq "recorder exit after q" 0 "$(cat "$TMP/va.rc")"
	waitfile "$TMP/va.after" || view_die "no stty after"
	cmp -s "$TMP/va.before" "$TMP/va.after" || view_die "terminal modes changed: $(cat "$TMP/va.before") -> $(cat "$TMP/va.after")"
	[ "$(alt_screen)" = 0 ] || view_die "left in the alternate screen"
	waitpane "heapsnap live: $f: the end at" || view_die "no last word on the terminal"
	pane | grep -qF "35,000 bytes live in 5 blocks" || view_die "the last word's figures"
	kill -0 "$w" 2>/dev/null || view_die "the target did not survive q"
	tx_end
	# The file reads whole, with the view's figures and the snapshot m marked.
	"$A" top "$f" >"$TMP/va.top" 2>&1 || { cat "$TMP/va.top"; view_die "the file does not read"; }
	grep -qE '^ +35000 .* phase_second$' "$TMP/va.top" || { cat "$TMP/va.top"; view_die "top of the file"; }
	"$A" info --json "$f" >"$TMP/va.info" || view_die "info"
	grep -q '"origin": *"signal"' "$TMP/va.info" || { cat "$TMP/va.info"; view_die "no signal snapshot in the file"; }
	echo go >"$TMP/lp.fifo"
	wait "$w" || die "the target's exit after the view"
	echo "NOTE: phase_second 35,000 B in 5 blocks shown attached; q: exit 0, modes restored, target ran on"
}

# (h) heapsnap-analyze live on a finished file at 80x24 without colour, resized, then ended
# by SIGTERM, by Ctrl-C and by a crash: each time the terminal as it was.
t_live_view_terminal() {
	need_tmux
	trap tx_end EXIT # a failed check leaves no server, nor what runs in it
	local f=$TMP/vt.hsnap pid k i
	"$R" --via preload -s 0 -o "$f" -- "$T/phases" 2>/dev/null || die "record"
	# NO_COLOR: bold and reverse only; without it, colour.
	for k in plain colour; do
		rm -f "$TMP/vt.before" "$TMP/vt.after"
		local env=NO_COLOR=1
		[ $k = colour ] && env=NO_COLOR=
		tx_start 80 24 "stty -g >$TMP/vt.before; env $env TERM=tmux-256color $A live $f; echo \$? >$TMP/vt.rc; stty -g >$TMP/vt.after; exec sleep 600"
		waitpane "q to leave" || view_die "$k: the end not shown"
		pane | grep -qE ' phase_two$' || view_die "$k: phase_two not in the table at 80x24"
		pane | grep -qF "q quit" || view_die "$k: no keys line"
		if [ $k = plain ]; then
			pane -e | grep -q $'\e\\[3[0-7]m\|\e\\[38;' && view_die "NO_COLOR: colour sequences drawn"
		else
			pane -e | grep -q $'\e\\[3[0-7]m\|\e\\[38;' || view_die "no colour without NO_COLOR"
		fi
		tx send-keys -t v q
		waitfile "$TMP/vt.after" || view_die "$k: q did not leave"
		eq "$k: exit" 0 "$(cat "$TMP/vt.rc")"
		cmp -s "$TMP/vt.before" "$TMP/vt.after" || view_die "$k: terminal modes changed"
		[ "$(alt_screen)" = 0 ] || view_die "$k: left in the alternate screen"
		tx_end
	done
	# Resized: drawn again for the new size. Then each way out.
	for k in TERM INT SEGV; do
		rm -f "$TMP/vt.before" "$TMP/vt.after" "$TMP/vt.pid"
		tx_start 120 40 "stty -g >$TMP/vt.before; sh -c 'echo \$\$ >$TMP/vt.pid; exec env TERM=tmux-256color $A live $f'; stty -g >$TMP/vt.after; exec sleep 600"
		waitpane "q to leave" || view_die "$k: the end not shown"
		if [ $k = TERM ]; then
			tx resize-window -t v -x 90 -y 30
			# The chart's axis spans the new width: 10 columns of labels, 79 of time.
			for i in $(seq 400); do pane | grep -qE '^ {10}[.^]{79}$' && break; sleep 0.05; done
			pane | grep -qE '^ {10}[.^]{79}$' || view_die "the chart not drawn again for 90 columns"
			[ "$(pane | wc -l)" = 30 ] || view_die "the pane is not 30 lines"
			pane | tail -1 | grep -q "^q quit" || view_die "the keys not on the last line after the resize"
		fi
		pid=$(cat "$TMP/vt.pid")
		case $k in
		TERM) kill -TERM "$pid" ;;
		INT) tx send-keys -t v C-c ;;
		SEGV) kill -SEGV "$pid" ;;
		esac
		waitfile "$TMP/vt.after" || view_die "SIG$k did not end the view"
		cmp -s "$TMP/vt.before" "$TMP/vt.after" || view_die "SIG$k: terminal modes changed"
		[ "$(alt_screen)" = 0 ] || view_die "SIG$k: left in the alternate screen"
		tx_end
	done
	# The terminal gone (its window closed, ssh dropped) while the end waits for q: the view
	# leaves rather than wait for a key that cannot come.
	rm -f "$TMP/vt.pid"
	tx_start 100 30 "sh -c 'echo \$\$ >$TMP/vt.pid; exec env TERM=tmux-256color $A live $f'; exec sleep 600"
	waitpane "q to leave" || view_die "hangup: the end not shown"
	pid=$(cat "$TMP/vt.pid")
	tx_end
	for i in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
	kill -0 "$pid" 2>/dev/null && { kill "$pid"; die "the view stayed after its terminal hung up"; }
	echo "NOTE: 80x24 with and without colour, a resize, SIGTERM, Ctrl-C, SIGSEGV: the terminal as it was; a hangup ends it"
}

# (i) --via bpf --live: once the recording has ended, and while the full-screen view shows its
# end until q, the probes are gone: no process on the host traps into them meanwhile.
t_live_view_bpf_detached() {
	need_tmux
	trap tx_end EXIT # a failed check leaves no server, nor what runs in it
	need_bpf
	local f=$TMP/vb.hsnap rpid n
	tx_start 120 40 "$R --via bpf -s 0 --live -o $f -- $T/quick vb 2>$TMP/vb.err; echo \$? >$TMP/vb.rc; exec sleep 600"
	waitpane "q to leave" || { cat "$TMP/vb.err"; view_die "the end not shown"; }
	# The recorder, not the shell tmux runs it in (whose command line holds it too).
	rpid=$(pgrep -f -- "^$R --via bpf -s 0 --live -o $f") || view_die "no recorder waiting on its view"
	[ -d /proc/"$rpid"/fd ] || view_die "cannot read the recorder's descriptors"
	n=$(ls -l /proc/"$rpid"/fd 2>/dev/null | grep -cE 'bpf_link|perf_event')
	eq "probes still attached while the view shows the end" 0 "$n"
	pane | grep -qE '^ +3,000 .* quick_alloc$' || view_die "quick_alloc's 3,000 bytes"
	tx send-keys -t v q
	waitfile "$TMP/vb.rc" || view_die "q did not end the recorder"
	eq "recorder exit" 0 "$(cat "$TMP/vb.rc")"
	contains "$TMP/vb.err" "live at the end: 3000 bytes"
	tx_end
}

ALL="$ALL t_live_view_attach t_live_view_terminal t_live_view_bpf_detached"
