#!/usr/bin/env python3
# The fuzz files topaz sent through QEMU's debug console (boot/firmware/fw_fuzz_io.c),
# each record
#   "\n@TPZ-FUZZ-FILE 1 TARGET DIR NAME SIZE\n" SIZE bytes "\n@TPZ-FUZZ-END NAME\n"
# written to OUT/DIR/NAME (DIR: corpus or crashes; NAME: the bytes' SHA-1, crash-SHA1),
# libFuzzer's layout; a crash's trace is crash-SHA1.tpz beside it, a trace container
# (include/topaz/trace_format.h) checked record by record (its CRCs, the trailer last)
# since its name is its input's. A record whose bytes do not match their name, or cut
# short (the boot ended inside it), is named and skipped; the exit status is then 1.
#   fuzz-files.py DEBUGCON_FILE OUT [--target NAME]
import hashlib
import os
import re
import struct
import sys
import zlib

HEAD = b"\n@TPZ-FUZZ-FILE "
LINE = re.compile(rb"1 ([A-Za-z0-9_.-]+) (corpus|crashes) ((?:crash-)?[0-9a-f]{40}(?:\.tpz)?) ([0-9]+)\n")
TPZ_REC_MAGIC, TPZ_REC_TRAILER = 0x525A5054, 4


def container_problem(body):
    """None for a whole trace container, else what is wrong with it (the first problem)."""
    off = 0
    while off + 24 <= len(body):
        magic, typ, _, size, seq, body_crc, hdr_crc = struct.unpack_from("<IHHIIII", body, off)
        if magic != TPZ_REC_MAGIC or zlib.crc32(body[off:off + 20]) != hdr_crc:
            return f"record {seq} at byte {off}: not a record header (magic or CRC)"
        if size < 24 or off + size > len(body):
            return f"record {seq} at byte {off}: {size} bytes, past the file's end"
        if zlib.crc32(body[off + 24:off + size]) != body_crc:
            return f"record {seq} at byte {off}: its bytes' CRC is wrong"
        off += size
        if typ == TPZ_REC_TRAILER:
            return None if off == len(body) else f"{len(body) - off} bytes after the trailer"
    return "no trailer: the container ends early"


def extract(data, out, target=None):
    """Yields (kind, name, new) for each good record; raises nothing, returns the errors."""
    errors, files, at = [], [], 0
    while True:
        at = data.find(HEAD, at)
        if at < 0:
            break
        m = LINE.match(data, at + len(HEAD))
        if not m:
            errors.append(f"byte {at}: a @TPZ-FUZZ-FILE line that does not parse")
            at += len(HEAD)
            continue
        tgt, kind, name, size = m.group(1).decode(), m.group(2).decode(), m.group(3).decode(), int(m.group(4))
        start = m.end()
        body = data[start:start + size]
        end = b"\n@TPZ-FUZZ-END " + name.encode() + b"\n"
        if len(body) < size or data[start + size:start + size + len(end)] != end:
            errors.append(f"byte {at}: {kind}/{name} ({size} bytes) cut short: the boot ended inside it")
            at = start
            continue
        at = start + size + len(end)
        if target and tgt != target:
            continue
        if name.endswith(".tpz"):
            problem = container_problem(body) if name.startswith("crash-") and kind == "crashes" \
                else "a trace is a crash's, crashes/crash-SHA1.tpz"
            if problem:
                errors.append(f"byte {at}: {kind}/{name}: not a whole trace container: {problem}")
                continue
        elif hashlib.sha1(body).hexdigest() != name.removeprefix("crash-"):
            errors.append(f"byte {at}: {kind}/{name}: its bytes' SHA-1 is {hashlib.sha1(body).hexdigest()}")
            continue
        os.makedirs(os.path.join(out, kind), exist_ok=True)
        path = os.path.join(out, kind, name)
        new = not os.path.exists(path)
        with open(path, "wb") as f:
            f.write(body)
        files.append((kind, name, new))
    return files, errors


def main():
    args = sys.argv[1:]
    target = None
    if "--target" in args:
        i = args.index("--target")
        target = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        print("usage: fuzz-files.py DEBUGCON_FILE OUT [--target NAME]", file=sys.stderr)
        return 2
    try:
        with open(args[0], "rb") as f:
            data = f.read()
    except OSError as e:
        print(f"fuzz-files: {args[0]}: {e.strerror}", file=sys.stderr)
        return 2
    files, errors = extract(data, args[1], target)
    for e in errors:
        print(f"fuzz-files: {args[0]}: {e}", file=sys.stderr)
    for kind in ("corpus", "crashes"):
        got = [f for f in files if f[0] == kind]
        if got:
            print(f"fuzz-files: {len(got)} {kind} file(s) into {os.path.join(args[1], kind)}/ "
                  f"({sum(1 for f in got if f[2])} new)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
