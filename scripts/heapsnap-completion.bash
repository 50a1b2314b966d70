# bash completion for heapsnap-record and heapsnap-analyze. Options and subcommands are read
# from each program's --help, the one place they are written down.

_heapsnap_options() {
	"$1" --help 2>/dev/null | grep -oE -- '--[a-z][a-z-]*' | sort -u
}

_heapsnap_analyze() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]} prog=${COMP_WORDS[0]}

	COMPREPLY=()
	if [ "$COMP_CWORD" -eq 1 ]; then
		COMPREPLY=($(compgen -W "$("$prog" --help 2>/dev/null |
			awk '/^Subcommands:/ { s = 1; next } s && /^  [a-z]/ { print $1 } s && /^$/ { exit }') --help --version" -- "$cur"))
		return
	fi
	case $prev in
	-o | --output | --pprof | --base-pprof) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	--debug-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
	--value) COMPREPLY=($(compgen -W "inuse_space inuse_objects alloc_space alloc_objects" -- "$cur")); return ;;
	--snapshot) COMPREPLY=($(compgen -W "last peak exit" -- "$cur")); return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(_heapsnap_options "$prog")" -- "$cur"))
	else
		COMPREPLY=($(compgen -f -X '!*.hsnap' -- "$cur") $(compgen -d -- "$cur"))
	fi
}

_heapsnap_record() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]} prog=${COMP_WORDS[0]} i

	COMPREPLY=()
	# After "--", the command and its arguments.
	for ((i = 1; i < COMP_CWORD; i++)); do
		if [ "${COMP_WORDS[i]}" = -- ]; then
			if declare -F _command_offset >/dev/null; then
				_command_offset $((i + 1))
			else
				COMPREPLY=($(compgen -c -- "$cur"))
			fi
			return
		fi
	done
	case $prev in
	-p | --pid) COMPREPLY=($(compgen -W "$(ps -eo pid= 2>/dev/null)" -- "$cur")); return ;;
	-o | --output | --libc) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	--stack) COMPREPLY=($(compgen -W "auto fp dwarf dwarf= none" -- "$cur")); return ;;
	--via) COMPREPLY=($(compgen -W "auto preload inject bpf" -- "$cur")); return ;;
	--probe-links) COMPREPLY=($(compgen -W "auto session multi perf" -- "$cur")); return ;;
	esac
	COMPREPLY=($(compgen -W "$(_heapsnap_options "$prog") --" -- "$cur"))
}

complete -F _heapsnap_analyze heapsnap-analyze
complete -F _heapsnap_record heapsnap-record
