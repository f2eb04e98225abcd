#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Wait for a line in a guest's serial log, then give QEMU's monitor commands.

    qemu_sync.py --monitor SOCK --log FILE --marker TEXT [--cmd 'log exec'] ... [--timeout S]

The fidelity oracle's firmware configurations: QEMU's log cannot run from the
boot (the firmware runs gigabytes of logged code before topaz starts), so
topaz (fw.oracle) prints a marker and waits for a key; this switches the log
on ("log ITEMS") and presses the key ("sendkey ret"). Exit status 0 when the
commands were sent, 1 when the marker never came.
"""
import argparse
import socket
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument('--monitor', required=True, help="QEMU's monitor (a unix socket, readline mode)")
ap.add_argument('--log', required=True, help="the guest's serial log")
ap.add_argument('--marker', required=True)
ap.add_argument('--cmd', action='append', default=[])
ap.add_argument('--timeout', type=float, default=300)
a = ap.parse_args()
marker = a.marker.encode()
t0 = time.time()
while True:
    try:
        with open(a.log, 'rb') as f:
            if marker in f.read():
                break
    except OSError:
        pass
    if time.time() - t0 > a.timeout:
        sys.exit(f'qemu_sync: no "{a.marker}" in {a.log} within {a.timeout:.0f} s')
    time.sleep(0.1)
s = socket.socket(socket.AF_UNIX)
s.connect(a.monitor)
s.settimeout(0.2)
for c in a.cmd:
    s.sendall(c.encode() + b'\n')
    time.sleep(0.3)	# the monitor reads a line at a time
    try:
        s.recv(65536)
    except OSError:
        pass
s.close()
