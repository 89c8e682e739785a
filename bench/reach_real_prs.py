"""The real PRs of docs/suites.md under `measure: changed` against `measure: all` (issue 37's last goal).

Each case is a clone of the project's own history (a mirror given by `--mirrors`), the spec written
into the working tree as docs/suites.md gives it (the sides have none: the head's suites run on the
base's code), compared at the defaults by the real CLI with `--measure changed` and with
`--measure all`, in that order for one case and the other for the next (a fresh cache directory
each, so the changed run records the base's reach itself). Prints per case each run's wall, what it
measured, its decision, and per benchmark the two verdicts and step-time changes side by side; a
benchmark the changed run left unmeasured whose `measure: all` verdict is a change is a miss.

    python bench/reach_real_prs.py --cases cattrs attrs-astuple pluggy
    python bench/reach_real_prs.py --cases attrs-evolve --changed-only
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

def spec(*items: str, setup: str | None = None) -> str:
    """A spec as docs/suites.md gives it: the setup, if any, and the suite items (flow mappings)."""
    return "version: 1\n" + (f"setup: {setup}\n" if setup else "") + "suites:\n" + "".join(f"  - {i}\n" for i in items)


PINT_ASV_SELECT = ("^01_registry_creation\\\\.time_create_registry\\\\(\\\\((None,|'', None)?\\\\)\\\\)$"
                   "|^10_registry\\\\.time_(load_definitions_stage_[123]|parse_unit_name)")
# name: (mirror, base, head, spec)
CASES = {
    "jsonschema": ("python-jsonschema+jsonschema", "1a4bd969~1", "1a4bd969",
                   spec("{pyperf: jsonschema/benchmarks/useless_keywords.py}",
                        "{pyperf: jsonschema/benchmarks/contains.py, select: \"^(middle|end)$\"}")),
    "attrs-astuple": ("python-attrs+attrs", "1315e42f~1", "1315e42f",
                      spec("{pytest: bench/test_benchmarks.py, env: {PYTHONPATH: src}, select: \"astuple or asdict\"}")),
    "attrs-evolve": ("python-attrs+attrs", "f53fc544~1", "f53fc544",
                     spec("{pytest: bench/, env: {PYTHONPATH: src}, "
                          "select: \"instantiate or create_simple_class or eq_equal or asdict_atomic\"}")),
    "rich": ("Textualize+rich", "12301e30^1", "12301e30",
             spec("{asv: asv.conf.json, env: {PYTHONPATH: .}, "
                  "select: \"^benchmarks\\\\.TextSuite\\\\.time_(fit|split|divide|render)(_unicode_heavy)?$\"}")),
    "cattrs": ("python-attrs+cattrs", "39e698f~1", "39e698f",
               spec("{pytest: bench/test_attrs_collections.py, env: {PYTHONPATH: src}, "
                    "select: \"test_unstructure_attrs_lists\"}")),
    "pluggy": ("pytest-dev+pluggy", "054a787", "5e51582",
               spec("{pytest: testing/benchmark.py}", setup="pip install -q -e . \"pytest<8\" pytest-benchmark")),
    "pint-asv": ("hgrecco+pint", "c07fc9b2^1", "c07fc9b2",
                 spec(f"{{asv: benchmarks/asv.conf.json, select: \"{PINT_ASV_SELECT}\"}}",
                      setup="pip install -q -e . asv_runner \"numpy<2\"")),
}
CHANGES = ("improved", "regressed")


def clone(mirror: Path, dest: Path, head: str, spec: str) -> Path:
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(mirror), str(dest)], check=True)
    subprocess.run(["git", "checkout", "-q", "--detach", head], cwd=dest, check=True)
    (dest / "profopt.yml").write_text(spec)
    return dest


def compare(root: Path, base: str, head: str, measure: str, cache: Path) -> dict:
    out = root.parent / f"{root.name}-{measure}.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PROFOPT_CACHE_DIR": str(cache)}
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "profopt_ci.cli.command_line", "compare", "--base", base, "--head",
                           head, "--measure", measure, "--fail-on", "none", "--out", str(out)],
                          cwd=root, env=env, capture_output=True, text=True, timeout=3600)
    wall = time.monotonic() - t0
    if not out.is_file():
        return {"wall": wall, "error": proc.stderr[-1500:]}
    c = json.loads(out.read_text())
    per = {}
    for b in c["benchmarks"]:
        m = (b.get("metrics") or {}).get("step_time_ms") or {}
        per[b["name"]] = {"measured": (b.get("reach") or {}).get("measured", True), "verdict": m.get("verdict"),
                          "change": m.get("delta_pct"), "decision": b.get("decision")}
    return {"wall": wall, "decision": c["decision"], "per": per, "rc": proc.returncode}


def said(p: dict) -> str:
    """A benchmark's verdict; one that failed on a side has a decision and no verdict."""
    return "not measured" if not p.get("measured") else str(p.get("verdict") or p.get("decision"))


def pct(p: dict) -> str:
    return "—" if p.get("change") is None else f"{p['change']:+.1f}%"


def report(case: str, base: str, head: str, got: dict[str, dict]) -> None:
    """Each run's wall, what it measured and its decision; per benchmark the verdicts side by side."""
    print(f"\n{case} ({base} → {head}):", flush=True)
    for m, g in got.items():
        if "error" in g:
            print(f"  measure {m}: {g['wall']:.0f} s, no comparison: {g['error']}")
            continue
        n = sum(1 for p in g["per"].values() if p["measured"])
        print(f"  measure {m:7s}: {g['wall']:6.1f} s, {n} of {len(g['per'])} measured, {g['decision']}")
    if any("error" in g for g in got.values()):
        return
    if "all" not in got:
        for name, c in sorted(got["changed"]["per"].items()):
            print(f"    {name[:70]:70s} {said(c)}")
        return
    misses = same = 0
    for name in sorted(got["all"]["per"]):
        a, c = got["all"]["per"][name], got["changed"]["per"].get(name, {})
        miss = not c.get("measured") and a["verdict"] in CHANGES
        misses += miss
        same += bool(c.get("measured")) and (c.get("verdict"), c.get("decision")) == (a["verdict"], a["decision"])
        print(f"    {name[:70]:70s} changed: {said(c):13s} {pct(c):>8s} | all: {said(a):13s} {pct(a):>8s}"
              + ("  MISS" if miss else ""))
    n = sum(1 for p in got["changed"]["per"].values() if p["measured"])
    print(f"  same verdict on {same} of {n} measured; misses (a change left unmeasured): {misses}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--changed-only", action="store_true",
                    help="run only `measure: changed` (its measured set against docs/suites.md's figures)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="profopt-real-prs-") as tmp:
        for i, case in enumerate(args.cases):
            mirror, base, head, text = CASES[case]
            root = clone(args.mirrors / mirror / "repo", Path(tmp) / case, head, text)
            order = ["changed"] if args.changed_only else ["changed", "all"] if i % 2 == 0 else ["all", "changed"]
            report(case, base, head, {m: compare(root, base, head, m, Path(tmp) / f"cache-{case}-{m}") for m in order})


if __name__ == "__main__":
    main()
