"""`profopt compare` and `profopt diff`: base vs head, to a `profopt/comparison@1`.

compare: both checkouts prepared and set up before any measurement; then paired rounds — lockstep
(both workers live, pinned to one CPU set, value by value) or RMIT (base and head once each per
round, fresh processes, seeded random order), per the plan; a benchmark whose step time is still
inconclusive (or unstable) gets more rounds, look by look up to `max_rounds`, with α spent across the looks so
looking again cannot manufacture significance. diff: the same analysis over two stored results
files, unpaired, and said to be weaker.
"""
from __future__ import annotations

import random
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from profopt_ci import __version__
from profopt_ci.analyze import instructions as instr_merge
from profopt_ci.analyze import stats
from profopt_ci.analyze.decide import (
    SPEED,
    apply_multiplicity,
    check_constraint,
    compare_metrics,
    counts,
    decide_benchmark,
    goal_status,
    overall,
    summary_sentence,
)
from profopt_ci.documents.results import COMPARISON_SCHEMA, now_iso
from profopt_ci.errors import InfraError, UsageError
from profopt_ci.gitutil import toplevel
from profopt_ci.measure import instructions
from profopt_ci.measure.checkouts import (
    load_state,
    open_workspace,
    prepare_sides,
    resolve_refs,
)
from profopt_ci.measure.cpus import format_cpuset
from profopt_ci.measure.fingerprint import MATERIAL
from profopt_ci.measure.processes import Side, fingerprint, run_setup
from profopt_ci.measure.rounds import RoundState, run_rounds, stderr_log
from profopt_ci.pipeline.guards import interrupt_safe, measure_new, new_entries, new_note, tree_dirty
from profopt_ci.profile.sides import annotate, profile_all
from profopt_ci.spec.load import Benchmark, Spec, resolve_settings
from profopt_ci.spec.plan import Plan

ALPHA = 0.01


# ---- analysis shared by compare and diff ---------------------------------------------------------


def build_entry(bench: Benchmark, base: dict, head: dict, *, paired: bool, alpha: float | None = None) -> dict:
    """One benchmark of a comparison; `base`/`head` are {status, error, samples}."""
    entry: dict = {
        "name": bench.name,
        "unit": bench.unit,
        "goal": None,
        "status": {"base": base["status"], "head": head["status"]},
        "error": None,
        "rounds": min(len(base["samples"]), len(head["samples"])),
        "outlier_rounds": 0,
        "metrics": {},
        "constraints": [],
        "bottleneck": None,
        "profile": None,
        "samples": {"base": base["samples"], "head": head["samples"]},
    }
    failed = [(side, d) for side, d in (("base", base), ("head", head)) if d["status"] != "ok"]
    counted_only = not base["samples"] and not head["samples"] and (base.get("instructions") or head.get("instructions"))
    if "walltime" in bench.settings.instrument and not counted_only:  # instructions-only: no timed samples
        failed = failed or [(side, {**d, "status": "failed", "error": "no samples were measured"})
                            for side, d in (("base", base), ("head", head)) if not d["samples"]]
    if failed:
        side, d = failed[0]
        entry["error"] = {"side": side, "status": d["status"], "message": d.get("error") or d["status"]}
        entry["decision"] = "failed"
        entry["reason"] = f"{side} {d['status']}: {(d.get('error') or '').splitlines()[0] if d.get('error') else ''}".rstrip(": ")
        return entry
    metrics = compare_metrics(bench, base["samples"], head["samples"], paired=paired, alpha=alpha)
    entry["metrics"] = metrics
    entry["outlier_rounds"] = metrics.get(SPEED, {}).get("outliers", 0)
    entry["constraints"] = [check_constraint(c, base["samples"], head["samples"]) for c in bench.constraints]
    entry["goal"] = goal_status(bench, metrics)
    return entry


def finish(entries: list[dict], benches: dict[str, Benchmark]) -> None:
    """Multiplicity across benchmarks, then each decision."""
    apply_multiplicity([e for e in entries if e.get("decision") != "failed"])
    for e in entries:
        if e.get("decision") == "failed":
            continue
        e["decision"], e["reason"] = decide_benchmark(benches[e["name"]], e["metrics"], e["constraints"])


def differences(spec_pairs: list[tuple[Benchmark, Benchmark]], base: dict, head: dict) -> list[dict]:
    """Anything besides code that differs between the sides: params, env, the machine."""
    out = []
    for b, h in spec_pairs:
        for key in sorted(set(b.params) | set(h.params)):
            if b.params.get(key) != h.params.get(key):
                out.append({"scope": "params", "benchmark": h.name, "key": key,
                            "base": b.params.get(key), "head": h.params.get(key)})
        for key in sorted(set(b.env) | set(h.env)):
            if b.env.get(key) != h.env.get(key):
                out.append({"scope": "env", "benchmark": h.name, "key": key, "base": b.env.get(key), "head": h.env.get(key)})
    for key in sorted(set(base.get("env") or {}) | set(head.get("env") or {})):
        bv, hv = (base.get("env") or {}).get(key), (head.get("env") or {}).get(key)
        if bv != hv:
            out.append({"scope": "env", "benchmark": None, "key": key, "base": bv, "head": hv})
    bf, hf = base.get("fingerprint") or {}, head.get("fingerprint") or {}
    for key in sorted(set(bf) | set(hf)):
        if bf.get(key) != hf.get(key):
            out.append({"scope": "fingerprint", "benchmark": None, "key": key, "base": bf.get(key),
                        "head": hf.get(key), "material": key in MATERIAL})
    return out


def assemble(*, mode: str, hardware_label: str, entries: list[dict], base: dict, head: dict, diffs: list[dict],
             seed: int | None, notes: list[str], threshold_pct: float | None) -> dict:
    rounds = max((e["rounds"] for e in entries), default=0)
    if diffs:
        scopes = sorted({d["scope"] for d in diffs})
        notes = [f"not only the code differs between base and head: {', '.join(scopes)} (see differences)", *notes]
    return {
        "schema": COMPARISON_SCHEMA,
        "tool_version": __version__,
        "created": now_iso(),
        "mode": mode,
        "hardware_label": hardware_label,
        "seed": seed,
        "rounds": rounds,
        "threshold_pct": threshold_pct,
        "confidence": 1 - ALPHA,
        "base": base,
        "head": head,
        "differences": diffs,
        "decision": overall(entries),
        "summary": summary_sentence(entries),
        "counts": counts(entries),
        "notes": notes,
        "benchmarks": entries,
    }


# ---- compare: two checkouts, interleaved rounds ---------------------------------------------------


def _side_meta(side: Side, fp: dict | None, plan: Plan) -> dict:
    env = dict(plan.side_spec(side.name).env)
    return {"ref": side.ref, "commit": side.commit, "fingerprint": fp or {}, "env": env}


def _setup_sides(sides: list[Side], plan: Plan, log) -> dict[str, str]:
    """Run each side's setup; returns {side: error} for the sides whose setup failed."""
    failures = {}
    for side in sides:
        try:
            run_setup(plan.side_spec(side.name), side, log)
        except InfraError as exc:
            log(f"profopt: {exc}")
            failures[side.name] = str(exc)
    return failures


def _mark_failed(state: RoundState, benches: list[Benchmark], failures: dict[str, str]) -> None:
    for side, error in failures.items():
        for b in benches:
            t = state.track(b.name, side)
            t.status, t.error = "failed", error


def sequential_rounds(plan: Plan, benches: list[Benchmark], sides: list[Side], state: RoundState, work: Path,
                      rng: random.Random, log) -> dict[str, float]:
    """Rounds look by look; returns the α spent at each benchmark's final look."""
    plans = {b.name: stats.plan_looks(b.settings.rounds, b.settings.max_rounds) for b in benches}
    look = {b.name: 0 for b in benches}
    final_alpha = {b.name: ALPHA for b in benches}
    live = [s for s in sides if any(state.track(b.name, s.name).status == "ok" for b in benches)]
    done: set[str] = set()
    r = 0
    while True:
        active = [b for b in benches if b.name not in done and state.ok(b.name, live)]
        if not active or len(live) < 2:
            # A side failed before measuring: still measure the one that works, so its results are kept.
            for b in benches:
                alone = [s for s in live if state.track(b.name, s.name).status == "ok"]
                if len(alone) == 1 and not state.track(b.name, alone[0].name).samples:
                    run_rounds(plan, [b], alone, state, work, start=0, stop=b.settings.rounds,
                               total=b.settings.rounds, rng=rng, log=log)
            return final_alpha
        for b in active:
            run_rounds(plan, [b], live, state, work, start=r, stop=r + 1, total=plans[b.name][look[b.name]], rng=rng, log=log)
        r += 1
        for b in active:
            looks, k = plans[b.name], look[b.name]
            if r < looks[k] or not state.ok(b.name, live):
                continue
            alpha = stats.spent_alpha(k + 1, len(looks), ALPHA)
            final_alpha[b.name] = alpha
            entry = build_entry(plan.judged(b.name), _track_dict(state, b, "base"), _track_dict(state, b, "head"),
                                paired=True, alpha=alpha)
            verdict = entry["metrics"].get(SPEED, {}).get("verdict")
            # unstable too: outlier rounds are diluted by more rounds, and the estimate is robust to them
            if verdict in ("inconclusive", "unstable") and k + 1 < len(looks):
                look[b.name] = k + 1
                log(f"profopt: {b.name}: {verdict} after {r} rounds — extending to {looks[k + 1]}")
            else:
                done.add(b.name)


def _track_dict(state: RoundState, bench: Benchmark, side: str) -> dict:
    t = state.track(bench.name, side)
    return {"status": t.status, "error": t.error, "samples": t.samples}


def run_compare(
    plan: Plan,
    *,
    base_ref: str | None,
    head_ref: str | None,
    workdir: Path | None = None,
    phase: str = "all",
    log: Callable[[str], None] = stderr_log,
    on_partial: Callable[[dict], None] | None = None,
    trace_dir: Path | None = None,
) -> dict | None:
    """Measure base and head; returns the comparison (None after `--phase setup`)."""
    spec = plan.spec
    spec_path = spec.path.resolve()
    repo = toplevel(spec_path.parent)
    if repo is None:
        raise UsageError(f"{spec.path} is not inside a git repository — compare needs git history (use `profopt run`)")
    rel_spec = spec_path.relative_to(repo.resolve())
    dirty = tree_dirty(repo, log)
    benches = spec.benchmarks
    instructions.preflight(spec, benches)  # no valgrind: exit 2 before anything is set up
    state = RoundState()
    with open_workspace(repo, workdir) as ws:
        if phase == "measure":
            sides = load_state(ws, spec, rel_spec)
        else:
            refs = resolve_refs(repo, base_ref, head_ref)
            log(f"profopt: base {refs['base'][0]} = {refs['base'][1][:12]}, head {refs['head'][0]} = {refs['head'][1][:12]}")
            sides = prepare_sides(ws, spec, rel_spec, refs)
        for side in sides:
            plan.attach(side.name, side.spec, side.spec_note)
        base_side, head_side = sides
        if base_side.commit == head_side.commit:
            log(f"profopt: {AA_NOTE} — base and head are the same commit {head_side.commit[:12]}")
        if phase != "measure":
            ws.setup_failures = _setup_sides(sides, plan, log)
            if phase == "setup":
                ws.save_state()  # failures included: the measure phase reports them as failed sides
                if ws.setup_failures:
                    raise InfraError(f"setup failed on {', '.join(ws.setup_failures)}; prepared state saved in "
                                     f"{ws.root} — `--phase measure` reports it and measures the other side")
                return None
        _mark_failed(state, benches, ws.setup_failures)
        fps: dict[str, dict] = {}
        seed = spec.seed if spec.seed is not None else random.SystemRandom().randrange(2**32)
        benches, new = _split_new(benches, plan, base_side)
        extra_notes = new_note(new)
        extra_notes += _pairing_notes(plan, benches, log)

        def comparison(notes: list[str]) -> dict:
            entries, pairs = [], []
            for b in benches:
                pairs.append((plan.bench("base", b.name), plan.bench("head", b.name)))
                judged = plan.judged(b.name)
                entries.append(build_entry(judged, _track_dict(state, b, "base"),
                                           _track_dict(state, b, "head"), paired=True, alpha=alphas.get(b.name, ALPHA)))
                _pairing_of(entries[-1], plan, b)
                instr_merge.merge(entries[-1], judged, instr.get(b.name))  # instrument: instructions
            finish(entries, {b.name: plan.judged(b.name) for b in benches})
            instr_merge.mark_failures(entries)
            if instructions.wanted(benches):
                notes = [*notes, instructions.WHAT_IT_IS]
            for entry in entries:
                if entry["name"] in profiles and entry["decision"] != "failed":
                    annotate(entry, profiles[entry["name"]])
            base_meta, head_meta = (_side_meta(base_side, fps.get("base"), plan),
                                    _side_meta(head_side, fps.get("head"), plan))
            if base_side.commit == head_side.commit:
                notes = ["A/A: this measures noise only (base and head are the same commit)", *notes]
            out = assemble(mode="paired", hardware_label=plan.hardware_label, entries=entries, base=base_meta,
                           head=head_meta, diffs=differences(pairs, base_meta, head_meta) + plan.differences,
                           seed=seed, notes=[*plan.notes, *notes, *outlier_notes(entries)],
                           threshold_pct=spec.benchmarks[0].settings.threshold_pct)
            out["pairing"] = _overall_pairing(entries)
            return {**out, "dirty": dirty, "new_in_pr": new_entries(new, state)}

        alphas: dict[str, float] = {}
        profiles: dict[str, dict[str, dict]] = {}
        instr: dict[str, dict[str, dict]] = {}
        with tempfile.TemporaryDirectory(prefix="profopt-work-") as work:
            try:
                for side in sides:
                    fps[side.name] = fingerprint(side, plan.side_spec(side.name))
                timed = [b for b in benches if "walltime" in b.settings.instrument]
                alphas = sequential_rounds(plan, timed, sides, state, Path(work), random.Random(seed), log)
                measure_new(plan, [b for b in new if "walltime" in b.settings.instrument], head_side, state,
                            Path(work), random.Random(seed), log)
                profiles = profile_all(plan, timed, sides, state.measured, Path(work), trace_dir, log)
                # ---- instrument: instructions, after the walltime rounds (instructions.py) ----
                instr = instructions.measure_instructions(
                    spec, benches, sides, lambda b, s: state.track(b, s).status == "ok", Path(work), log)
            except KeyboardInterrupt:
                if on_partial is not None:
                    with interrupt_safe():  # a second Ctrl-C must not cut the partial file short
                        on_partial(comparison(["interrupted: partial results", *extra_notes]))
                raise
        return comparison(extra_notes)


AA_NOTE = "A/A: this measures noise only"


def _pairing_notes(plan: Plan, benches: list[Benchmark], log) -> list[str]:
    """Which pairing runs, said on the terminal now and in the report."""
    notes = []
    for b in benches:
        s = b.settings
        if s.pairing == "lockstep":
            cpus = format_cpuset(plan.cpus(b))
            how = ("whole processes alternated base/head, 3 pairs a round" if b.command is not None else
                   f"live workers driven value by value (~{s.value_ms:g} ms values, ~{s.round_ms:g} ms of pairs a round)")
            line = f"{b.name}: pairing lockstep — base and head pinned to CPU {cpus}, {how}"
        else:
            line = (f"{b.name}: pairing rounds — one fresh process per side per round, {s.values} values of "
                    f"≥ {s.min_time_ms:g} ms each")
        log(f"profopt: {line}")
        notes.append(line)
    return notes


def _pairing_of(entry: dict, plan: Plan, bench: Benchmark) -> None:
    entry["pairing"] = bench.settings.pairing
    entry["cpuset"] = format_cpuset(plan.cpus(bench)) if bench.settings.pairing == "lockstep" else None


def _overall_pairing(entries: list[dict]) -> dict:
    kinds = sorted({e["pairing"] for e in entries})
    sets = sorted({e["cpuset"] for e in entries if e.get("cpuset")})
    return {"kind": kinds[0] if len(kinds) == 1 else "mixed", "cpuset": sets[0] if len(sets) == 1 else (sets or None)}


def outlier_notes(entries: list[dict]) -> list[str]:
    """The outlier share of a step time whose CI decided anyway: a note, not a verdict."""
    out = []
    for e in entries:
        note = (e.get("metrics") or {}).get(SPEED, {}).get("outlier_note")
        if note:
            out.append(f"{e['name']}: {note}")
    return out


def _split_new(benches: list[Benchmark], plan: Plan, base: Side) -> tuple[list[Benchmark], list[Benchmark]]:
    """A pull request that adds a benchmark (or the spec itself) has nothing to compare it with: those
    are measured on head only (`new_in_pr`)."""
    if base.spec is None and base.spec_missing:
        return [], list(benches)
    known = {b.name for b in plan.side_spec("base").benchmarks}
    return [b for b in benches if b.name in known], [b for b in benches if b.name not in known]


# ---- diff: two stored results, unpaired ------------------------------------------------------------


def run_diff(spec: Spec | None, base: dict, head: dict) -> dict:
    """Compare two results@1 files. No pairing exists between their samples, so the test is unpaired."""
    names = [n for n in head["benchmarks"] if n in base["benchmarks"]]
    missing = sorted(set(base["benchmarks"]) ^ set(head["benchmarks"]))
    pairs = [(_bench_from_results(n, base["benchmarks"][n], spec), _bench_from_results(n, head["benchmarks"][n], spec))
             for n in names]
    entries = [build_entry(h, base["benchmarks"][h.name], head["benchmarks"][h.name], paired=False) for _, h in pairs]
    for e, (_, h) in zip(entries, pairs, strict=True):  # counted instructions, when both files have them
        counted = {k: side["benchmarks"][h.name].get("instructions") for k, side in (("base", base), ("head", head))}
        instr_merge.merge(e, h, counted if all(counted.values()) else None)
    finish(entries, {h.name: h for _, h in pairs})
    instr_merge.mark_failures(entries)
    notes = ["pairing was impossible: the two results were measured separately, not in interleaved rounds, "
             "so the figures are unpaired (Mann–Whitney U) and weaker: machine drift between the runs "
             "shows up as change"]
    if missing:
        notes.append(f"only in one of the files (not compared): {', '.join(missing)}")
    if base.get("hardware_label") != head.get("hardware_label"):
        notes.append(f"hardware labels differ: {base.get('hardware_label')} vs {head.get('hardware_label')}")
    if base.get("spec_hash") != head.get("spec_hash"):
        notes.append("the specs differ between the two results")
    notes += outlier_notes(entries)
    metas = [{"ref": r.get("commit"), "commit": r.get("commit"), "fingerprint": r.get("fingerprint") or {},
              "env": r.get("env") or {}} for r in (base, head)]
    threshold = pairs[0][1].settings.threshold_pct if pairs else None
    return assemble(mode="unpaired", hardware_label=head.get("hardware_label") or "default", entries=entries,
                    base=metas[0], head=metas[1], diffs=differences(pairs, *metas), seed=None, notes=notes,
                    threshold_pct=threshold)


def _bench_from_results(name: str, entry: dict, spec: Spec | None) -> Benchmark:
    """The spec's definition when there is one (constraints, goal, threshold), with the file's params."""
    params = entry.get("params") or {}
    if spec is not None:
        for b in spec.benchmarks:
            if b.name == name:
                return replace(b, params=params)
    return Benchmark(name=name, callable=None, command=None, params=params,
                     items_per_iteration=entry.get("items_per_iteration"), unit=entry.get("unit") or "items",
                     goal=None, constraints=[], env={}, settings=resolve_settings({}, {}))
