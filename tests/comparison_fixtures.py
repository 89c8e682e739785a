"""Realistic `profopt/comparison@1` documents for the report tests and bench/report_render.py, made
the way `compare` and `diff` make them (pipeline/compare_refs.py, pipeline/diff_results.py).

Only what a machine measures is made here: each side's samples (seeded log-normal noise around the
given medians, so the same call always gives the same document), quality traces, profile summaries
and instruction counts. Every statement — metric verdicts and reasons, constraint details, each
benchmark's decision and reason, the summary, the notes, the bottleneck note — is what analyze/,
pipeline/ and documents/ write from them: `comparison` runs build_entry, finish, annotate and
documents.comparison.build, and returns the document as its JSON file holds it.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, replace

import msgspec

from profopt_ci.analyze import instruction_entries
from profopt_ci.analyze.bottleneck import annotate
from profopt_ci.analyze.judge import ALPHA, build_entry, finish
from profopt_ci.documents import comparison as comparison_doc
from profopt_ci.documents import results as results_doc
from profopt_ci.documents.decode import view
from profopt_ci.pipeline.diff_results import run_diff
from profopt_ci.pipeline.entries import differences, outlier_notes, verdict
from profopt_ci.specfile.load import Benchmark, parse_spec
from profopt_ci.words.i18n import message

FINGERPRINT = {"cpu_model": "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", "cpu_count": 2,
               "memory_gb": 24.0, "os": "Linux-6.8.0-x86_64-with-glibc2.39", "python": "3.11.7",
               "numpy": "2.4.6", "torch": "2.13.0", "cuda": None, "gpu_name": None, "gpu_driver": None}
BASE_SHA = "40a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3"
HEAD_SHA = "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432"
CREATED = "2026-11-29T16:00:00+00:00"
PHASE_SHARES = {"data_loading": 0.09, "forward": 0.32, "backward": 0.42, "optimizer": 0.17}

# The spec the benchmarks are judged by: a goal on step time and a loss to hold (train-step: its
# output digest too). A benchmark of another name is judged as `fixture` is.
SPEC = parse_spec("""version: 1
hardware_label: cpu-2vcpu
env: {OMP_NUM_THREADS: '1'}
defaults: {quality_steps: 5}
benchmarks:
  - name: fixture
    callable: 'train:step'
    unit: samples
    goal: {metric: step_time, direction: decrease, target: 10%}
    constraints: [{metric: loss, rel_tol: 0.01}]
  - name: train-step
    callable: 'train:step'
    unit: samples
    goal: {metric: step_time, direction: decrease, target: 10%}
    constraints: [{metric: loss, rel_tol: 0.01}, {metric: output_digest, equal: true}]
""", "profopt.yml")
JUDGED, DIGEST = SPEC.benchmarks
PLAIN = replace(JUDGED, goal=None, constraints=[])  # no goal, nothing to hold


@dataclass
class Measured:
    """One benchmark as a compare measured it: how it is judged, each side's {status, error,
    samples, quality}, the profiles and instruction counts when taken, base's own params."""

    bench: Benchmark
    base: dict
    head: dict
    profiles: dict | None = None
    counted: dict | None = None
    base_params: dict | None = None


def samples(rng: random.Random, median_ms: float, rounds: int, *, cv: float = 0.02, items: int = 64,
            memory_mb: float = 210.5, loss: float = 2.301, order: int = 0, slow: tuple[int, ...] = ()) -> list[dict]:
    """One side's rounds; the rounds in `slow` ran half again as long (a machine's hiccup)."""
    out = []
    for r in range(rounds):
        step = median_ms * math.exp(rng.gauss(0.0, cv)) * (1.5 if r in slow else 1.0)
        values = sorted(step * math.exp(rng.gauss(0.0, cv / 2)) for _ in range(3))
        out.append({
            "round": r, "order": (r + order) % 2, "step_time_ms": _ms(values[1]),
            "values_ms": [_ms(v) for v in values], "loops": 8,
            "throughput": round(items / (values[1] / 1000.0), 1),
            "peak_memory_mb": round(memory_mb * math.exp(rng.gauss(0.0, 0.002)), 1),
            "cpu_time_ms": None, "cuda_max_allocated_mb": None, "cuda_max_reserved_mb": None,
            "phases_ms": {k: round(values[1] * s, 3) for k, s in PHASE_SHARES.items()},
            "quality": {"loss": loss, "output_digest": "9f1c2e"},
        })
    return out


def _ms(value: float) -> float:
    return round(value, 4) if value >= 1 else float(f"{value:.5g}")  # tiny's µs keep their figures


def trace(loss: float, steps: int = JUDGED.settings.quality_steps) -> dict:
    """A side's quality pass: the loss and the output digest at each step."""
    return {"steps": steps, "values": {"loss": [loss] * steps, "output_digest": ["9f1c2e"] * steps}}


def profile(step_ms: float, side: str = "base", *, scale_gemm: float = 1.0, hostile_op: str | None = None) -> dict:
    ops = [("aten::addmm", 0.38 * scale_gemm, "gemm"), ("aten::mm", 0.12 * scale_gemm, "gemm"),
           ("aten::gelu", 0.09, "elementwise"), ("aten::native_layer_norm", 0.07, "norm"),
           ("aten::copy_", 0.05, "copy"), ("Optimizer.step#AdamW.step", 0.11, "optimizer")]
    if hostile_op:
        ops.append((hostile_op, 0.04, "other"))
    return {
        "kind": "torch", "reason": None, "trace_path": f"profiles/train-step-{side}.json",
        "step_time_ms": step_ms, "phases": {k: round(step_ms * s, 3) for k, s in PHASE_SHARES.items()},
        "phase_shares": dict(PHASE_SHARES),
        "ops": [{"name": n, "self_ms": round(step_ms * s, 3), "total_ms": round(step_ms * s * 1.05, 3),
                 "calls": 6, "category": cat, "self_memory_mb": 0.0, "flops": 1.2e9} for n, s, cat in ops],
        "counters": {"ops_per_step": 120, "small_ops_share": 0.4, "sync_ms": 0.0, "python_share": 0.1,
                     "flops_per_step": 2.4e9, "bytes_per_step": None},
        "machine": {"matmul_gflops": 80.0, "copy_gbps": 9.0, "ridge_flops_per_byte": 8.9},
    }


def benchmark(name: str, base_ms: float, head_ms: float, *, cv: float = 0.02, rounds: int = 20, seed: int = 0,
              memory: tuple[float, float] = (210.5, 211.0), loss: tuple[float, float] = (2.301, 2.305),
              bench: Benchmark = JUDGED, with_profile: bool = True, slow: tuple[int, ...] = (),
              hostile_op: str | None = None, params: tuple[dict, dict] | None = None) -> Measured:
    """A benchmark both sides ran: `rounds` rounds around the medians, each side's quality pass, a
    profile of each side. `slow`: head's rounds that a hiccup slowed (outliers); `params`: base's
    and head's, when they differ."""
    rng = random.Random(seed)
    sides = [{"status": "ok", "error": None, "quality": trace(value),
              "samples": samples(rng, ms, rounds, cv=cv, memory_mb=mb, loss=value, order=k, slow=slow if k else ())}
             for k, (ms, mb, value) in enumerate(zip((base_ms, head_ms), memory, loss, strict=True))]
    profiles = {"base": profile(base_ms),
                "head": profile(head_ms, "head", scale_gemm=head_ms / base_ms, hostile_op=hostile_op)}
    base_params, head_params = params or (None, bench.params)
    return Measured(replace(bench, name=name, params=head_params), *sides, profiles=profiles if with_profile else None,
                    base_params=base_params)


def failed_benchmark(name: str, side: str, error: str) -> Measured:
    """A benchmark whose `side` failed before any round: `error` is its worker's stderr tail."""
    sides = {s: {"status": "ok", "error": None, "samples": []} for s in ("base", "head")}
    sides[side] = {"status": "failed", "error": error, "samples": []}
    return Measured(replace(JUDGED, name=name), sides["base"], sides["head"])


def meta(side: str, env: dict | None = None) -> dict:
    ref, commit = ("main", BASE_SHA) if side == "base" else ("HEAD", HEAD_SHA)
    return {"ref": ref, "commit": commit, "fingerprint": dict(FINGERPRINT), "env": env or dict(SPEC.env)}


def comparison(measured: list[Measured], decision: str | None = None, *, notes: list | None = None,
               head_env: dict | None = None, same_commit: bool = False) -> dict:
    """The comparison a compare of `measured` writes (compare_run.entries_of and .comparison), as its
    JSON file holds it. `decision`: the one the fixture is meant to reach, checked."""
    entries = [instruction_entries.merge(build_entry(m.bench, m.base, m.head, paired=True, alpha=ALPHA), m.bench,
                                         m.counted) for m in measured]
    entries = instruction_entries.mark_failures(finish(entries, {m.bench.name: m.bench for m in measured}))
    entries = [annotate(e, m.profiles) if m.profiles and e["decision"] != "failed" else e
               for e, m in zip(entries, measured, strict=True)]
    sides = meta("base"), meta("head", head_env)
    if same_commit:
        sides[1]["commit"] = BASE_SHA
        notes = [message("note.aa"), *(notes or [])]
    pairs = [(m.bench if m.base_params is None else replace(m.bench, params=m.base_params), m.bench) for m in measured]
    doc = comparison_doc.build(
        mode="paired", hardware_label=SPEC.hardware_label, entries=entries, verdict=verdict(entries), base=sides[0],
        head=sides[1], diffs=differences(pairs, *sides), seed=1234, notes=[*(notes or []), *outlier_notes(entries)],
        threshold_pct=JUDGED.settings.threshold, confidence=1 - ALPHA)
    return _file(doc, decision)


def _file(doc: msgspec.Struct, decision: str | None) -> dict:
    """The document as json.loads of its file gives it; its clock pinned, so a call gives the same dict."""
    out = {**msgspec.to_builtins(doc), "created": CREATED}
    assert decision is None or out["decision"] == decision, f"the fixture meant {decision}, made {out['decision']}"
    return out


# ---- the named fixtures ------------------------------------------------------------------------

def keep() -> dict:
    return comparison([benchmark("train-step", 14.2, 12.4, bench=DIGEST)], "keep")


def reject_constraint() -> dict:
    a = benchmark("train-step", 14.2, 13.3, seed=1, loss=(2.301, 2.412))
    b = benchmark("eval-step", 3.10, 3.11, cv=0.01, seed=2, with_profile=False)
    return comparison([b, a], "reject")


def trade_off() -> dict:
    b = benchmark("train-step", 14.2, 11.6, memory=(210.5, 276.0), seed=3,
                  params=({"batch_size": 64}, {"batch_size": 128}))
    return comparison([b], "trade-off", head_env={"OMP_NUM_THREADS": "2"})


TRACEBACK = """Traceback (most recent call last):
  File "/work/bench/train.py", line 41, in step
    out = model(x)
  File "/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1553, in _call_impl
    return forward_call(*args, **kwargs)
RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x128 and 256x10)"""


def failed() -> dict:
    bad = failed_benchmark("train-step", "head", "worker stderr:\n" + TRACEBACK)
    ok = benchmark("eval-step", 3.10, 3.08, seed=4)
    return comparison([ok, bad], "failed")  # a failure is said by its benchmark's error, not by a note


def inconclusive() -> dict:
    a = benchmark("train-step", 14.2, 14.03, cv=0.06, rounds=60, seed=5)
    b = benchmark("data-load", 5.0, 5.0, cv=0.04, rounds=60, seed=6, slow=tuple(range(0, 60, 7)), with_profile=False)
    return comparison([a, b], "inconclusive")


def aa() -> dict:
    """An A/A run (base and head the same commit) that ended inconclusive: noise, not a speed-up. A
    pure-Python step: profiled by cProfile, where no resource dominates."""
    a = benchmark("word-lengths", 6.02, 6.0, cv=0.05, rounds=40, seed=8, with_profile=False)
    ops = [("<method 'split' of 'str' objects>", 3.4, "builtin"), ("words.py(word_lengths)", 2.6, "python")]
    words = {"kind": "cprofile", "reason": None, "trace_path": None, "step_time_ms": 6.0, "phases": {},
             "phase_shares": {}, "counters": {"calls_per_step": 401, "python_share": 0.43},
             "ops": [{"name": n, "self_ms": ms, "total_ms": ms, "calls": 1, "category": cat} for n, ms, cat in ops]}
    a.profiles = {"base": words, "head": words}
    return comparison([a], "inconclusive", same_commit=True)


def no_change() -> dict:
    return comparison([benchmark(f"bench-{i}", 5.0 + i, 5.0 + i + 0.01, cv=0.01, seed=10 + i, with_profile=False)
                       for i in range(3)], "no-change")


def unpaired() -> dict:
    """`diff` of two stored results@1 (pipeline/diff_results.py): keep's measurements, unpaired."""
    m = benchmark("train-step", 14.2, 12.4, bench=DIGEST)
    stored = []
    for side, commit in ((m.base, BASE_SHA), (m.head, HEAD_SHA)):
        results = results_doc.new_results(SPEC, commit=commit, dirty=False, fingerprint=dict(FINGERPRINT), rounds=20)
        results["benchmarks"][m.bench.name] = {**results_doc.new_entry(m.bench), **side}
        stored.append(view(results_doc.build(results)))
    return _file(run_diff(SPEC, *stored), "keep")


def bare() -> dict:
    """A keep with nothing optional: no bottleneck, profile, differences, samples or notes."""
    c = comparison([benchmark("tiny", 0.00123, 0.00101, memory=(12.0, 12.0), bench=PLAIN, with_profile=False)],
                   "keep")
    # Hand-made: a file without its rounds' samples (the model allows it; no producer writes one).
    c["benchmarks"][0]["samples"] = {"base": [], "head": []}
    return c


def hostile() -> dict:
    """Untrusted PR content in every field a PR can reach."""
    name = "a|b<script>@team"
    b = benchmark(name, 10.0, 11.5, seed=7, hostile_op="aten::<img src=x>|@ops", slow=(3, 9, 15),
                  params=({"mode|x": "<b>"}, {"mode|x": "[x](javascript:alert(1)) </details> @here"}))
    return comparison([b], "reject")


def many(n: int = 500) -> dict:
    benches = []
    for i in range(n):
        name = f"suite-{i // 50:02d}/bench-{i:03d}"
        if i % 97 == 5:
            benches.append(benchmark(name, 8.0, 8.9, seed=i, memory=(300.0, 301.0)))
        elif i % 61 == 3:
            benches.append(benchmark(name, 8.0, 6.9, seed=i))
        elif i % 149 == 7:
            benches.append(benchmark(name, 8.0, 7.9, cv=0.06, seed=i))
        else:
            benches.append(benchmark(name, 8.0 + i % 7, 8.0 + i % 7 + 0.02, cv=0.01, seed=i, with_profile=i % 5 == 0))
    return comparison(benches, "reject")


def huge_error_tail(n_failed: int = 30, tail_chars: int = 200_000) -> dict:
    """Many failed benchmarks, each with an enormous stderr tail that tries to break the comment."""
    noise = "warning: something chatty ``` </details> <!-- profopt:end noise --> @team\n"
    error = (noise * (tail_chars // len(noise) + 1))[:tail_chars] + "\n" + TRACEBACK
    benches = [failed_benchmark(f"gpu-bench-{i:02d}", "head" if i % 3 else "base", error) for i in range(n_failed)]
    return comparison([*benches, benchmark("train-step", 14.2, 12.4, seed=99)], "failed")


def instructions() -> dict:
    """instrument: instructions only (no walltime rounds): a pure-Python loop with 1% more work."""
    counts = {"base": (3209379.75, {"_PyObject_MakeTpCall": 990135.9, "x_add": 288804.0}),
              "head": (3242954.75, {"_PyObject_MakeTpCall": 1000035.9, "x_add": 292904.0})}
    counted = {side: {"status": "ok", "n": 8, "runs": [ir, ir], "instructions": ir, "est_cycles_runs": [],
                      "est_cycles": None, "functions": functions,
                      "objects": dict.fromkeys(functions, "libpython3.11.so.1.0")}
               for side, (ir, functions) in counts.items()}
    bench = replace(PLAIN, name="loop", unit="items", settings=msgspec.structs.replace(PLAIN.settings, instrument=("instructions",)))
    idle = {"status": "ok", "error": None, "samples": []}
    return comparison([Measured(bench, idle, idle, counted=counted)], "reject", notes=[message("instr.what")])


ALL = {"keep": keep, "reject_constraint": reject_constraint, "trade_off": trade_off, "failed": failed,
       "inconclusive": inconclusive, "aa": aa, "no_change": no_change, "unpaired": unpaired, "bare": bare,
       "hostile": hostile, "many": many, "huge_error_tail": huge_error_tail,
       "instructions": instructions}
