# gdb -x scripts/topaz-gdb.py: attach to `make debug`'s QEMU and load topaz's
# symbols where the firmware loaded it, so `hbreak work_sort` just works.
#
# make debug starts QEMU halted (-S) with its gdb stub on GDBPORT and topaz's
# command line ending in kgdbwait. This script connects, lets the firmware
# run until topaz prints "loaded at ADDR: waiting for gdb" in the serial log,
# stops it there (as Ctrl-C would), loads build/topaz.so at ADDR (topaz.so is
# linked at 0: ADDR is its ImageBase) and sets kgdb_connected, so topaz goes
# on at the next `continue`. Then:
#   (gdb) hbreak work_sort
#   (gdb) continue
# Settings, from the environment (make debug's defaults):
#   TOPAZ_GDB_PORT   the stub's TCP port (1234)
#   TOPAZ_DEBUG_LOG  the serial log make debug writes (build/debug.log)
#   TOPAZ_BUILD      the build folder holding topaz.so (build)
import os
import re
import signal
import threading
import time

import gdb

try:
    _root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
except NameError:
    _root = os.getcwd()
BUILD = os.environ.get("TOPAZ_BUILD", os.path.join(_root, "build"))
PORT = os.environ.get("TOPAZ_GDB_PORT", "1234")
LOG = os.environ.get("TOPAZ_DEBUG_LOG", os.path.join(BUILD, "debug.log"))
WAIT_S = float(os.environ.get("TOPAZ_GDB_WAIT", "300"))
LOADED = re.compile(rb"topaz: loaded at (0x[0-9a-f]+): waiting for gdb")


def connect():
    """target remote, retried while QEMU starts listening."""
    deadline = time.time() + 30
    while True:
        try:
            gdb.execute("target remote localhost:%s" % PORT)
            return
        except gdb.error as e:
            if time.time() > deadline:
                raise gdb.GdbError("topaz-gdb: no gdb stub on localhost:%s (is `make debug` "
                                   "running, with GDBPORT=%s?): %s" % (PORT, PORT, e))
            time.sleep(0.5)


def log_base():
    try:
        with open(LOG, "rb") as f:
            m = LOADED.search(f.read())
    except OSError:
        return None
    return m.group(1).decode() if m else None


found = {}


def watch_log():
    """Stop the target (SIGINT to gdb: its Ctrl-C) once topaz waits for us."""
    deadline = time.time() + WAIT_S
    while time.time() < deadline and not found.get("base"):
        found["base"] = log_base()
        if not found["base"]:
            time.sleep(0.2)
    os.kill(os.getpid(), signal.SIGINT)


gdb.execute("set confirm off")
gdb.execute("set pagination off")
connect()
if not log_base():
    threading.Thread(target=watch_log, daemon=True).start()
    gdb.execute("continue")
base = log_base()
if not base:
    raise gdb.GdbError("topaz-gdb: %s has no 'loaded at ADDR: waiting for gdb' after %d s: "
                       "was topaz booted with kgdbwait (make debug adds it)?" % (LOG, WAIT_S))
gdb.execute("add-symbol-file %s -o %s" % (os.path.join(BUILD, "topaz.so"), base))
gdb.execute("set var kgdb_connected = 1")
print("topaz-gdb: topaz.so loaded at %s; topaz goes on at `continue` (hbreak work_sort, then continue)"
      % base)
