#!/usr/bin/env python3
"""scan's accuracy on real operators: fetches the published crates of corpus/crates.tsv from crates.io (checked
against the index's sha256) and the published Go modules of corpus/go-modules.tsv from the Go module proxy
(checked against their go.sum hash), scans each with kubectl-ctrlaudit, and scores the findings against
corpus/labels.tsv: precision (debatable findings counted for scan), strict precision (debatable counted against
it) and recall, per rule and overall, at warning and at info, for the whole corpus with this binary and for each
blind batch as it was first scanned (corpus/blind/BATCH.tsv); then every finding not yet labelled (in the labels
file's format, to review and paste), every finding labelled false, and every expected case that was missed.

Usage: corpus/run.sh [--bin PATH] [--dir DIR] [--lang rust|go|all] [--min-severity info|warning|error]
                     [--record-blind BATCH]
No third-party code is stored in this repository: the crates go to DIR (default /tmp/ctrlaudit-corpus).
"""

import argparse
import base64
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
import zipfile

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


def go_proxy():
    """The first proxy URL of GOPROXY (as the go command reads it), else proxy.golang.org."""
    for entry in os.environ.get("GOPROXY", "").replace("|", ",").split(","):
        if entry.startswith(("https://", "http://")):
            return entry.rstrip("/")
    return "https://proxy.golang.org"


def go_escape(path):
    """The module proxy's case encoding: an upper-case letter is `!` and the letter in lower case."""
    return "".join("!" + c.lower() if c.isupper() else c for c in path)


def go_h1(zf):
    """go.sum's `h1:` hash of a module zip (golang.org/x/mod/sumdb/dirhash.Hash1): the sha256 of the sorted lines
    `<sha256 of file>  <name>`."""
    names = sorted(n for n in zf.namelist() if not n.endswith("/"))
    summary = "".join(f"{hashlib.sha256(zf.read(n)).hexdigest()}  {n}\n" for n in names)
    return "h1:" + base64.b64encode(hashlib.sha256(summary.encode()).digest()).decode()


def fetch_go(module, version, h1, root):
    """Unpacks module@version under root/go once; the zip must match its go.sum hash."""
    prefix = f"{module}@{version}/"
    dest = os.path.join(root, "go", module + "@" + version)
    if os.path.isdir(dest):
        return dest
    url = f"{go_proxy()}/{go_escape(module)}/@v/{go_escape(version)}.zip"
    with urllib.request.urlopen(url, timeout=120) as r:
        data = r.read()
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        got = go_h1(zf)
        if got != h1:
            sys.exit(f"{module}@{version}: {got} does not match go.sum's {h1}")
        for n in zf.namelist():
            # A module zip holds only its own files, under module@version/: nothing may land elsewhere.
            if not n.startswith(prefix) or ".." in n.split("/"):
                sys.exit(f"{module}@{version}: zip entry {n!r} is outside {prefix}")
        zf.extractall(os.path.join(root, "go"))
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


def collect(doc, unit, root, found, messages):
    """Adds the source findings of one scan report of `unit` (unpacked at `root`) to `found` (key -> severity)
    and `messages`, keyed like the labels: unit@version, path in it, line, code."""
    for f in doc["findings"]:
        s = f["subject"]
        if s.get("type") != "source":
            continue
        key = (unit, os.path.relpath(s["file"], root), s["line"], f["code"])
        found[key] = f["severity"]
        messages[key] = f["message"]


LABELS = ("true", "false", "debatable")


def read_labels():
    """(crate@version, path, line, code) -> (label, reason). A label is `true` (the rule's anti-pattern, as a
    senior controller author would call it), `false` (a false alarm, or a trap written down before scanning: code
    that looks bad but is fine) or `debatable` (true but misleading, e.g. said of every reconcile about a read on
    a rare path)."""
    labels = {}
    for r in read_tsv(os.path.join(HERE, "labels.tsv")):
        if len(r) < 6 or r[4] not in LABELS:
            sys.exit(f"labels.tsv: bad row {r!r} (crate@version, path, line, code, true|false|debatable, reason)")
        labels[(r[0], r[1], int(r[2]), r[3])] = (r[4], r[5])
    return labels


def read_blind():
    """The first scan of each blind batch, as recorded before any code was changed for its crates:
    batch -> {(crate@version, path, line, code): severity}."""
    out = {}
    folder = os.path.join(HERE, "blind")
    if not os.path.isdir(folder):
        return out
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".tsv"):
            continue
        rows = {}
        for r in read_tsv(os.path.join(folder, name)):
            rows[(r[0], r[1], int(r[2]), r[3])] = r[4]
        out[name[: -len(".tsv")]] = rows
    return out


def score(found, labels, crates, min_severity):
    """Per rule: true, debatable and false findings at or above `min_severity`, unlabelled ones, and the expected
    (`true`) cases of `crates` found at any severity or missed. `found` maps a key to its severity."""
    per = collections.defaultdict(collections.Counter)
    for key, sev in found.items():
        if SEVERITY[sev] < SEVERITY[min_severity]:
            continue
        label = labels.get(key, (None, ""))[0]
        per[key[3]][{"true": "tp", "debatable": "deb", "false": "fp", None: "unlabelled"}[label]] += 1
    for key, (label, _) in labels.items():
        if label != "true" or key[0] not in crates:
            continue
        per[key[3]]["found" if key in found else "fn"] += 1
    return per


def pct(n, d):
    return f"{100.0 * n / d:.1f}%" if d else "—"


def figures(c):
    """Precision (debatable counted for scan), strict precision (debatable counted against) and recall."""
    judged = c["tp"] + c["deb"] + c["fp"]
    return (pct(c["tp"] + c["deb"], judged), pct(c["tp"], judged), pct(c["found"], c["found"] + c["fn"]))


def print_table(title, per):
    print(f"\n{title}\n")
    print("| rule | findings | true | debatable | false | unlabelled | missed | precision | strict | recall |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    total = collections.Counter()
    for code in sorted(per):
        c = per[code]
        total.update(c)
        n = c["tp"] + c["deb"] + c["fp"] + c["unlabelled"]
        print(f"| {code} | {n} | {c['tp']} | {c['deb']} | {c['fp']} | {c['unlabelled']} | {c['fn']} | "
              + " | ".join(figures(c)) + " |")
    n = total["tp"] + total["deb"] + total["fp"] + total["unlabelled"]
    print(f"| all | {n} | {total['tp']} | {total['deb']} | {total['fp']} | {total['unlabelled']} | {total['fn']} | "
          + " | ".join(figures(total)) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default="target/release/kubectl-ctrlaudit")
    ap.add_argument("--dir", default=os.environ.get("CTRLAUDIT_CORPUS_DIR", "/tmp/ctrlaudit-corpus"))
    ap.add_argument("--min-severity", choices=list(SEVERITY), default="warning",
                    help="the lowest severity precision judges (recall counts a case found at any severity); "
                    "both warning and info tables are printed, this one is the one the details list")
    ap.add_argument("--record-blind", metavar="BATCH",
                    help="write the findings of the crates of BATCH (crates.tsv's fifth column) to "
                    "corpus/blind/BATCH.tsv: the first scan of a new batch, before any code changes for it")
    ap.add_argument("--lang", choices=["rust", "go", "all"], default="all",
                    help="score the Rust crates, the Go modules or both (each language gets its own tables)")
    ap.add_argument("--fetch-only", action="store_true",
                    help="fetch and check the Go modules (under DIR/go) and stop: for benches/scan_go_floor.sh")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)

    crates = [(r[0], r[1], r[2], r[4] if len(r) > 4 else "") for r in read_tsv(os.path.join(HERE, "crates.tsv"))]
    modules = [(r[0], r[1], r[2], r[4] if len(r) > 4 else "")
               for r in read_tsv(os.path.join(HERE, "go-modules.tsv"))]
    if a.lang == "go":
        crates = []
    if a.lang == "rust":
        modules = []
    labels = read_labels()
    blind = read_blind()

    if a.fetch_only:
        for module, version, h1, _batch in modules:
            fetch_go(module, version, h1, a.dir)
        return 0

    found = {}  # key -> severity, every finding of the corpus
    messages = {}
    cargo_home = os.path.join(a.dir, "cargo-home")
    registry = os.path.join(cargo_home, "registry", "src", "corpus")
    os.makedirs(registry, exist_ok=True)
    for name, version, sha, _batch in crates:
        d = fetch(name, version, sha, a.dir)
        fetch_kube_dependencies(d, name, registry)
        collect(scan(a.bin, d, cargo_home), f"{name}@{version}", d, found, messages)
    for module, version, h1, _batch in modules:
        d = fetch_go(module, version, h1, a.dir)
        collect(scan(a.bin, d, cargo_home), f"{module}@{version}", d, found, messages)

    if a.record_blind:
        members = {f"{n}@{v}" for n, v, _, b in crates + modules if b == a.record_blind}
        if not members:
            sys.exit(f"no crate of crates.tsv or module of go-modules.tsv is in batch {a.record_blind}")
        path = os.path.join(HERE, "blind", f"{a.record_blind}.tsv")
        if os.path.exists(path):
            sys.exit(f"{path} exists: a blind record is written once, before tuning")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as out:
            out.write(f"# the first scan of batch {a.record_blind} ({len(members)} crates), before any code changed "
                      "for them: crate@version, path, line, code, severity\n")
            for key in sorted(k for k in found if k[0] in members):
                out.write("\t".join([key[0], key[1], str(key[2]), key[3], found[key]]) + "\n")
        print(f"wrote {path}")

    print(f"{len(crates)} crates, {len(modules)} Go modules, {len(found)} findings")
    for title, units in (("Rust corpus (every crate", crates), ("Go corpus (every module", modules)):
        if not units:
            continue
        members = {f"{n}@{v}" for n, v, _, _ in units}
        mine = {k: v for k, v in found.items() if k[0] in members}
        for sev in ("warning", "info"):
            print_table(f"{title}, this binary), findings at {sev} or above:",
                        score(mine, labels, members, sev))
    chosen = {f"{n}@{v}" for n, v, _, _ in crates + modules}
    for batch, rows in blind.items():
        members = {k[0] for k in rows} | {f"{n}@{v}" for n, v, _, b in crates + modules if b == batch}
        if not members & chosen:
            continue
        for sev in ("warning", "info"):
            print_table(f"Blind: batch {batch} ({len(members)} crates or modules) as first scanned, at {sev} or above:",
                        score(rows, labels, members, sev))

    unlabelled = sorted(k for k, sev in found.items()
                        if k not in labels and SEVERITY[sev] >= SEVERITY["info"])
    if unlabelled:
        print(f"\n{len(unlabelled)} findings not in corpus/labels.tsv (label each true, false or debatable):")
        for key in unlabelled:
            crate, path, line, code = key
            print(f"{crate}\t{path}\t{line}\t{code}\t?\t{found[key]}: {messages[key]}")
    false_alarms = sorted(k for k, sev in found.items() if labels.get(k, ("",))[0] == "false"
                          and SEVERITY[sev] >= SEVERITY[a.min_severity])
    if false_alarms:
        print(f"\n{len(false_alarms)} findings labelled false at {a.min_severity} or above (what to fix for precision):")
        for key in false_alarms:
            crate, path, line, code = key
            print(f"{crate}\t{path}\t{line}\t{code}\t{found[key]}\t{labels[key][1]}")
    missed = sorted(k for k, (label, _) in labels.items() if label == "true" and k not in found and k[0] in chosen)
    if missed:
        print(f"\n{len(missed)} labelled true cases that scan did not report:")
        for key in missed:
            crate, path, line, code = key
            print(f"{crate}\t{path}\t{line}\t{code}\t{labels[key][1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
