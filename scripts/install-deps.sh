#!/usr/bin/env bash
# Installs every build and test dependency of heapsnap with apt-get (Debian/Ubuntu).
# Idempotent: when everything is present it only runs dpkg-query and looks for speedscope.
set -euo pipefail

PKGS=(make gcc g++ clang llvm pkg-config bpftool libbpf-dev libelf-dev libdw-dev libdebuginfod-dev
      libprotobuf-c-dev protobuf-c-compiler libzstd-dev zlib1g-dev libiberty-dev libncurses-dev libcurl4-openssl-dev golang-go time util-linux python3 python3-venv sqlite3
      libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0 libc6-dbg libclang-rt-dev heaptrack valgrind binutils
      graphviz man-db chromium fonts-dejavu-core
      redis-server redis-tools nginx-light memcached libpython3.11-testsuite nodejs apache2-utils
      ripgrep postgresql postgresql-15 postgresql-contrib git gdb tmux)

missing=()
for p in "${PKGS[@]}"; do
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$st" = installed ] || missing+=("$p")
done
# A Rust toolchain from rustup counts; otherwise Debian's rustc is installed.
if ! command -v rustc >/dev/null 2>&1; then
	missing+=(rustc)
fi
# npm from nodejs's own packages counts (they conflict with Debian's npm).
if ! command -v npm >/dev/null 2>&1; then
	missing+=(npm)
fi

if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		SUDO=sudo
	else
		SUDO=
	fi
	echo "install-deps: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	$SUDO apt-get update -qq
	$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# speedscope from npm (a pinned version, for the user, not system-wide): the test that our
# speedscope output opens in speedscope itself loads its page in Chromium.
SPEEDSCOPE_PREFIX=${HEAPSNAP_NPM_PREFIX:-$HOME/.cache/heapsnap/npm}
if [ ! -f "$SPEEDSCOPE_PREFIX/node_modules/speedscope/dist/release/index.html" ]; then
	echo "install-deps: installing speedscope 1.25.0 from npm into $SPEEDSCOPE_PREFIX" >&2
	mkdir -p "$SPEEDSCOPE_PREFIX"
	npm install --prefix "$SPEEDSCOPE_PREFIX" --no-audit --no-fund --loglevel=error speedscope@1.25.0 >/dev/null
fi

# memray from PyPI, pinned, in a virtual environment of Debian's python3 (scripts/py-venv.sh):
# beside heapsnap in bench/python.sh, the second oracle of tests/python_memray.sh. Without it
# the bench leaves memray's rows out and the test skips, saying why.
scripts_dir=$(dirname "$0")
"$scripts_dir/py-venv.sh" >/dev/null || echo "install-deps: no memray venv (scripts/py-venv.sh failed): its bench rows and test are left out" >&2
