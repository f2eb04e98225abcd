#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Linux perf on the perf.data exports of a corpus of containers (the
# fuzz_perfdata harness's: the committed one in make test, the fuzzed one
# after make fuzz). The harness checks the file's structure; this runs the
# real reader:
#
#   tests/fuzz/perf_corpus.sh PTDECODE CORPUS_DIR [NAME]
#
# Each container is exported (ptdecode --perf-data, no ELF: the code is the
# sideband images); where ptdecode writes a perf.data, `perf script
# --itrace=i1i` must decode it without a signal, without "failed to
# process" and with exit status 0. An export ptdecode refuses (with its
# reason) is no failure. One line: "PASS NAME: ..." or "FAIL NAME: ..."
# (tests/run-all.sh counts it), each failing input above it; exit status 1
# on a failure.
set -uo pipefail
ptdecode=${1:?usage: perf_corpus.sh PTDECODE CORPUS_DIR [NAME]}
corpus=${2:?CORPUS_DIR}
name=${3:-perf-corpus.$(basename "$corpus")}
# a perf that hangs on an input is a failure too
limit=${PERF_CORPUS_TIMEOUT:-30}

if [ ! -x "$ptdecode" ]; then echo "FAIL $name: $ptdecode is not built"; exit 1; fi
if ! command -v perf >/dev/null; then echo "FAIL $name: no perf (linux-perf: scripts/setup.sh)"; exit 1; fi
if [ ! -d "$corpus" ]; then echo "FAIL $name: no corpus $corpus"; exit 1; fi
tmp=$(mktemp -d /tmp/perf-corpus.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT

# Each file of CORPUS to OUT/ under the same name, both CRCs of its records
# recomputed (walking record sizes from 0, as fuzz_reseal.h): the harness
# reseals what it parses, so this does too, or ptdecode would refuse most
# fuzzed inputs for their CRCs. One python for all: a few seconds saved.
reseal_all() {
	python3 - "$1" "$2" <<'EOF'
import os, struct, sys, zlib
src, dst = sys.argv[1], sys.argv[2]
for name in sorted(os.listdir(src)):
    if not os.path.isfile(os.path.join(src, name)):
        continue
    d = bytearray(open(os.path.join(src, name), 'rb').read())
    off = 0
    while off + 24 <= len(d):
        magic, _, body, size = struct.unpack_from('<IHHI', d, off)
        if magic != 0x525a5054 or size < 24 + body or size > len(d) - off:
            off += 1
            continue
        struct.pack_into('<I', d, off + 16, zlib.crc32(d[off + 24:off + size]))
        struct.pack_into('<I', d, off + 20, zlib.crc32(d[off:off + 20]))
        off += size
    open(os.path.join(dst, name), 'wb').write(d)
EOF
}

mkdir "$tmp/in"
reseal_all "$corpus" "$tmp/in" || { echo "FAIL $name: cannot read $corpus"; exit 1; }
n=0 decoded=0 refused=0 bad=0 first=""
for f in "$tmp/in"/*; do
	[ -f "$f" ] || continue
	n=$((n + 1))
	rm -rf "$tmp/out"
	mkdir "$tmp/out"
	"$ptdecode" -q --perf-data "$tmp/out/perf.data" "$f" >/dev/null 2>&1
	if [ ! -s "$tmp/out/perf.data" ]; then
		refused=$((refused + 1))
		continue
	fi
	# (its status through a command substitution: no "Segmentation fault" line
	# from this shell)
	rc=$(timeout -s KILL "$limit" perf script -i "$tmp/out/perf.data" --itrace=i1i -F ip \
		>/dev/null 2>"$tmp/out/stderr"; echo $?)
	why=""
	# 128 + a signal's number (perf's own statuses go higher: 234 is -EINVAL)
	if [ $rc = 137 ]; then
		why="perf ran past ${limit}s"
	elif [ $rc -gt 128 ] && [ $rc -le 192 ]; then
		why="perf died of signal $((rc - 128)) ($(kill -l $((rc - 128)) 2>/dev/null))"
	elif grep -q "failed to process" "$tmp/out/stderr"; then
		why="perf: $(grep -m1 "failed to process" "$tmp/out/stderr")"
	elif [ $rc != 0 ]; then
		why="perf exited $rc: $(grep -v '^ *$' "$tmp/out/stderr" | head -n 1)"
	fi
	if [ -n "$why" ]; then
		bad=$((bad + 1))
		echo "  $(basename "$f"): $why"
		[ -n "$first" ] || first="$(basename "$f"): $why"
	else
		decoded=$((decoded + 1))
	fi
done

if [ $n = 0 ]; then
	echo "FAIL $name: no input in $corpus"
	exit 1
fi
if [ $bad != 0 ]; then
	echo "FAIL $name: perf could not take $bad of $n exports, first $first"
	exit 1
fi
echo "PASS $name: perf decoded $decoded exports of $n inputs ($refused refused by ptdecode)"
