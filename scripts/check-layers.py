#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check-layers.py: the map's rules (docs/layers.rules) against the tree.

    scripts/check-layers.py [--root DIR] [--objects DIR] [--rules FILE]
    scripts/check-layers.py --self-test [--root DIR] [--objects DIR]

Every source file of the kernel (boot/, kernel/, drivers/, mm/, arch/, lib/)
belongs to a unit: the longest folder the rules name that holds it. Two
things are checked against what each unit may use:

  - includes: a public header (include/topaz/NAME.h) belongs to the unit the
    rules give it ("header" lines; the others are shared by all); a unit
    includes another's header only when it may use that unit. A header beside
    the sources (a unit's internals) is included from its own unit only.
  - calls (with --objects, the kernel's objects, build/k): every symbol an
    object uses that another unit's object defines is an edge between the
    two units; it must be allowed, and where the rule lists symbols ("only"),
    be one of them.

Prints one line per violation (the file, what it uses, and the rule that is
missing) and exits 1 when there is any, 0 when none, 2 on a bad rules file.
--self-test copies the tree, adds a forbidden include (and, with --objects,
a forbidden call), and requires the check to name each: exit 0 when it did.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

SRC_DIRS = ("boot", "kernel", "drivers", "mm", "arch", "lib")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


class Rules:
    def __init__(self, path):
        self.path = path
        self.units = []          # folders, longest first
        self.headers = {}        # include/topaz name -> unit
        self.may = {}            # unit -> {target unit: set of symbols, or None for any}
        self.base = set()        # units every unit may use
        for n, line in enumerate(open(path), 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            kind, rest = words[0], words[1:]
            where = f"{path}:{n}"
            if kind == "unit" and len(rest) == 1:
                self.units.append(rest[0].rstrip("/"))
            elif kind == "base":
                self.base.update(rest)
            elif kind == "header" and len(rest) >= 2:
                for h in rest[1:]:
                    self.headers[h] = rest[0]
            elif kind == "may" and len(rest) >= 2:
                src, tgt, syms = rest[0], rest[1], rest[2:]
                if syms and syms[0] != "only":
                    raise SystemExit(f"{where}: 'may UNIT TARGET [only SYM...]', not '{line.strip()}'")
                self.may.setdefault(src, {})[tgt] = set(syms[1:]) if syms else None
            else:
                raise SystemExit(f"{where}: cannot read '{line.strip()}' (unit, base, header or may)")
        known = set(self.units)
        for u in [*self.base, *self.headers.values(), *self.may,
                  *(t for m in self.may.values() for t in m)]:
            if u not in known:
                raise SystemExit(f"{path}: '{u}' is not a unit (no 'unit {u}' line)")
        self.units.sort(key=len, reverse=True)

    def unit_of(self, rel):
        for u in self.units:
            if rel == u or rel.startswith(u + "/"):
                return u
        return None

    def allowed(self, src, tgt, sym=None):
        """None when SRC may use TGT (through SYM), else the reason."""
        if src == tgt or tgt in self.base:
            return None
        rule = self.may.get(src, {})
        if tgt not in rule:
            return f"{src} may not use {tgt} (no 'may {src} {tgt}')"
        if sym is not None and rule[tgt] is not None and sym not in rule[tgt]:
            return f"{src} may use only {', '.join(sorted(rule[tgt]))} of {tgt}"
        return None


def sources(root):
    for top in SRC_DIRS:
        for dp, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if f.endswith((".c", ".h", ".S")):
                    yield os.path.relpath(os.path.join(dp, f), root)


def check_includes(root, rules):
    bad = []
    for rel in sorted(sources(root)):
        unit = rules.unit_of(rel)
        if unit is None:
            bad.append(f"{rel}: in no unit of {rules.path} (add a 'unit' line)")
            continue
        for n, line in enumerate(open(os.path.join(root, rel), errors="replace"), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            kind, name = m.groups()
            if kind == "<":
                if not name.startswith("topaz/"):
                    continue
                owner = rules.headers.get(name[len("topaz/"):])
                if owner is None:
                    continue
                why = rules.allowed(unit, owner)
                if why:
                    bad.append(f"{rel}:{n}: includes <{name}> ({owner}'s header): {why}")
            else:
                path = os.path.normpath(os.path.join(os.path.dirname(rel), name))
                if path.startswith("include/"):
                    continue
                owner = rules.unit_of(path)
                if owner is not None and owner != unit:
                    bad.append(f"{rel}:{n}: includes \"{name}\", an internal header of {owner}: "
                               f"only {owner} includes it (give {unit} a public header's function)")
    return bad


def object_symbols(paths):
    """{path: (symbols defined, symbols used)} of the objects, from one nm run."""
    syms = {p: (set(), set()) for p in paths}
    out = subprocess.run(["nm", "-A", *paths], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        path, _, rest = line.partition(": ") if ": " in line else line.partition(":")
        parts = rest.split()
        if path not in syms:
            continue
        defined, used = syms[path]
        if len(parts) == 3 and parts[1] in "TDBRGSV" and parts[1].isupper():
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
    return syms


def check_calls(objdir, rules):
    paths = {}
    for dp, _, files in os.walk(objdir):
        for f in files:
            if f.endswith(".o"):
                rel = os.path.relpath(os.path.join(dp, f), objdir)[:-2]	# drivers/pt/pt.c
                if rel.split("/", 1)[0] in SRC_DIRS:
                    paths[os.path.join(dp, f)] = rel
    syms = object_symbols(sorted(paths)) if paths else {}
    objs = {rel: syms[p] for p, rel in paths.items()}
    if not objs:
        return [f"{objdir}: no kernel objects (make kernel first)"]
    owner = {}
    for rel, (defined, _) in objs.items():
        for s in defined:
            owner[s] = rel
    bad = []
    for rel in sorted(objs):
        unit = rules.unit_of(rel)
        if unit is None:
            bad.append(f"{rel}: in no unit of {rules.path} (add a 'unit' line)")
            continue
        for s in sorted(objs[rel][1]):
            if s not in owner:
                continue
            tgt = rules.unit_of(owner[s])
            why = rules.allowed(unit, tgt, s) if tgt else None
            if why:
                bad.append(f"{rel}: calls {s} ({owner[s]}): {why}")
    return bad


def self_test(root, rules_path, objdir):
    """The check must name a forbidden include (and call) added to a copy."""
    rules = Rules(rules_path)
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for top in SRC_DIRS + ("include",):
            if os.path.isdir(os.path.join(root, top)):
                shutil.copytree(os.path.join(root, top), os.path.join(tmp, top))
        # a unit that may not use another includes that one's header: the
        # driver including the trace unit's (it must not tell the model from
        # silicon) when the rules forbid that, else the first such pair
        pairs = [(u, h, o) for u in rules.units for h, o in sorted(rules.headers.items())
                 if rules.allowed(u, o) and os.path.isdir(os.path.join(tmp, u))
                 and any(f.endswith(".c") for f in os.listdir(os.path.join(tmp, u)))]
        pair = next((p for p in pairs if p[:2] == ("drivers/pt", "pt_model.h")), pairs[0] if pairs else None)
        if pair is None:
            print("FAIL layers.self-test: the rules forbid nothing to try")
            return 1
        unit, header, owner = pair
        victim = sorted(f for f in os.listdir(os.path.join(tmp, unit)) if f.endswith(".c"))[0]
        before = check_includes(tmp, rules)
        with open(os.path.join(tmp, unit, victim), "a") as f:
            f.write(f"\n#include <topaz/{header}>\n")
        after = check_includes(tmp, rules)
        added = [b for b in after if b not in before and b.startswith(f"{unit}/{victim}:")
                 and f"<topaz/{header}>" in b]
        if not added:
            print(f"FAIL layers.self-test-include: {unit}/{victim} including <topaz/{header}> "
                  f"({owner}'s) was not named")
            ok = False
        else:
            print(f"PASS layers.self-test-include: an added #include <topaz/{header}> in {unit}/{victim}"
                  f" is named: {added[0].split(': ', 1)[1]}")
        if objdir:
            # a unit calls a symbol of a unit it may not use: one more object
            mine = [os.path.join(dp, f) for dp, _, files in os.walk(objdir) for f in files
                    if f.endswith(".o") and os.path.relpath(dp, objdir).startswith(owner)]
            defined = set()
            for d, _ in (object_symbols(mine).values() if mine else ()):
                defined |= d
            target = sorted(s for s in defined if not s.startswith("_"))[:1]
            objcopy = os.path.join(tmp, "objects")
            shutil.copytree(objdir, objcopy, ignore=shutil.ignore_patterns("*.d"))
            src = os.path.join(tmp, "call.c")
            with open(src, "w") as f:
                f.write(f"extern void {target[0]}(void);\nvoid layers_self_test(void) {{ {target[0]}(); }}\n")
            obj = os.path.join(objcopy, unit, "zz_layers_self_test.c.o")
            os.makedirs(os.path.dirname(obj), exist_ok=True)
            subprocess.run(["cc", "-c", src, "-o", obj], check=True)
            after = check_calls(objcopy, rules)
            added = [b for b in after if "zz_layers_self_test" in b and target[0] in b]
            if added:
                print(f"PASS layers.self-test-call: an added call of {target[0]} ({owner}) from {unit} is named")
            else:
                print(f"FAIL layers.self-test-call: a call of {target[0]} ({owner}) from {unit} was not named")
                ok = False
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--root", default=here)
    ap.add_argument("--rules", default=None, help="default: ROOT/docs/layers.rules")
    ap.add_argument("--objects", help="the kernel's objects (build/k): check calls too")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    rules_path = a.rules or os.path.join(a.root, "docs", "layers.rules")
    try:
        rules = Rules(rules_path)
    except SystemExit as e:
        print(f"FAIL layers: {e}")
        return 2
    if a.self_test:
        return self_test(a.root, rules_path, a.objects)
    bad = check_includes(a.root, rules)
    n_inc = len(bad)
    print(f"{'PASS' if not bad else 'FAIL'} layers.includes: "
          f"{'every include as ' + rules_path + ' allows' if not bad else str(n_inc) + ' not allowed'}")
    if a.objects:
        calls = check_calls(a.objects, rules)
        print(f"{'PASS' if not calls else 'FAIL'} layers.calls: "
              f"{'every call between units as the rules allow' if not calls else str(len(calls)) + ' not allowed'}")
        bad += calls
    for b in bad:
        print(f"  {b}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
