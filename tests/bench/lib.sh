# shellcheck shell=bash
# Sourced by the trace speed benches (trace_speed.sh, fw_speed.sh): the
# build booted, a scratch folder, a boot and a median.
set -uo pipefail
build=${1:-build}
export BUILD=$build	# boot.sh boots this build
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
boot() { "$here/tests/qemu/boot.sh" --timeout 600 "$@" >/dev/null 2>&1; }
median() { sort -g | awk '{ v[NR] = $1 } END { print NR ? (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) : 0 }'; }
