#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The coverage decoder sees a one-bit change of a real trace.

Flips one not-taken TNT bit to taken in a QEMU case's container (each of
--flips TNT packets spread over the trace in turn, one flip per copy),
re-seals the record's CRCs so the container reads as intact, and runs
`ptdecode --coverage-check` on each copy: the coverage decoder's result
(blocks, edges, entries, bitmap digest) must differ from the original's.
Whether it still agrees with libipt on the damaged trace is printed, not
required: past a bit that does not fit the code, each decoder gives up the
flow its own way until the next PSB.

Prints one "PASS NAME" or "FAIL NAME: why" line.
"""
import argparse
import re
import struct
import subprocess
import sys
import tempfile
import zlib

REC = struct.Struct("<IHHIIII")	# magic, type, body_size, size, seq, body_crc, hdr_crc
TRACE_BODY = struct.Struct("<IIQQQII")	# cpu, flags, offset, lost, tsc, data_size, reserved
MAGIC = 0x525A5054
REC_TRACE = 2


def trace_records(data):
    """(file offset of the payload, cpu, stream offset, size, record offset) of each TRACE record."""
    off = 0
    while off + REC.size <= len(data):
        magic, typ, body_size, size, _, _, _ = REC.unpack_from(data, off)
        if magic != MAGIC or size < REC.size + body_size or off + size > len(data):
            raise ValueError(f"no record at file offset {off:#x}")
        if typ == REC_TRACE:
            cpu, _, soff, _, _, dsize, _ = TRACE_BODY.unpack_from(data, off + REC.size)
            yield off + REC.size + body_size, cpu, soff, dsize, off
        off += size


def reseal(data, rec_off):
    """Both CRCs of the record at rec_off again, as the writer computes them."""
    magic, typ, body_size, size, seq, _, _ = REC.unpack_from(data, rec_off)
    body_crc = zlib.crc32(bytes(data[rec_off + REC.size:rec_off + size]))
    head = struct.pack("<IHHIII", magic, typ, body_size, size, seq, body_crc)
    REC.pack_into(data, rec_off, magic, typ, body_size, size, seq, body_crc, zlib.crc32(head))


def tnt_packets(ptdecode, tpz):
    """(cpu, stream offset, kind, bits oldest first) of each TNT packet with a not-taken bit."""
    out = subprocess.run([ptdecode, "--packets", tpz], capture_output=True, text=True).stdout
    cpu = 0
    for line in out.splitlines():
        m = re.match(r"# cpu (\d+), segment", line)
        if m:
            cpu = int(m.group(1))
            continue
        m = re.match(r"([0-9a-f]{16})  (tnt\.8|tnt\.64) +([!.]+)$", line)
        if m and "." in m.group(3):
            yield cpu, int(m.group(1), 16), m.group(2), m.group(3)


def flip(data, cpu, soff, kind, bits):
    """Turn the packet's oldest not-taken bit to taken; the record re-sealed."""
    for payload, rcpu, start, size, rec_off in trace_records(data):
        if rcpu != cpu or not start <= soff < start + size:
            continue
        at = payload + soff - start
        # bits are shown oldest first; the oldest is the highest below the stop bit
        k = len(bits) - 1 - bits.index(".")
        if kind == "tnt.8":
            byte, bit = at, k + 1	# bit 0 is the header's
        else:
            byte, bit = at + 2 + k // 8, k % 8	# 02 a3, then 6 bytes of results
        if byte >= payload + size:
            return False	# the packet goes on in the next record: leave it
        assert not data[byte] & (1 << bit)
        data[byte] |= 1 << bit
        reseal(data, rec_off)
        return True
    return False


def coverage(ptdecode, elf, tpz):
    """ptdecode --coverage-check's result line as a dict (empty if none)."""
    out = subprocess.run([ptdecode, "--elf", elf, "--coverage-check", tpz],
                         capture_output=True, text=True).stdout
    m = re.search(r"^result: coverage-check (.*)$", out, re.M)
    return dict(kv.split("=", 1) for kv in m.group(1).split()) if m else {}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", required=True)
    ap.add_argument("--flips", type=int, default=5)
    ap.add_argument("ptdecode")
    ap.add_argument("elf")
    ap.add_argument("container")
    a = ap.parse_args()
    with open(a.container, "rb") as f:
        orig = f.read()
    base = coverage(a.ptdecode, a.elf, a.container)
    if base.get("match") != "yes":
        print(f"FAIL {a.name}: the unchanged container does not check out: {base or 'no result'}")
        return 1
    pkts = list(tnt_packets(a.ptdecode, a.container))
    if not pkts:
        print(f"FAIL {a.name}: no TNT packet with a not-taken bit")
        return 1
    keys = ("blocks", "edges", "transitions", "digest")
    ref_keys = ("ref_blocks", "ref_edges", "ref_transitions")
    bad, agree, tried, unseen = [], 0, 0, 0
    for i in range(a.flips):
        cpu, soff, kind, bits = pkts[(2 * i + 1) * len(pkts) // (2 * a.flips)]
        data = bytearray(orig)
        if not flip(data, cpu, soff, kind, bits):
            continue
        tried += 1
        with tempfile.NamedTemporaryFile(suffix=".tpz") as t:
            t.write(data)
            t.flush()
            got = coverage(a.ptdecode, a.elf, t.name)
        what = f"cpu {cpu} {kind} at stream offset {soff:#x}"
        if not got:
            bad.append(f"{what}: no result")
        elif all(got[k] == base[k] for k in keys):
            if got.get("match") == "yes" and all(got[k] == base[k] for k in ref_keys):
                # libipt sees no other flow either: a JCC whose target is
                # the next instruction goes to one block either way
                unseen += 1
            else:
                bad.append(f"{what}: the same coverage ({', '.join(f'{k}={got[k]}' for k in keys)})")
        agree += got.get("match") == "yes"
        print(f"  {what}: " + " ".join(f"{k}={got.get(k, '?')}" for k in keys + ("match",)))
    if tried == unseen:
        print(f"FAIL {a.name}: no TNT bit could be flipped that changes the flow")
        return 1
    if bad:
        print(f"FAIL {a.name}: a flipped TNT bit left the coverage as it was: {'; '.join(bad)}")
        return 1
    print(f"  (libipt agrees with the coverage decoder on {agree} of {tried} damaged traces;"
          f" {unseen} flips changed neither's coverage)")
    print(f"PASS {a.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
