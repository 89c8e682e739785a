"""`baseline refresh --bisect`: a new change point in the nightly history, bisected to its commit.

In: the spec and overrides, the store, the repository; after a refresh stored tonight's run. Out:
one `profopt/bisect@1` per new change point in `.profopt/bisect/` (`<benchmark>-<to12>.json` and
`.md`, its `change_point` block saying which nightlies bound it), read by `baseline issues` on
the runner (publish/issues.py), which opens, updates and closes the issues.

A change point is new when the first run after it is among the newest `RECENT` runs: older ones
were found by an earlier nightly (their issue exists; `baseline issues` never duplicates it). One
that spans more than one first-parent commit is bisected on this runner between its two nightly
commits; one that spans a single commit names it without measuring.
"""
from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from profopt_ci.analyze import changepoints
from profopt_ci.documents import bisect as bisect_doc
from profopt_ci.documents.read import view
from profopt_ci.documents.results import save_json
from profopt_ci.documents.types_stored import Bisect
from profopt_ci.errors import ProfoptError, UsageError
from profopt_ci.filenames import file_part
from profopt_ci.gitutil import describe_commit, first_parent_range, git, toplevel
from profopt_ci.measure.rounds import stderr_log
from profopt_ci.pipeline.bisect_refs import BisectRange, run_bisect
from profopt_ci.report.bisect_md import render_bisect
from profopt_ci.specfile.model import Spec
from profopt_ci.specfile.plan import Plan
from profopt_ci.store.stores import at_or_before, open_store, save_change
from profopt_ci.words.i18n import message

RECENT = changepoints.MIN_SIZE + 2  # a step whose first run after it is this new was not seen before
HISTORY_N = changepoints.DEFAULT_N
OUT_DIR = Path(".profopt") / "bisect"


def history(spec: Spec, store: str | None, repo: Path, label: str, n: int = HISTORY_N) -> dict[str, dict]:
    """Per benchmark, the label's nightly series up to HEAD, oldest first (analyze.changepoints.series)."""
    runs = at_or_before(open_store(store, repo, push=False), repo, label, "HEAD", limit=n)
    return changepoints.series(runs)


def new_change_points(series: dict[str, dict], threshold_pct: float, recent: int = RECENT) -> list[dict]:
    """The change points whose first run after the step is among the newest `recent`, per benchmark."""
    out = []
    for name, s in series.items():
        values = s["values"]
        cps = changepoints.detect(values, min_pct=threshold_pct)
        ends = [c["index"] for c in cps[1:]] + [len(values)]  # where each step's after-segment ends
        for cp, nxt in zip(cps, ends[:len(cps)], strict=True):
            k = cp["index"]
            if k < len(values) - recent:
                continue
            out.append({"benchmark": name, "from_commit": s["commits"][k - 1], "to_commit": s["commits"][k],
                        "delta_pct": cp["delta_pct"], "p_value": cp["p_value"],
                        "before": statistics.median(values[max(0, k - recent):k]),
                        "after": statistics.median(values[k:nxt]), "from_date": s["dates"][k - 1],
                        "to_date": s["dates"][k]})
    return out


def _full(repo: Path, short: str) -> str:
    return git(["rev-parse", "--verify", f"{short}^{{commit}}"], repo)


def _one_commit(cp: dict, repo: Path, good: str, bad: str, label: str, tau: float) -> Bisect:
    """The document of a change point between two adjacent commits: the nightlies name it."""
    verdict = "regressed" if cp["delta_pct"] > 0 else "improved"
    effect = {"verdict": verdict, "delta_pct": cp["delta_pct"], "ci_low_pct": None, "ci_high_pct": None, "rounds": None}
    step = {"benchmark": cp["benchmark"], **describe_commit(repo, bad), "good_end": good, "effect": effect,
            "candidates": [describe_commit(repo, bad)]}
    return bisect_doc.build(created=bisect_doc.now(), first_bad=step, good=(None, good), bad=(None, bad),
                            metric=changepoints.METRIC, threshold_pct=tau, hardware_label=label, commits=1, ends=[],
                            steps=[step], probes=[], notes=[message("note.bisect_one_commit")], seconds=0.0,
                            change_point={"label": label, **cp})


def bisect_new(plan: Plan, *, store: str | None, repo: Path, tau: float, out_dir: Path = OUT_DIR,
               log: Callable[[str], None] = stderr_log, push: bool = True) -> list[Path]:
    """Each new change point of the plan's label as a bisect@1 in `out_dir` (bisected when it spans > 1
    commit), also kept in the store beside the label's runs for the site (`push`: as the refresh's); the files."""
    spec, ov, label = plan.spec, plan.overrides, plan.hardware_label
    found = new_change_points(history(spec, store, repo, label), tau)
    if not found:
        log(f"profopt: nightly: no new change point in the {label} history")
        return []
    written = []
    for cp in found:
        good, bad = _full(repo, cp["from_commit"]), _full(repo, cp["to_commit"])
        span = len(first_parent_range(repo, good, bad))
        log(f"profopt: nightly: {cp['benchmark']} moved {cp['delta_pct']:+.1f}% between {good[:12]} and {bad[:12]} "
            f"({span} commit(s)){': bisecting' if span > 1 else ''}")
        try:
            doc = (run_bisect(spec, ov, BisectRange(good, bad, [cp["benchmark"]]), log=log,
                              change_point={"label": label, **cp})
                   if span > 1 else _one_commit(cp, repo, good, bad, label, tau))
        except ProfoptError as exc:
            log(f"profopt: nightly: bisecting {cp['benchmark']} failed: {exc}")
            doc = getattr(exc, "doc", None)
            if doc is None:
                continue
        path = out_dir / f"{file_part(cp['benchmark'], 80)}-{file_part(bad[:12])}.json"
        save_json(doc, path)
        path.with_suffix(".md").write_text(render_bisect(view(doc)), encoding="utf-8")
        try:  # the bisection is in out_dir whatever the store says
            save_change(open_store(store, repo, push=push), doc)
        except ProfoptError as exc:
            log(f"profopt: nightly: could not keep {path.name} in the store ({exc}); the site will not name its culprit")
        first = doc.first_bad
        if first is not None:
            log(f"profopt: nightly: {cp['benchmark']}: first bad commit {first.commit[:12]} {first.subject!r}")
        written.append(path)
    return written


def latest_levels(series: dict[str, dict]) -> dict[str, tuple[float, str]]:
    """Per benchmark, the newest nightly value and its commit: what tells a reverted change."""
    return {name: (s["values"][-1], s["commits"][-1]) for name, s in series.items() if s["values"]}


def read_docs(source: Path, label: str) -> list[dict]:
    """The bisect@1 files of `refresh --bisect` in `source` for this label (none: an empty list)."""
    if not source.is_dir():
        return []
    docs = [bisect_doc.load_bisect(p) for p in sorted(source.glob("*.json"))]
    return [d for d in docs if (d.get("change_point") or {}).get("label") == label]


@dataclass(frozen=True)
class GitHubTarget:
    """Where `baseline issues` files its issues: the repository and the API (None: as `environ`, the
    Actions variables, says)."""

    repo: str | None = None
    api_url: str | None = None
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ)


def run_issues(plan: Plan, *, store: str | None, source: Path, github: GitHubTarget | None = None,
               lang: str = "en", log: Callable[[str], None] = stderr_log) -> int:
    """`baseline issues`: the issues of the plan label's change points in `source`, the reverted ones
    closed, the culprits in the job summary. Exit 0; 2 without repository or token; 3 when GitHub fails."""
    from profopt_ci.publish.comment import settings_from_env
    from profopt_ci.publish.issues import sync
    from profopt_ci.publish.rest import BOT_LOGIN, GitHubClient
    from profopt_ci.publish.step_outputs import append_summary

    spec, label, github = plan.spec, plan.hardware_label, github or GitHubTarget()
    root = toplevel(spec.path.resolve().parent)
    if root is None:
        raise UsageError(f"{spec.path} is not inside a git repository — the nightly history is read for its commits")
    docs = read_docs(source, label)
    settings = settings_from_env(github.environ, repo=github.repo, api_url=github.api_url)
    if settings.summary_path is not None:
        for doc in docs:
            append_summary(render_bisect(doc, lang), settings.summary_path)
    if not settings.repo or not settings.token:
        raise UsageError("baseline issues: missing the repository (GITHUB_REPOSITORY or --repo) or the token (GITHUB_TOKEN)")
    levels = latest_levels(history(spec, store, root, label))
    with GitHubClient(settings.api_url, settings.token) as client:
        author = client.authenticated_login() or BOT_LOGIN
        done = sync(client, settings.repo, docs, label=label, latest=levels, author=author, lang=lang)
    for d in done:
        log(f"profopt: issue #{d['number']} {d['action']}: {d['key']}")
    if not done:
        log(f"profopt: no change point issues to open or close for {label}")
    return 0
