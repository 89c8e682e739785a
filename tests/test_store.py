"""Stored baselines, history and shards on real git repositories with real `profopt` processes."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import msgspec
import pytest
from conftest import CPU_STEP, cli_env, git, make_repo, run_cli
from msgspec.structs import replace

from profopt_ci.analyze import changepoints as history
from profopt_ci.documents.types import Runner
from profopt_ci.errors import UsageError
from profopt_ci.measure import shard
from profopt_ci.store import layout, stored_baselines
from profopt_ci.store import stores as store
from profopt_ci.words.i18n import say

BUSY = CPU_STEP

SPEC = """\
version: 1
hardware_label: test-cpu
defaults: {warmup: 1, min_time_ms: 5, values: 3, round_ms: 100, rounds: 6, max_rounds: 6, seed: 7, profile: "off"}
benchmarks:
  - name: busy
    callable: bench.work:make_step
    params: {us: 200}
    constraints:
      - {metric: output_digest, equal: true}
"""

FILES = {"bench/__init__.py": "", "bench/work.py": BUSY, "profopt.yml": SPEC, ".gitignore": "*.json\n*.md\n"}


def with_origin(tmp_path: Path, commits: list[dict] | None = None) -> tuple[Path, Path, list[str]]:
    """A work repository whose `origin` is a local bare repository."""
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    root = tmp_path / "work"
    shas = make_repo(root, commits or [FILES])
    git(root, "remote", "add", "origin", str(origin))
    git(root, "push", "-q", "origin", "main")
    return root, origin, shas


def snapshot(root: Path) -> dict:
    return {"head": git(root, "rev-parse", "HEAD"), "ref": git(root, "symbolic-ref", "HEAD"),
            "status": git(root, "status", "--porcelain", "--untracked-files=all"),
            "index": git(root, "ls-files", "-s"), "worktrees": git(root, "worktree", "list")}


def data_files(origin: Path, branch: str = "profopt-data") -> list[str]:
    return git(origin, "ls-tree", "-r", "--name-only", branch).splitlines()


def fake_doc(commit: str, value: float, *, label: str = "test-cpu", cpu: str = "Test CPU", n: int = 8,
             created: str = "2026-01-01T00:00:00+00:00", name: str = "busy") -> dict:
    values = [value * (1 + 0.002 * ((i % 3) - 1)) for i in range(n)]
    results = {"commit": commit, "spec_hash": "s", "hardware_label": label, "rounds": n,
               "fingerprint": {"cpu_model": cpu, "cpu_count": 2, "torch": None, "cuda": None,
                               "gpu_name": None, "gpu_driver": None},
               "benchmarks": {name: {"status": "ok", "kind": "callable", "params": {}, "unit": "items",
                                     "samples": [{"round": i, "step_time_ms": v, "values_ms": [v], "loops": 1,
                                                  "quality": {"output_digest": "same"}}
                                                 for i, v in enumerate(values)]}}}
    return replace(stored_baselines.from_results(results), created=created)  # the real builder's document


# ---- the git store -------------------------------------------------------------------------------


def test_refresh_pushes_to_the_data_branch_and_leaves_the_checkout_alone(tmp_path):
    root, origin, shas = with_origin(tmp_path)
    before = snapshot(root)
    proc = run_cli(["baseline", "refresh"], root)
    assert proc.returncode == 0, proc.stderr
    files = data_files(origin)
    assert len(files) == 1
    path = files[0]
    assert path.startswith("test-cpu/2") and f"-{shas[0][:12]}-" in path and path.endswith(".json")
    doc = json.loads(git(origin, "show", f"profopt-data:{path}"))
    assert doc["schema"] == "profopt/baseline@1" and doc["commit"] == shas[0]
    st = doc["benchmarks"]["busy"]["metrics"]["step_time_ms"]
    assert st["n"] == 6 and len(st["values"]) == 6 and st["ci_low"] <= st["median"] <= st["ci_high"]
    assert "samples" not in doc["benchmarks"]["busy"]   # a summary, not raw traces
    assert doc["fingerprint"]["cpu_model"] and doc["ref"] == "main"
    assert snapshot(root) == before

    listed = run_cli(["baseline", "list"], root)
    assert listed.returncode == 0, listed.stderr
    row = listed.stdout.splitlines()[1]
    assert row.split()[0] == "test-cpu" and shas[0][:12] in row and doc["created"][:10] in row
    assert Path(path).stem in row

    shown = run_cli(["baseline", "show"], root)
    assert shown.returncode == 0, shown.stderr
    assert f"commit {shas[0][:12]} (main)" in shown.stdout and "busy" in shown.stdout
    assert f"{st['median']:.4g}" in shown.stdout
    by_id = run_cli(["baseline", "show", Path(path).stem, "--json"], root)
    assert json.loads(by_id.stdout)["commit"] == shas[0]


def test_dirty_tree_is_refused_and_missing_remote_is_explained(tmp_path):
    root = tmp_path / "r"
    make_repo(root, [FILES])
    (root / "bench" / "work.py").write_text(BUSY + "\n# edit\n")
    proc = run_cli(["baseline", "refresh", "--store", f"dir:{tmp_path / 's'}"], root)
    assert proc.returncode == 2 and "uncommitted changes" in proc.stderr
    git(root, "checkout", "--", "bench/work.py")
    proc = run_cli(["baseline", "refresh"], root)
    assert proc.returncode == 2 and "remote `origin`" in proc.stderr and "dir:PATH" in proc.stderr


RACER = textwrap.dedent("""\
    import json, sys, time
    from pathlib import Path
    import msgspec
    from profopt_ci.documents.types_stored import Baseline
    from profopt_ci.store import stores as store

    repo, barrier, me, doc_path = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]

    def wait_for_the_other(attempt):
        if attempt == 0:  # both commits are built on the same tip: now push at the same moment
            (barrier / me).touch()
            deadline = time.time() + 30
            while len(list(barrier.iterdir())) < 2 and time.time() < deadline:
                time.sleep(0.005)

    target = store.GitStore(repo=repo, before_push=wait_for_the_other)
    print(store.save(target, msgspec.json.decode(Path(doc_path).read_bytes(), type=Baseline)))
""")


def test_two_pushes_at_once_both_land(tmp_path):
    root, origin, shas = with_origin(tmp_path)
    clones = []
    for name in ("c1", "c2"):
        git(tmp_path, "clone", "-q", str(origin), name)
        clones.append(tmp_path / name)
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    script = tmp_path / "racer.py"
    script.write_text(RACER)
    procs = []
    for i, clone in enumerate(clones):
        doc = tmp_path / f"doc{i}.json"
        doc.write_bytes(msgspec.json.encode(fake_doc(shas[0], 10.0 + i)))
        procs.append(subprocess.Popen([sys.executable, str(script), str(clone), str(barrier), str(i), str(doc)],
                                      env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    landed = data_files(origin)
    assert sorted(landed) == sorted(o.strip() for o, _ in outs)
    assert any("refused" in err for _, err in outs), outs   # the race happened and was retried
    assert git(origin, "rev-list", "--count", "profopt-data") == "2"


def test_two_concurrent_refresh_processes_both_land(tmp_path):
    _, origin, _ = with_origin(tmp_path)
    clones = []
    for name in ("n1", "n2"):
        git(tmp_path, "clone", "-q", str(origin), name)
        clones.append(tmp_path / name)
    cmd = [sys.executable, "-m", "profopt_ci.cli.command_line", "baseline", "refresh", "--rounds", "3"]
    procs = [subprocess.Popen(cmd, cwd=c, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for c in clones]
    outs = [p.communicate(timeout=180) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e[-2000:] for _, e in outs]
    assert len(data_files(origin)) == 2


def test_no_push_keeps_the_run_locally_until_baseline_push(tmp_path):
    root, origin, shas = with_origin(tmp_path)
    before = snapshot(root)
    path = store.save(store.GitStore(repo=root, push=False), fake_doc(shas[0], 10.0))
    assert git(origin, "branch", "--list", "profopt-data") == ""
    assert snapshot(root) == before
    listed = run_cli(["baseline", "list"], root)          # readers see the unpushed run
    assert Path(path).stem in listed.stdout
    pushed = run_cli(["baseline", "push"], root)
    assert pushed.returncode == 0 and "pushed 1" in pushed.stderr, pushed.stderr
    assert data_files(origin) == [path]
    again = run_cli(["baseline", "push"], root)
    assert again.returncode == 0 and "nothing to push" in again.stderr


# ---- compare against the store -------------------------------------------------------------------


def test_stored_baseline_from_another_cpu_is_refused_then_allowed(tmp_path):
    root = tmp_path / "repo"
    shas = make_repo(root, [FILES, {"README": "docs only\n"}])
    from profopt_ci.measure.fingerprint import collect

    doc = fake_doc(shas[0], 0.3)
    doc = replace(doc, fingerprint={**collect(), "cpu_model": "Some Other CPU @ 9.9GHz"})
    st = tmp_path / "store"
    store.save(store.DirStore(st), doc)

    args = ["compare", "--baseline", "stored", "--store", f"dir:{st}", "--base", "HEAD~1"]
    refused = run_cli(args, root)
    assert refused.returncode == 2, refused.stderr
    assert "cpu_model" in refused.stderr and "Some Other CPU" in refused.stderr
    assert "--allow-env-mismatch" in refused.stderr
    assert not (root / ".profopt" / "comparison.json").exists()

    ok = run_cli([*args, "--allow-env-mismatch", "--report", "report.md"], root)
    assert ok.returncode in (0, 1), ok.stderr
    c = json.loads((root / ".profopt" / "comparison.json").read_text())
    assert c["mode"] == "unpaired" and c["base"]["commit"] == shas[0] and c["head"]["commit"] == shas[1]
    assert c["baseline"]["mode"] == "stored" and c["baseline"]["commits_before_base"] == 0
    assert any("stored baseline of commit " + shas[0][:12] in say("en", n) for n in c["notes"])
    assert any("different environment" in say("en", n) and "cpu_model" in say("en", n) for n in c["notes"])
    assert [d["key"] for d in c["differences"] if d.get("material")] == ["cpu_model"]
    b = c["benchmarks"][0]
    assert b["name"] == "busy" and len(b["samples"]["base"]) == 8 and len(b["samples"]["head"]) == 6
    assert b["constraints"][0]["ok"] is True        # quality values were stored and compared
    assert c["history"]["busy"]["commits"] == [shas[0][:12]]
    assert "Nightly history" in (root / "report.md").read_text()


def test_stored_picks_the_newest_at_or_before_the_base(tmp_path):
    root = tmp_path / "repo"
    shas = make_repo(root, [FILES] + [{f"f{i}": str(i)} for i in range(4)])
    git(root, "checkout", "-q", "-b", "side", shas[1])
    (root / "side.txt").write_text("x")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "side")
    side = git(root, "rev-parse", "HEAD")
    git(root, "checkout", "-q", "main")
    target = store.DirStore(tmp_path / "s")
    for sha, created in ((shas[0], "2026-01-01"), (shas[1], "2026-01-02"), (side, "2026-01-03"),
                         (shas[3], "2026-01-04"), (shas[1], "2026-01-05")):
        store.save(target, fake_doc(sha, 10.0, created=created + "T00:00:00+00:00"))
    quiet = []
    got = store.newest(target, root, "test-cpu", shas[2], warn=quiet.append)
    assert got is not None
    e, doc, dist = got
    # shas[3] is newer but after the base; `side` is not an ancestor; of shas[1]'s two runs the later
    assert doc["commit"] == shas[1] and dist == 1 and doc["created"].startswith("2026-01-05")
    assert store.newest(target, root, "other-label", shas[2], warn=quiet.append) is None
    assert quiet == []


def test_both_reports_drift_of_the_fresh_base(tmp_path):
    root = tmp_path / "repo"
    shas = make_repo(root, [FILES] + [{f"f{i}": str(i)} for i in range(6)])
    target = store.DirStore(tmp_path / "s")
    from profopt_ci.measure.fingerprint import collect

    fp = collect()
    for i, sha in enumerate(shas[:-1]):
        doc = fake_doc(sha, 1000.0, cpu=fp["cpu_model"], created=f"2026-01-0{i + 1}T00:00:00+00:00")
        doc = replace(doc, fingerprint=fp)
        store.save(target, doc)
    proc = run_cli(["compare", "--baseline", "both", "--store", f"dir:{target.root}", "--base", "HEAD~1",
                    "--measure", "all"], root)
    assert proc.returncode in (0, 1), proc.stderr
    c = json.loads((root / ".profopt" / "comparison.json").read_text())
    assert c["mode"] == "paired" and c["baseline"]["mode"] == "both"
    d = c["drift"]["busy"]
    assert d["drifted"] is True and d["n"] == 6 and d["delta_pct"] < -90   # ~1 ms measured vs 1000 stored
    assert any("drifted from its nightly history" in say("en", n) for n in c["notes"])
    assert len(c["history"]["busy"]["values"]) == 6


def test_drift_rule():
    quiet = [10.0, 10.1, 9.9, 10.05, 9.95, 10.0]
    assert history.drift(10.08, quiet)["drifted"] is False
    assert history.drift(11.0, quiet)["drifted"] is True
    # a move smaller than the threshold never counts, however quiet the history
    assert history.drift(10.2, [10.0] * 8, threshold_pct=3.0)["drifted"] is False
    few = history.drift(20.0, [10.0, 10.0])
    assert few["drifted"] is None and "5 needed" in few["reason"]


# ---- history ---------------------------------------------------------------------------------------


def test_change_point_found_at_the_commit_where_a_10_percent_step_entered(tmp_path):
    root = tmp_path / "repo"
    shas = make_repo(root, [{"f": str(i)} for i in range(24)])
    target = store.DirStore(tmp_path / "s")
    noise = [0.0, 0.6, -0.4, 0.3, -0.7, 0.2, 0.5, -0.3, 0.1, -0.5, 0.4, -0.1]
    for i, sha in enumerate(shas):
        value = 20.0 * (1.10 if i >= 15 else 1.0) * (1 + noise[i % len(noise)] / 100)
        store.save(target, fake_doc(sha, value))
    runs = store.at_or_before(target, root, "test-cpu", shas[-1], limit=30)
    assert len(runs) == 24
    entries = [{"name": "busy", "metrics": {"step_time_ms": {"head": 22.1}}}]
    h = history.build(runs, entries, head_commit=shas[-1], min_pct=3.0)["busy"]
    assert h["commits"] == [s[:12] for s in shas] and h["head"] == 22.1
    [cp] = h["change_points"]
    assert cp["index"] == 15 and cp["from_commit"] == shas[14][:12] and cp["to_commit"] == shas[15][:12]
    assert 8 < cp["delta_pct"] < 12
    # no step, no change point
    flat = [20.0 * (1 + noise[i % len(noise)] / 100) for i in range(24)]
    assert history.detect(flat) == []


# ---- corrupt and foreign files -------------------------------------------------------------------


def test_corrupt_and_foreign_files_are_skipped_with_a_warning(tmp_path):
    root = tmp_path / "repo"
    shas = make_repo(root, [FILES, {"x": "1"}])
    st = tmp_path / "store"
    target = store.DirStore(st)
    good = store.save(target, fake_doc(shas[0], 10.0))
    newer = st / "test-cpu" / "2026" / f"20261231T235959Z-{shas[1][:12]}-abc123.json"
    newer.parent.mkdir(parents=True, exist_ok=True)
    newer.write_text('{"schema": "profopt/baseline@1", "commit": ')          # cut short
    wrong = st / "test-cpu" / "2026" / f"20261230T000000Z-{shas[1][:12]}-def456.json"
    wrong.write_text(json.dumps({"schema": "profopt/results@1", "commit": shas[1]}))
    (st / "test-cpu" / "notes.txt").write_text("hello")
    (st / "README.md").write_text("data branch")

    proc = run_cli(["baseline", "list", "--store", f"dir:{st}"], root)
    assert proc.returncode == 0, proc.stderr
    assert "notes.txt" in proc.stderr and "README" not in proc.stderr
    assert newer.name in proc.stderr and "not valid JSON" in proc.stderr
    assert wrong.name in proc.stderr and "profopt/results@1" in proc.stderr
    assert Path(good).stem in proc.stdout

    proc = run_cli(["baseline", "show", "--store", f"dir:{st}"], root)
    assert proc.returncode == 0, proc.stderr
    assert f"commit {shas[0][:12]}" in proc.stdout and newer.name in proc.stderr

    warnings: list[str] = []
    got = store.newest(target, root, "test-cpu", shas[1], warn=warnings.append)
    assert got is not None and got[1]["commit"] == shas[0]
    assert any(newer.name in w for w in warnings) and any(wrong.name in w for w in warnings)


def test_store_locations():
    assert isinstance(store.open_store("dir:/tmp/x", None), store.DirStore)
    g = store.open_store("git:up:data", Path("."))
    assert isinstance(g, store.GitStore) and g.remote == "up" and g.branch == "data"
    assert store.open_store(None, Path(".")).branch == "profopt-data"
    for bad in ("s3:bucket", "dir:", "git"):
        with pytest.raises(UsageError):
            store.open_store(bad, Path("."))
    assert layout.label_dir("gpu a100/80g") == "gpu_a100_80g"
    assert store.parse_path("gpu/2026/20260101T000000Z-0123456789ab-a1b2c3.json").short == "0123456789ab"
    assert store.parse_path("gpu/2025/20260101T000000Z-0123456789ab.json") is None   # year folder mismatch


def test_median_ci_is_order_statistics():
    assert stored_baselines.median_ci([1, 2, 3, 4, 5]) == (None, None)           # 5 values: no 95% CI exists
    assert stored_baselines.median_ci([6, 1, 5, 2, 4, 3]) == (1, 6)
    lo, hi = stored_baselines.median_ci(list(range(1, 21)))
    assert (lo, hi) == (6, 15)                                           # ranks 6 and 15 of 20 (binomial)


# ---- shards ---------------------------------------------------------------------------------------


def test_shard_assignment_is_deterministic_and_balanced():
    names = ["a", "b", "c", "d", "e"]
    assert shard.assign(names, 2) == [["a", "c", "e"], ["b", "d"]]
    costs = {"a": 100.0, "b": 10.0, "c": 10.0, "d": 10.0, "e": 70.0}
    split = shard.assign(names, 2, costs)
    assert split == [["a"], ["b", "c", "d", "e"]]
    loads = [sum(costs[n] for n in s) for s in split]
    assert max(loads) == 100.0
    assert shard.assign(names, 2, costs) == split
    assert shard.assign(names, 7)[5:] == [[], []]
    for bad in ("0/2", "3/2", "x", "1/0"):
        with pytest.raises(UsageError):
            shard.parse_shard(bad)


SHARD_SPEC = """\
version: 1
hardware_label: test-cpu
defaults: {{warmup: 1, min_time_ms: 5, values: 3, value_ms: 1, round_ms: 150, rounds: 6, max_rounds: 6, seed: 7, profile: "off"}}
benchmarks:
  - name: small
    callable: bench.work:make_step
    params: {{us: {a}}}
  - name: medium
    callable: bench.work:make_step
    params: {{us: {b}}}
  - name: large
    callable: bench.work:make_step
    params: {{us: {c}}}
"""


@pytest.mark.slow
def test_sharded_runs_merge_into_the_unsharded_shape(tmp_path):
    root = tmp_path / "repo"
    make_repo(root, [{"bench/__init__.py": "", "bench/work.py": BUSY, ".gitignore": "*.json\n",
                      "profopt.yml": SHARD_SPEC.format(a=100, b=150, c=200)}])
    whole = run_cli(["run", "--out", "whole.json"], root)
    assert whole.returncode == 0, whole.stderr
    parts = []
    for i in (1, 2):
        p = run_cli(["run", "--shard", f"{i}/2", "--out", f"part{i}.json"], root)
        assert p.returncode == 0, p.stderr
        parts.append(json.loads((root / f"part{i}.json").read_text()))
    # no recorded costs: round-robin over the sorted names (large, medium, small)
    assert [p["shard"]["benchmarks"] for p in parts] == [["small", "large"], ["medium"]]
    assert parts[0]["shard"]["balance"] == "name"
    merged = run_cli(["merge", "part2.json", "part1.json", "--out", "merged.json"], root)
    assert merged.returncode == 0, merged.stderr
    a = json.loads((root / "whole.json").read_text())
    m = json.loads((root / "merged.json").read_text())
    assert set(m) - {"merged_from"} == set(a) and "shard" not in m
    assert list(m["benchmarks"]) == list(a["benchmarks"]) == ["small", "medium", "large"]
    for name in a["benchmarks"]:
        assert set(m["benchmarks"][name]) == set(a["benchmarks"][name])
        assert len(m["benchmarks"][name]["samples"]) == len(a["benchmarks"][name]["samples"]) == 6
    same = ("spec_hash", "hardware_label", "commit", "rounds", "seed", "env")
    assert {k: m[k] for k in same} == {k: a[k] for k in same}

    # Downstream, merging loses nothing: the unsharded run's own data, cut along the same split and
    # merged, gives the very same diff against a base 5× slower than it.
    base = json.loads(json.dumps(a))
    for b in base["benchmarks"].values():
        for s in b["samples"]:
            s["step_time_ms"] *= 5
            s["values_ms"] = [v * 5 for v in s["values_ms"]]
    cuts = [{**a, "shard": part["shard"], "benchmarks": {n: a["benchmarks"][n] for n in part["shard"]["benchmarks"]}}
            for part in parts]
    for i, cut in enumerate(cuts, 1):
        (root / f"cut{i}.json").write_text(json.dumps(cut))
    rejoined_results, warnings = shard.merge([root / "cut2.json", root / "cut1.json"])
    assert warnings == []
    from profopt_ci.documents.read import view
    from profopt_ci.pipeline.diff_results import run_diff

    plain, rejoined, real = (view(run_diff(None, base, head)) for head in (a, rejoined_results, m))
    # 5× faster: keep, unless this busy machine made a run unstable (then inconclusive, on both sides alike)
    assert {b["decision"] for b in plain["benchmarks"]} <= {"keep", "inconclusive"}
    assert {k: v for k, v in plain.items() if k != "created"} == {k: v for k, v in rejoined.items() if k != "created"}
    # the real shards measured anew: same benchmarks, same keys all the way down (figures are new)
    assert set(real) == set(plain) and [b["name"] for b in real["benchmarks"]] == [b["name"] for b in plain["benchmarks"]]
    for x, y in zip(plain["benchmarks"], real["benchmarks"], strict=True):
        assert set(x) == set(y) and set(x["metrics"]) == set(y["metrics"])
        assert y["metrics"]["step_time_ms"]["delta_pct"] < -50     # still far faster than the 5× base


def test_shards_balance_by_the_costs_of_a_stored_baseline(tmp_path):
    root = tmp_path / "repo"
    shas = make_repo(root, [{"bench/__init__.py": "", "bench/work.py": BUSY, ".gitignore": "*.json\n",
                             "profopt.yml": SHARD_SPEC.format(a=100, b=150, c=200)}])
    target = store.DirStore(tmp_path / "s")
    doc = fake_doc(shas[0], 1.0)
    costs = {"small": 5.0, "medium": 200.0, "large": 190.0}
    doc = replace(doc, benchmarks={name: replace(doc.benchmarks["busy"], round_cost_ms=ms) for name, ms in costs.items()})
    store.save(target, doc)
    spec = __import__("profopt_ci.specfile.load", fromlist=["load_spec"]).load_spec(root / "profopt.yml")
    got, commit = stored_baselines.costs(spec, f"dir:{target.root}")
    assert commit == shas[0] and got == {name: ms * 6 for name, ms in costs.items()}
    info = shard.shard_info([b.name for b in spec.benchmarks], 1, 2, got, commit)
    # LPT: medium alone; large + small together (390 vs 1200 + 30 ms per round × 6)
    assert info["benchmarks"] == ["medium"] and info["balance"] == "cost" and info["cost_commit"] == shas[0]
    assert shard.assign([b.name for b in spec.benchmarks], 2, got)[1] == ["small", "large"]


def test_merge_refuses_what_does_not_add_up(tmp_path):
    fp = dict.fromkeys(["cpu_model", "cpu_count", "memory_gb", "os", "python", "numpy", "torch", "cuda", "gpu_name",
                        "gpu_driver"])
    base = {"schema": "profopt/results@1", "tool_version": "0", "commit": "c", "spec_hash": "a" * 64,
            "hardware_label": "l", "rounds": 1, "fingerprint": fp, "env": {}, "dirty": False, "created": "x"}
    entry = {"kind": "callable", "params": {}, "unit": "items", "status": "ok", "error": None, "samples": [],
             "summary": {}}

    def part(i: int, n: int, names: list[str], everything: list[str], **over) -> dict:
        return {**base, **over, "benchmarks": {k: dict(entry) for k in names},
                "shard": {"index": i, "count": n, "benchmarks": names, "all": everything}}

    def write(name: str, doc: dict) -> str:
        p = tmp_path / name
        p.write_text(json.dumps(doc))
        return name

    allx = ["a", "b", "c"]
    one, two = write("1.json", part(1, 2, ["a", "c"], allx)), write("2.json", part(2, 2, ["b"], allx))
    ok = run_cli(["merge", one, two, "--out", "m.json"], tmp_path)
    assert ok.returncode == 0 and list(json.loads((tmp_path / "m.json").read_text())["benchmarks"]) == allx
    cases = {
        "spec_hash": [one, write("x.json", part(2, 2, ["b"], allx, spec_hash="b" * 64))],
        "hardware_label": [one, write("y.json", part(2, 2, ["b"], allx, hardware_label="gpu"))],
        "in two files": [one, write("z.json", part(2, 2, ["b", "a"], allx))],
        "2/2 missing": [one],
        "given twice": [one, write("w.json", part(1, 2, ["b"], allx))],
    }
    # a shard record cut short or edited by hand (the campaign of issue 28 found a KeyError here)
    for key in ("index", "count"):
        cut = part(2, 2, ["b"], allx)
        del cut["shard"][key]
        cases[f"`shard.{key}` is missing"] = [one, write(f"no-{key}.json", cut)]
    cases["`shard.count` is 'two'"] = [one, write("words.json", {**part(2, 2, ["b"], allx), "shard": {
        "index": 2, "count": "two", "all": allx}})]
    cases["`shard` is str"] = [one, write("str.json", {**part(2, 2, ["b"], allx), "shard": "2/2"})]
    cases["`shard.index` 3 is past `shard.count` 2"] = [one, write("past.json", part(3, 2, ["b"], allx))]
    cases["`shard.all` is not a list"] = [one, write("all.json", part(2, 2, ["b"], "abc"))]
    for words, files in cases.items():
        proc = run_cli(["merge", *files, "--out", "bad.json"], tmp_path)
        assert proc.returncode == 2, (words, proc.stderr)
        assert words in proc.stderr and "cannot merge" in proc.stderr


# ---- the report ------------------------------------------------------------------------------------


def test_history_renders_as_a_collapsible_trend_that_goes_first_when_the_comment_shrinks():
    from comparison_fixtures import keep

    from profopt_ci.report.render import render, shrink

    c = keep()
    name = c["benchmarks"][0]["name"]
    values = [20.0] * 10 + [22.0] * 6
    commits = [f"{i:040x}"[:12] for i in range(16)]
    runs = [(None, {"commit": commits[i] + "0" * 28, "created": f"2026-01-{i + 1:02d}T00:00:00+00:00",
                    "benchmarks": {name: {"metrics": {"step_time_ms": {"median": v}}}}}, 15 - i)
            for i, v in enumerate(values)][::-1]
    c["history"] = history.build(runs, c["benchmarks"], head_commit=c["head"]["commit"], min_pct=c["threshold_pct"])
    c["drift"] = {name: history.drift(27.0, values)}
    [cp] = c["history"][name]["change_points"]
    assert (cp["from_commit"], cp["to_commit"]) == (commits[9], commits[10])
    md = render(c, "md", "en", max_chars=None)
    section = md[md.index("<!-- profopt:section history 0 -->"):md.index("<!-- profopt:end history -->")]
    assert "<details><summary>Nightly history</summary>" in section and "xychart-beta" in section
    assert f'"{commits[0][:7]}"' in section and '"head"' in section
    assert f"step +10.0% entered between {commits[9][:7]} and {commits[10][:7]} (2026-01-11)" in section
    assert "left its nightly history" in section
    cut = shrink(md, len(md) - 10)
    assert "profopt:section history" not in cut and "<summary>Nightly history" not in cut
    assert "left out: nightly history" in cut and "profopt:section noise" in cut   # only it went
    html = render(c, "html", "zh")
    assert "每日基线历史" in html and commits[10][:7] in html


def test_diff_takes_a_stored_baseline_as_its_base(tmp_path):
    stored = fake_doc("a" * 40, 5.0)
    head = {"schema": "profopt/results@1", "commit": "b" * 40, "spec_hash": "s", "hardware_label": "test-cpu",
            "fingerprint": stored.fingerprint, "env": {}, "rounds": 8,
            "benchmarks": {"busy": {"status": "ok", "params": {}, "unit": "items",
                                    "samples": [{"round": i, "step_time_ms": 1.0 + 0.01 * i,
                                                 "quality": {"output_digest": "same"}} for i in range(8)]}}}
    (tmp_path / "base.json").write_bytes(msgspec.json.encode(stored))
    (tmp_path / "head.json").write_text(json.dumps(head))
    proc = run_cli(["diff", "base.json", "head.json"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    c = json.loads((tmp_path / ".profopt" / "comparison.json").read_text())
    assert c["mode"] == "unpaired" and c["base"]["commit"] == "a" * 40
    b = c["benchmarks"][0]
    assert b["decision"] == "keep" and len(b["samples"]["base"]) == 8 and -85 < b["metrics"]["step_time_ms"]["delta_pct"] < -75
    (tmp_path / "other.json").write_text(json.dumps({"schema": "something/else@3"}))
    bad = run_cli(["diff", "other.json", "head.json"], tmp_path)
    assert bad.returncode == 2 and "other.json" in bad.stderr


# ---- the runner probe against the label's stored runs ---------------------------------------------


def test_a_runner_far_off_its_stored_history_is_said_and_recorded(tmp_path):
    from profopt_ci.measure import runner

    root = tmp_path / "repo"
    shas = make_repo(root, [FILES, {"README": "docs only\n"}])
    st = tmp_path / "store"
    now = runner.probe()
    for i, factor in enumerate((0.3, 0.31, 0.29)):  # the usual runner was ~3x as fast: probe noise cannot hide it
        doc = fake_doc(shas[0], 0.3, created=f"2026-01-0{i + 1}T00:00:00+00:00")
        doc = replace(doc, runner=Runner(**{**now, "ms": now["ms"] * factor, "samples": 2}))
        store.save(store.DirStore(st), doc)
    proc = run_cli(["compare", "--base", "HEAD~1", "--measure", "all", "--rounds", "2", "--fail-on", "none", "--store", f"dir:{st}",
                    "--report", "report.md", "--lang", "zh"], root)
    assert proc.returncode == 0, proc.stderr
    c = json.loads((root / ".profopt" / "comparison.json").read_text())
    r = c["runner"]
    assert r["probe"] == runner.PROBE and r["history_n"] == 3 and r["state"] == "slow" and r["off_pct"] > 50
    assert any(say("en", n).startswith("this runner ran ") and "slower than its usual" in say("en", n) and "label test-cpu" in say("en", n)
               for n in c["notes"])
    assert "warning: this runner ran" in proc.stderr
    zh = (root / "report.md").read_text()
    assert "本次运行的机器比平时慢" in zh and "置信区间只覆盖本次运行内部的波动" in zh


def test_a_runner_on_its_usual_speed_or_without_history_says_nothing(tmp_path):
    from profopt_ci.measure import runner

    record = runner.probe()
    usual, note = runner.check(record, [record["ms"] * f for f in (0.95, 1.0, 1.05)], "x")
    assert usual["state"] == "usual" and note is None
    alone, note = runner.check(record, [record["ms"]] * 2, "x")  # fewer than MIN_HISTORY runs
    assert alone["state"] == "no history" and note is None
    other = runner.history_of([{"runner": {**record, "python": "2.7.18"}}], record)
    assert other == []  # another interpreter's probe is another figure
