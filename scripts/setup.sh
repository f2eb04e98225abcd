#!/usr/bin/env bash
# Install the Debian packages topaz needs to build, run, test and benchmark,
# when they are missing; do nothing when they are all there.
set -euo pipefail
packages=(
	build-essential binutils git python3	# toolchain, test scripts
	gnu-efi				# crt0, relocator, EFI headers
	ovmf qemu-system-x86 mtools	# firmware, emulator, ESP images
	libcmocka-dev			# host test framework
	libelf-dev			# symbols in the hosted build and the decoder
	libipt-dev			# Intel's PT encoder/decoder
	zlib1g-dev			# ptdecode's CRC-32, the writer's cross-check
	libcapstone-dev			# instruction cross-checks
	libdw-dev			# DWARF line tables: ptdecode --coverage's lcov output
	lcov				# genhtml: the coverage report's HTML
	linux-perf			# perf's Intel PT decoder: the perf.data cross-check
	clang				# libFuzzer harnesses (make fuzz)
	gdb				# make debug (scripts/topaz-gdb.py)
	valgrind libmimalloc-dev libjemalloc-dev	# benchmarks
)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} = 0 ] && exit 0
echo "setup: installing ${missing[*]}"
sudo=()
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
	sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q "${missing[@]}"
