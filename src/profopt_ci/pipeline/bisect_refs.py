"""`profopt bisect`: the commit that changed a benchmark, found by paired compares.

In: the spec (with the command line's overrides), a good and a bad ref, the benchmarks to search
(default: those that changed beyond τ between the ends), the metric, and a `Measure` callable —
the real one (`CompareMeasure`) runs `pipeline.compare_refs.run_compare` with profiling off; tests pass
one that returns literal estimates. Out: the `profopt/bisect@1` document (documents/bisect.py).

The flow:
1. the ends: good against bad, one paired compare of every benchmark asked for: what changed, and
   in which direction;
2. per changed benchmark, a binary search of the first-parent commits after the good end
   (analyze/bisection.py), each probe a paired compare of that commit against the good end;
   an inconclusive probe is run again with more rounds (`extensions` times), never guessed; a
   commit whose benchmark fails is skipped;
3. steps: the first bad commit found is compared with the bad end; while that still changed
   beyond τ (either way), the rest of the range is searched again with that commit as its good end.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from profopt_ci.analyze import bisection
from profopt_ci.analyze.bisection import CHANGED, Search, classify, observe
from profopt_ci.documents import bisect as bisect_doc
from profopt_ci.errors import InfraError, UsageError
from profopt_ci.gitutil import describe_commit, first_parent_range, is_ancestor, toplevel
from profopt_ci.measure.checkouts import resolve_commit
from profopt_ci.measure.rounds import stderr_log
from profopt_ci.specfile.model import Spec
from profopt_ci.specfile.plan import Overrides, make_plan
from profopt_ci.words.i18n import message

# (good commit, commit, benchmark names, attempt) → {benchmark: estimate} (analyze.bisection.observe)
Measure = Callable[[str, str, list[str], int], dict[str, dict]]
EXTENSIONS = 1  # re-runs of an inconclusive probe, each with twice the rounds of the one before


@dataclass
class CompareMeasure:
    """Probes as real paired compares (worktrees, lockstep, sequential looks), profiling off."""

    spec: Spec
    overrides: Overrides
    key: str
    quality: bool
    log: Callable[[str], None] = stderr_log

    def __call__(self, good: str, commit: str, names: list[str], attempt: int) -> dict[str, dict]:
        from profopt_ci.documents.read import view
        from profopt_ci.pipeline.compare_refs import CompareOptions, run_compare

        spec = replace(self.spec, benchmarks=[b for b in self.spec.benchmarks if b.name in names])
        ov = replace(self.overrides, profile="off", confirm=False, **self._budget(spec, attempt))
        # a probe that fails is a skip: what the side that runs would measure alone is never read
        doc = run_compare(make_plan(spec, ov), CompareOptions(base_ref=good, head_ref=commit, alone=False), log=self.log)
        assert doc is not None  # phase "all" always returns the document
        return {e["name"]: observe(e, self.key, self.quality) for e in view(doc)["benchmarks"]}

    def _budget(self, spec: Spec, attempt: int) -> dict[str, int | None]:
        """Attempt 0: the plan's rounds; attempt k: starts where the last could stop, up to twice that."""
        if attempt == 0:
            return {}
        most = max(b.settings.max_rounds for b in make_plan(spec, self.overrides).spec.benchmarks)
        rounds = most * 2 ** (attempt - 1)
        return {"rounds": rounds, "max_rounds": 2 * rounds}


@dataclass
class Bisection:
    repo: Path
    good: str
    bad: str
    commits: list[str]  # first-parent, after good, up to bad (bad last)
    measure: Measure
    extensions: int = EXTENSIONS
    log: Callable[[str], None] = stderr_log
    probes: list[dict] = field(default_factory=list)
    notes: list[dict] = field(default_factory=list)
    _info: dict[str, dict] = field(default_factory=dict)

    def info(self, sha: str) -> dict:
        if sha not in self._info:
            self._info[sha] = describe_commit(self.repo, sha)
        return self._info[sha]

    def estimate(self, good: str, commit: str, names: list[str]) -> tuple[dict[str, dict], dict[str, list[dict]], float]:
        """Each benchmark's estimate, re-run with more rounds while any is inconclusive; the attempts; seconds."""
        t0 = time.monotonic()
        attempts: dict[str, list[dict]] = {n: [] for n in names}
        pending = list(names)
        for attempt in range(self.extensions + 1):
            got = self.measure(good, commit, pending, attempt)
            for n in pending:
                attempts[n].append(got.get(n) or {"verdict": "failed", "delta_pct": None, "ci_low_pct": None,
                                                   "ci_high_pct": None, "rounds": None, "error": "not measured"})
            pending = [n for n in pending if attempts[n][-1]["verdict"] in bisection.UNDECIDED]
            if not pending:
                break
            if attempt < self.extensions:
                self.log(f"profopt: bisect: {commit[:12]}: {', '.join(pending)} inconclusive — "
                         "measuring again with more rounds")
        return {n: a[-1] for n, a in attempts.items()}, attempts, time.monotonic() - t0

    def probe(self, bench: str, good: str, commit: str, direction: str | None) -> tuple[str, dict]:
        """One probe: its class (or step-check when `direction` is None) and its estimate, recorded."""
        final, attempts, seconds = self.estimate(good, commit, [bench])
        obs = final[bench]
        cls = "step-check" if direction is None else classify(obs, direction)
        self.probes.append({"benchmark": bench, "good_end": good, "commit": commit,
                            "subject": self.info(commit)["subject"], "class": cls, "estimate": obs,
                            "attempts": attempts[bench], "seconds": round(seconds, 2)})
        self.log(f"profopt: bisect: probe {len(self.probes)} {commit[:12]} vs {good[:12]} ({bench}): "
                 + ("not measured: the change does not reach it" if obs.get("reached") is False else _said(obs))
                 + f" → {cls}")
        return cls, obs

    def search(self, bench: str, good: str, commits: list[str], direction: str, end: dict) -> dict:
        """The first bad commit of `commits` (its last one known bad: `end` is its estimate) as a step."""
        s = Search(len(commits))
        seen = {len(commits) - 1: end}
        while (i := s.next_probe()) is not None:
            cls, obs = self.probe(bench, good, commits[i], direction)
            s.record(i, cls)
            seen[i] = obs
        first, candidates = s.result()
        if len(candidates) > 1:
            self.notes.append(message("note.bisect_untestable", bench=bench, n=len(candidates) - 1,
                                      commit=commits[first][:12]))
        info = self.info(commits[first])
        return {"benchmark": bench, **info, "good_end": good, "effect": seen[first],
                "candidates": [self.info(commits[c]) for c in candidates]}

    def steps(self, bench: str, direction: str, end: dict) -> list[dict]:
        """Every step beyond τ between the ends, oldest first."""
        out = []
        good, commits = self.good, self.commits
        while commits:
            step = self.search(bench, good, commits, direction, end)
            out.append(step)
            at = commits.index(step["commit"])
            if at == len(commits) - 1:
                break
            _, end = self.probe(bench, step["commit"], self.bad, None)
            if end["verdict"] not in CHANGED:
                break
            direction, good, commits = end["verdict"], step["commit"], commits[at + 1:]
            self.log(f"profopt: bisect: {bench} changed again after {good[:12]} ({_said(end)}): searching the rest")
        return out


def _said(obs: dict) -> str:
    if obs.get("delta_pct") is None:
        return obs["verdict"]
    ci = (f", CI {obs['ci_low_pct']:+.1f}…{obs['ci_high_pct']:+.1f}%"
          if obs.get("ci_low_pct") is not None and obs.get("ci_high_pct") is not None else "")
    return f"{obs['verdict']} {obs['delta_pct']:+.1f}%{ci}"


def resolve_range(repo: Path, good_ref: str, bad_ref: str) -> tuple[str, str, list[str]]:
    """(good, bad, the first-parent commits after good up to bad): usage errors for a bad range."""
    good, bad = resolve_commit(repo, good_ref), resolve_commit(repo, bad_ref)
    if good == bad:
        raise UsageError(f"--good {good_ref} and --bad {bad_ref} are the same commit {good[:12]}: nothing to search")
    if not is_ancestor(repo, good, bad):
        raise UsageError(f"--good {good_ref} ({good[:12]}) is not an ancestor of --bad {bad_ref} ({bad[:12]}): "
                         "bisect searches the history from the good end to the bad one")
    return good, bad, first_parent_range(repo, good, bad)


@dataclass(frozen=True)
class BisectRange:
    """What a bisection searches: its good and bad ends, which benchmarks (None: every one), the
    metric as the user names it (`--metric`), and how often an inconclusive probe is run again."""

    good_ref: str
    bad_ref: str
    benchmarks: list[str] | None = None
    metric: str = "step_time"
    extensions: int = EXTENSIONS


def run_bisect(spec: Spec, ov: Overrides, search: BisectRange, *, measure: Measure | None = None,
               log: Callable[[str], None] = stderr_log, change_point: dict | None = None) -> dict:
    """The bisect@1 document: the ends, the steps and every probe (module doc); `change_point`: the
    nightly step it explains, part of the document as it is built."""
    good_ref, bad_ref = search.good_ref, search.bad_ref
    repo = toplevel(spec.path.resolve().parent)
    if repo is None:
        raise UsageError(f"{spec.path} is not inside a git repository — bisect searches its history")
    names = _names(spec, search.benchmarks)
    keys = {b.name: _metric(search.metric, b) for b in spec.benchmarks if b.name in names}
    key, quality = keys[names[0]]
    good, bad, commits = resolve_range(repo, good_ref, bad_ref)
    t0 = time.monotonic()
    created = bisect_doc.now()
    log(f"profopt: bisect: {len(commits)} first-parent commit(s) from {good[:12]} to {bad[:12]}; "
        f"comparing the ends first ({', '.join(names)})")
    run = Bisection(repo=repo, good=good, bad=bad, commits=commits,
                    measure=measure or CompareMeasure(spec, ov, key, quality, log), extensions=search.extensions, log=log)
    final, attempts, _ = run.estimate(good, bad, names)
    ends, steps = [], []
    for n in names:
        obs = final[n]
        searched = obs["verdict"] in CHANGED
        ends.append({"benchmark": n, "estimate": obs, "attempts": attempts[n], "searched": searched})
        log(f"profopt: bisect: {n}: the ends: {_said(obs)}" + ("" if searched else " — not searched"))
        if searched:
            steps += run.steps(n, obs["verdict"], obs)
    failed = [e["benchmark"] for e in ends if e["estimate"]["verdict"] == "failed"]
    tau = make_plan(spec, ov).spec.benchmarks[0].settings.threshold
    first = min(steps, key=lambda st: commits.index(st["commit"]), default=None)
    doc = bisect_doc.build(created=created, first_bad=first, good=(good_ref, good), bad=(bad_ref, bad), metric=key, threshold_pct=tau,
                           hardware_label=ov.hardware_label or spec.hardware_label, commits=len(commits), ends=ends,
                           steps=steps, probes=run.probes, notes=[*_notes(ends, failed, run.notes), *_unreached(run.probes)],
                           seconds=time.monotonic() - t0, change_point=change_point)
    if failed and len(failed) == len(names):
        raise BisectFailed(doc, f"the ends could not be compared: {', '.join(failed)} failed "
                                f"({ends[0]['estimate'].get('error', 'failed')})")
    return doc


class BisectFailed(InfraError):
    """The ends did not run: exit 3, with the document of what was found written anyway."""

    def __init__(self, doc: dict, message: str) -> None:
        super().__init__(message)
        self.doc = doc


def _names(spec: Spec, wanted: list[str] | None) -> list[str]:
    known = [b.name for b in spec.benchmarks]
    missing = [n for n in wanted or [] if n not in known]
    if missing:
        raise UsageError(f"--benchmark {', '.join(missing)}: no such benchmark in {spec.path} — expected one of "
                         f"{', '.join(known)}")
    return list(dict.fromkeys(wanted)) if wanted else known


def _metric(metric: str, bench) -> tuple[str, bool]:
    try:
        return bisection.metric_key(metric, [c.metric for c in bench.constraints])
    except ValueError as exc:
        raise UsageError(f"--metric {exc} (benchmark {bench.name})") from None


def _unreached(probes: list[dict]) -> list[dict]:
    """The probes not measured because the commit's change does not reach the benchmark (measure:
    changed): each benchmark's skipped commits, listed."""
    out: dict[str, list[str]] = {}
    for p in probes:
        if p["estimate"].get("reached") is False:
            out.setdefault(p["benchmark"], []).append(p["commit"][:12])
    return [message("note.bisect_unreached", bench=b, n=len(c), commits=c) for b, c in out.items()]


def _notes(ends: list[dict], failed: list[str], found: list[dict]) -> list[dict]:
    quiet = [e["benchmark"] for e in ends if not e["searched"] and e["benchmark"] not in failed]
    notes = list(found)
    if quiet:
        notes.insert(0, message("note.bisect_quiet", names=quiet))
    if failed:
        notes.insert(0, message("note.bisect_failed", names=failed))
    return notes
