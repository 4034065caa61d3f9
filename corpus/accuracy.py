#!/usr/bin/env python3
"""scan's accuracy on real operators: fetches the published crates of corpus/crates.tsv from crates.io (checked
against the index's sha256), scans each with kubectl-ctrlaudit, and scores the findings against
corpus/labels.tsv: precision and recall per rule and overall, then every finding not yet labelled (in the labels
file's format, to review and paste), every finding labelled false, and every labelled true case that was missed.

Usage: corpus/run.sh [--bin PATH] [--dir DIR] [--min-severity info|warning|error]
No third-party code is stored in this repository: the crates go to DIR (default /tmp/ctrlaudit-corpus).
"""

import argparse
import collections
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tomllib
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SEVERITY = {"info": 0, "warning": 1, "error": 2}


def read_tsv(path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line and not line.startswith("#"):
                yield line.split("\t")


def index_path(name):
    n = name.lower()
    if len(n) <= 2:
        return f"{len(n)}/{n}"
    if len(n) == 3:
        return f"3/{n[0]}/{n}"
    return f"{n[:2]}/{n[2:4]}/{n}"


def fetch(name, version, sha256, root):
    """Unpacks name-version under root once; the archive must match the index's checksum."""
    dest = os.path.join(root, f"{name}-{version}")
    if os.path.isdir(dest):
        return dest
    url = f"https://static.crates.io/crates/{name}/{name}-{version}.crate"
    with urllib.request.urlopen(url, timeout=60) as r:
        data = r.read()
    got = hashlib.sha256(data).hexdigest()
    if got != sha256:
        sys.exit(f"{name}-{version}: sha256 {got} does not match the index's {sha256}")
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as t:
        t.extractall(root, filter="data")
    return dest


KUBE_CRATES = {"kube", "kube-runtime", "kube-client", "kube-core"}


def fetch_kube_dependencies(crate_dir, name, registry):
    """Fetches, as `cargo fetch` would into Cargo's registry cache, the direct dependencies of the crate that use
    kube themselves (from its Cargo.lock, checked against the lock's checksums): scan reads their source to
    follow calls into them. Returns how many there are."""
    lock_path = os.path.join(crate_dir, "Cargo.lock")
    if not os.path.isfile(lock_path):
        return 0
    with open(lock_path, "rb") as f:
        lock = tomllib.load(f)
    packages = {}
    for p in lock.get("package", []):
        packages.setdefault(p["name"], p)
    me = packages.get(name)
    if me is None:
        return 0
    n = 0
    for dep in me.get("dependencies", []):
        p = packages.get(dep.split(" ")[0])
        if (p is None or p["name"] in KUBE_CRATES or "checksum" not in p
                or not KUBE_CRATES & {d.split(" ")[0] for d in p.get("dependencies", [])}):
            continue
        fetch(p["name"], p["version"], p["checksum"], registry)
        n += 1
    return n


def scan(binary, crate_dir, cargo_home):
    out = subprocess.run(
        [binary, "scan", crate_dir, "-o", "json", "--fail-on", "never"],
        capture_output=True,
        text=True,
        check=False,
        # Only the dependencies fetched for the corpus, never whatever this machine's cache holds.
        env={**os.environ, "CARGO_HOME": cargo_home},
    )
    if out.returncode != 0:
        sys.exit(f"scan of {crate_dir} exited {out.returncode}: {out.stderr}")
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default="target/release/kubectl-ctrlaudit")
    ap.add_argument("--dir", default=os.environ.get("CTRLAUDIT_CORPUS_DIR", "/tmp/ctrlaudit-corpus"))
    ap.add_argument("--min-severity", choices=list(SEVERITY), default="info",
                    help="score only findings at or above this severity")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)

    crates = [(r[0], r[1], r[2]) for r in read_tsv(os.path.join(HERE, "crates.tsv"))]
    # (crate@version, path, line, code) -> (expected, reason)
    labels = {}
    for r in read_tsv(os.path.join(HERE, "labels.tsv")):
        if len(r) < 6 or r[4] not in ("true", "false"):
            sys.exit(f"labels.tsv: bad row {r!r} (crate@version, path, line, code, true|false, reason)")
        labels[(r[0], r[1], int(r[2]), r[3])] = (r[4] == "true", r[5])

    found = {}  # key -> (severity, message), at or above --min-severity: what precision judges
    reported = set()  # every finding at any severity: a true case reported at info is not missed
    cargo_home = os.path.join(a.dir, "cargo-home")
    registry = os.path.join(cargo_home, "registry", "src", "corpus")
    os.makedirs(registry, exist_ok=True)
    for name, version, sha in crates:
        d = fetch(name, version, sha, a.dir)
        fetch_kube_dependencies(d, name, registry)
        doc = scan(a.bin, d, cargo_home)
        for f in doc["findings"]:
            s = f["subject"]
            if s.get("type") != "source":
                continue
            path = os.path.relpath(s["file"], d)
            key = (f"{name}@{version}", path, s["line"], f["code"])
            reported.add(key)
            if SEVERITY[f["severity"]] >= SEVERITY[a.min_severity]:
                found[key] = (f["severity"], f["message"])

    per = collections.defaultdict(lambda: collections.Counter())
    unlabelled = []
    false_alarms = []
    for key, (sev, msg) in sorted(found.items()):
        code = key[3]
        label = labels.get(key)
        if label is None:
            per[code]["unlabelled"] += 1
            unlabelled.append((key, sev, msg))
        elif label[0]:
            per[code]["tp"] += 1
        else:
            per[code]["fp"] += 1
            false_alarms.append((key, sev, label[1]))
    missed = []
    for key, (expected, reason) in sorted(labels.items()):
        if not expected:
            continue
        if key in reported:
            per[key[3]]["found"] += 1  # at any severity: recall does not depend on --min-severity
        else:
            per[key[3]]["fn"] += 1
            missed.append((key, reason))

    def pct(n, d):
        return f"{100.0 * n / d:.1f}%" if d else "—"

    print(f"{len(crates)} crates, findings at {a.min_severity} or above: {len(found)}")
    print()
    print("| rule | findings | true | false | unlabelled | missed | precision | recall |")
    print("|---|---|---|---|---|---|---|---|")
    total = collections.Counter()
    for code in sorted(per):
        c = per[code]
        total.update(c)
        n = c["tp"] + c["fp"] + c["unlabelled"]
        print(f"| {code} | {n} | {c['tp']} | {c['fp']} | {c['unlabelled']} | {c['fn']} | "
              f"{pct(c['tp'], c['tp'] + c['fp'])} | {pct(c['found'], c['found'] + c['fn'])} |")
    n = total["tp"] + total["fp"] + total["unlabelled"]
    print(f"| all | {n} | {total['tp']} | {total['fp']} | {total['unlabelled']} | {total['fn']} | "
          f"{pct(total['tp'], total['tp'] + total['fp'])} | {pct(total['found'], total['found'] + total['fn'])} |")
    if unlabelled:
        print(f"\n{len(unlabelled)} findings not in corpus/labels.tsv (label each true or false, with a reason):")
        for (crate, path, line, code), sev, msg in unlabelled:
            print(f"{crate}\t{path}\t{line}\t{code}\t?\t{sev}: {msg}")
    if false_alarms:
        print(f"\n{len(false_alarms)} findings labelled false (what to fix for precision):")
        for (crate, path, line, code), sev, reason in false_alarms:
            print(f"{crate}\t{path}\t{line}\t{code}\t{sev}\t{reason}")
    if missed:
        print(f"\n{len(missed)} labelled true cases that scan did not report:")
        for (crate, path, line, code), reason in missed:
            print(f"{crate}\t{path}\t{line}\t{code}\t{reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
