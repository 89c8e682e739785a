"""Realistic `profopt/comparison@1` dicts for report tests and bench/report_render.py.

Shapes follow docs/data-model.md. Samples are generated from a seeded RNG (log-normal noise
around the given medians), so the same call always gives the same dict.
"""
from __future__ import annotations

import dataclasses
import math
import random

from profopt_ci.analyze import decide
from profopt_ci.analyze.bottleneck import note
from profopt_ci.specfile.load import parse_spec
from profopt_ci.specfile.model import Goal
from profopt_ci.words.i18n import message

FINGERPRINT = {"cpu_model": "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", "cpu_count": 2,
               "memory_gb": 24.0, "os": "Linux-6.8.0-x86_64-with-glibc2.39", "python": "3.11.7",
               "numpy": "2.4.6", "torch": "2.13.0", "cuda": None, "gpu_name": None, "gpu_driver": None}
BASE_SHA = "40a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3"
HEAD_SHA = "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432"
PHASE_SHARES = {"data_loading": 0.09, "forward": 0.32, "backward": 0.42, "optimizer": 0.17}


def metric(base: float, head: float, verdict: str, *, ci: tuple[float, float] | None = None,
           better: str = "lower", n: int = 20, p: float | None = None) -> dict:
    """One metric entry; CI/p null when `ci` is None (memory is judged on medians)."""
    delta = (head / base - 1.0) * 100.0
    lo, hi = ci if ci else (None, None)
    if p is None and ci:
        p = 1.9e-06 if verdict in ("improved", "regressed") else 0.41
    return {"base": base, "head": head, "delta_pct": round(delta, 2), "ci_low_pct": lo, "ci_high_pct": hi,
            "p_value": p, "p_adjusted": min(1.0, p * 2) if p is not None else None, "verdict": verdict,
            "better": better, "n": n}


def samples(rng: random.Random, median_ms: float, rounds: int, *, cv: float = 0.02, items: int = 64,
            memory_mb: float = 210.5, loss: float = 2.301, order: int = 0) -> list[dict]:
    out = []
    for r in range(rounds):
        step = median_ms * math.exp(rng.gauss(0.0, cv))
        values = sorted(step * math.exp(rng.gauss(0.0, cv / 2)) for _ in range(3))
        out.append({
            "round": r, "order": (r + order) % 2, "step_time_ms": round(values[1], 4),
            "values_ms": [round(v, 4) for v in values], "loops": 8,
            "throughput": round(items / (values[1] / 1000.0), 1),
            "peak_memory_mb": round(memory_mb * math.exp(rng.gauss(0.0, 0.002)), 1),
            "cpu_time_ms": None, "cuda_max_allocated_mb": None, "cuda_max_reserved_mb": None,
            "phases_ms": {k: round(values[1] * s, 3) for k, s in PHASE_SHARES.items()},
            "quality": {"loss": loss, "output_digest": "9f1c2e"},
        })
    return out


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


def _inverse(pct_change: float) -> float:
    """A step time change as the throughput change it implies."""
    return round((1.0 / (1.0 + pct_change / 100.0) - 1.0) * 100.0, 1)


def hot_diff(base: dict, head: dict) -> list[dict]:
    base_ms = {o["name"]: o["self_ms"] for o in base["ops"]}
    head_ms = {o["name"]: o["self_ms"] for o in head["ops"]}
    names = list(base_ms) + [n for n in head_ms if n not in base_ms]
    return [{"name": n, "base_ms": base_ms.get(n, 0.0), "head_ms": head_ms.get(n, 0.0),
             "delta_ms": round(head_ms.get(n, 0.0) - base_ms.get(n, 0.0), 3)} for n in names]


def benchmark(name: str, decision: str, base_ms: float, head_ms: float, step_verdict: str, *,
              ci: tuple[float, float] | None = None, memory: tuple[float, float] = (210.5, 211.0),
              memory_verdict: str = "unchanged", rounds: int = 20, seed: int = 0, reason: str = "",
              constraints: list[dict] | None = None, bottleneck: dict | None = None,
              with_profile: bool = True, with_samples: bool = True, outlier_rounds: int = 0,
              hostile_op: str | None = None) -> dict:
    rng = random.Random(seed)
    delta = (head_ms / base_ms - 1) * 100
    ci = ci or (round(delta - 2.2, 1), round(delta + 2.2, 1))
    tp_verdict = {"improved": "improved", "regressed": "regressed"}.get(step_verdict, step_verdict)
    prof = None
    if with_profile:
        pb, ph = profile(base_ms), profile(head_ms, "head", scale_gemm=head_ms / base_ms, hostile_op=hostile_op)
        prof = {"base": pb, "head": ph, "hot_diff": hot_diff(pb, ph)}
    achieved = round(-delta, 2)
    goal = {"metric": "step_time_ms", "direction": "decrease", "target_pct": 10.0, "achieved_pct": achieved,
            "met": achieved >= 10.0 and step_verdict == "improved"}
    return {
        "name": name, "decision": decision,
        "reason": reason or f"step_time_ms {step_verdict} {abs(delta):.1f}%",
        "unit": "samples", "goal": goal,
        "status": {"base": "ok", "head": "ok"}, "error": None,
        "rounds": rounds, "outlier_rounds": outlier_rounds,
        "metrics": {
            "step_time_ms": metric(base_ms, head_ms, step_verdict, ci=ci, n=rounds),
            "throughput": metric(round(64000 / base_ms, 1), round(64000 / head_ms, 1), tp_verdict,
                                 ci=(_inverse(ci[1]), _inverse(ci[0])), better="higher", n=rounds),
            "peak_memory_mb": {**metric(memory[0], memory[1], memory_verdict, n=rounds),
                               "delta_mb": round(memory[1] - memory[0], 2),
                               "tolerance_mb": round(max(0.05 * memory[0], 4.0), 2)},
        },
        "constraints": constraints if constraints is not None else [rel_tol("loss", 2.301, 2.305, "0.17%")],
        "bottleneck": bottleneck,
        "profile": prof,
        "samples": {"base": samples(rng, base_ms, rounds, memory_mb=memory[0]),
                    "head": samples(rng, head_ms, rounds, memory_mb=memory[1], order=1)}
        if with_samples else {"base": [], "head": []},
    }


def rel_tol(metric: str, base: float, head: float, delta: str, limit: float = 0.01) -> dict:
    """A rel_tol constraint as analyze/decide writes one from the timed rounds' values."""
    ok = abs(head - base) / base <= limit
    detail = message("con.delta", delta=delta, op="≤" if ok else ">", limit=f"{limit * 100:g}%")
    return {"metric": metric, "rule": "rel_tol", "limit": limit, "base": base, "head": head, "ok": ok,
            "detail": detail["text"], "detail_msg": detail}


def failed_benchmark(name: str, side: str, message_: str, status: str = "failed") -> dict:
    statuses = {"base": "ok", "head": "ok", side: status}
    reason = message("reason.failed", side=side, status=status)
    return {"name": name, "decision": "failed", "reason": reason["text"], "reason_msg": reason, "unit": "samples",
            "goal": None,
            "status": statuses, "error": {"side": side, "message": message_}, "rounds": 0, "outlier_rounds": 0,
            "metrics": {}, "constraints": [], "bottleneck": None, "profile": None,
            "samples": {"base": [], "head": []}}


# Evidence and next actions as analyze/bottleneck.py writes them: messages, their English beside them.
COMPUTE = note("compute", [message("bottleneck.gemm_share", share=0.61),
                           message("bottleneck.intensity", intensity=42.0, ridge=8.9)], "next_action.compute", "compute")


# The spec a fixture's benchmarks were judged by: a goal on step time, as `benchmark` writes it.
JUDGED = dataclasses.replace(parse_spec("version: 1\nbenchmarks:\n  - {name: fixture, callable: 'm:f'}\n",
                                        "fixture.yml").benchmarks[0], goal=Goal("step_time_ms", "decrease", 10.0))


def judged(b: dict) -> dict:
    """The entry's reason as analyze/decide says it from the entry's figures (`reason_msg`); the
    English `reason` a fixture wrote by hand stays beside it (the English snapshots hold it)."""
    if "reason_msg" not in b:
        b["reason_msg"] = decide.decide_benchmark(JUDGED, b["metrics"], b["constraints"])[1]
    return b


def comparison(benches: list[dict], decision: str, *, mode: str = "paired", notes: list | None = None,
               differences: list[dict] | None = None, rounds: int = 20, summary: str | None = None) -> dict:
    """`summary`: a hand-written one (what a test of its text needs) in place of decide's."""
    said = decide.summary([judged(b) for b in benches])

    def count(pred) -> int:
        return sum(1 for b in benches if pred(b))

    def has(b: dict, verdict: str) -> bool:
        return any(m.get("verdict") == verdict for m in b["metrics"].values())

    return {
        "schema": "profopt/comparison@1", "tool_version": "0.1.0", "created": "2026-11-29T16:00:00+00:00",
        "mode": mode, "hardware_label": "cpu-2vcpu", "seed": 1234, "rounds": rounds,
        "threshold_pct": 3.0, "confidence": 0.99,
        "base": {"ref": "main", "commit": BASE_SHA, "fingerprint": dict(FINGERPRINT), "env": {"OMP_NUM_THREADS": "1"}},
        "head": {"ref": "HEAD", "commit": HEAD_SHA, "fingerprint": dict(FINGERPRINT), "env": {"OMP_NUM_THREADS": "1"}},
        "differences": differences or [],
        "decision": decision, **({"summary": said["text"], "summary_msg": said} if summary is None else {"summary": summary}),
        "counts": {"benchmarks": len(benches), "regressed": count(lambda b: has(b, "regressed")),
                   "improved": count(lambda b: has(b, "improved")),
                   "constraint_failures": count(lambda b: any(not c["ok"] for c in b["constraints"])),
                   "failed": count(lambda b: b["decision"] == "failed"),
                   "inconclusive": count(lambda b: b["decision"] == "inconclusive")},
        "notes": notes or [],
        "benchmarks": benches,
    }


# ---- the named fixtures ------------------------------------------------------------------------

def keep() -> dict:
    b = benchmark("train-step", "keep", 14.2, 12.4, "improved", ci=(-14.6, -10.1), bottleneck=COMPUTE,
                  reason="step_time_ms improved 12.4%; nothing regressed; constraints hold",
                  constraints=[rel_tol("loss", 2.301, 2.305, "0.17%"),
                             {"metric": "output_digest", "rule": "equal", "limit": True, "base": "9f1c2e",
                              "head": "9f1c2e", "ok": True, "detail": "identical on both sides",
                              "detail_msg": message("con.identical")}])
    b["metrics"]["step_time_ms"]["delta_pct"] = -12.4
    return comparison([b], "keep")


def reject_constraint() -> dict:
    broken = [rel_tol("loss", 2.301, 2.412, "4.82%")]
    a = benchmark("train-step", "reject", 14.2, 13.3, "improved", ci=(-8.4, -4.3), constraints=broken,
                  bottleneck=COMPUTE, reason="constraint loss broken: |Δ| 4.82% > 1%", seed=1)
    b = benchmark("eval-step", "no-change", 3.10, 3.11, "unchanged", ci=(-1.1, 1.8), seed=2,
                  reason="nothing moved beyond ±3%", with_profile=False)
    return comparison([b, a], "reject")


def trade_off() -> dict:
    b = benchmark("train-step", "trade-off", 14.2, 11.6, "improved", ci=(-20.3, -16.2), memory=(210.5, 276.0),
                  memory_verdict="regressed", seed=3, reason="step_time_ms improved 18.3%; peak_memory_mb regressed 31.1%",
                  bottleneck=note("memory capacity", [message("bottleneck.memory_metric", metric="peak_memory",
                                                              base=210.5, head=276.0, delta_pct=31.1)],
                                  "next_action.memory_regression", "memory regression"))
    diffs = [{"scope": "params", "benchmark": "train-step", "key": "batch_size", "base": 64, "head": 128},
             {"scope": "env", "benchmark": None, "key": "OMP_NUM_THREADS", "base": "1", "head": "2"}]
    c = comparison([b], "trade-off", differences=diffs)
    c["head"]["env"]["OMP_NUM_THREADS"] = "2"
    return c


TRACEBACK = """Traceback (most recent call last):
  File "/work/bench/train.py", line 41, in step
    out = model(x)
  File "/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1553, in _call_impl
    return forward_call(*args, **kwargs)
RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x128 and 256x10)"""


def failed() -> dict:
    bad = failed_benchmark("train-step", "head", "worker stderr:\n" + TRACEBACK)
    ok = benchmark("eval-step", "no-change", 3.10, 3.08, "unchanged", ci=(-1.9, 0.8), seed=4)
    return comparison([ok, bad], "failed")  # a failure is said by its benchmark's error, not by a note


def inconclusive() -> dict:
    a = benchmark("train-step", "inconclusive", 14.2, 14.03, "inconclusive", ci=(-4.0, 1.6), rounds=60, seed=5,
                  memory_verdict="unchanged", reason="CI [−4.0%, +1.6%] crosses ±3% after 60 rounds")
    a["metrics"]["throughput"]["verdict"] = "inconclusive"
    b = benchmark("data-load", "inconclusive", 5.0, 5.3, "unstable", ci=(-9.0, 21.0), rounds=60, seed=6,
                  outlier_rounds=9, reason="9 of 60 rounds were outliers", with_profile=False)
    b["metrics"]["throughput"]["verdict"] = "unstable"
    return comparison([a, b], "inconclusive", rounds=60)  # the reason says the rounds ran out


def aa() -> dict:
    """An A/A run (base and head the same commit) that ended inconclusive: noise, not a speed-up."""
    a = benchmark("word-lengths", "inconclusive", 6.02, 6.0, "inconclusive", ci=(-3.9, 3.4), rounds=40, seed=8,
                  reason="step time inconclusive: the change is within the noise at these rounds", with_profile=False,
                  bottleneck=note(None, [message("bottleneck.no_clear"), message("bottleneck.python_share", share=0.43),
                                         message("bottleneck.hottest", ops=[["words.py(word_lengths)", 3.1]])],
                                  "next_action.no_clear", None))
    a["metrics"]["step_time_ms"]["delta_pct"] = -0.3
    a["metrics"]["throughput"]["verdict"] = "inconclusive"
    a["goal"].update(achieved_pct=0.3, met=False)
    c = comparison([a], "inconclusive", rounds=40, notes=[message("note.aa")])
    c["head"]["commit"] = c["base"]["commit"]
    return c


def no_change() -> dict:
    benches = [benchmark(f"bench-{i}", "no-change", 5.0 + i, 5.0 + i + 0.01, "unchanged", ci=(-1.0, 1.3),
                         seed=10 + i, with_profile=False) for i in range(3)]
    return comparison(benches, "no-change")


def unpaired() -> dict:
    c = keep()
    c["mode"] = "unpaired"
    c["notes"] = [message("note.unpaired")]  # pipeline/diff_results.py's note
    return c


def bare() -> dict:
    """A keep with nothing optional: no bottleneck, profile, differences, samples or notes."""
    b = benchmark("tiny", "keep", 0.00123, 0.00101, "improved", ci=(-20.0, -15.5), with_profile=False,
                  with_samples=False, constraints=[], memory=(12.0, 12.0))
    b["goal"] = None
    return comparison([b], "keep")


def hostile() -> dict:
    """Untrusted PR content in every field a PR can reach."""
    name = "a|b<script>@team"
    b = benchmark(name, "reject", 10.0, 11.5, "regressed", ci=(12.0, 18.1), seed=7, hostile_op="aten::<img src=x>|@ops",
                  reason=f"{name} regressed </details> [x](javascript:alert(1))",
                  bottleneck={"class": "compute", "evidence": ["@org/perf-team see <details><summary>x"],
                              "next_action": "`rm -rf` | </details>"})
    diffs = [{"scope": "params", "benchmark": name, "key": "mode|x", "base": "<b>", "head": "@here"}]
    return comparison([b], "reject", differences=diffs, notes=[f"note about {name}"])


def many(n: int = 500) -> dict:
    benches = []
    for i in range(n):
        name = f"suite-{i // 50:02d}/bench-{i:03d}"
        if i % 97 == 5:
            benches.append(benchmark(name, "reject", 8.0, 8.9, "regressed", ci=(7.9, 14.4), seed=i,
                                     bottleneck=COMPUTE, memory=(300.0, 301.0)))
        elif i % 61 == 3:
            benches.append(benchmark(name, "keep", 8.0, 6.9, "improved", ci=(-16.3, -11.2), seed=i))
        elif i % 149 == 7:
            benches.append(benchmark(name, "inconclusive", 8.0, 7.9, "inconclusive", ci=(-4.4, 1.9), seed=i))
        else:
            benches.append(benchmark(name, "no-change", 8.0 + i % 7, 8.0 + i % 7 + 0.02, "unchanged",
                                     ci=(-1.2, 1.4), seed=i, with_profile=i % 5 == 0))
    return comparison(benches, "reject")


def huge_error_tail(n_failed: int = 30, tail_chars: int = 200_000) -> dict:
    """Many failed benchmarks, each with an enormous stderr tail that tries to break the comment."""
    noise = "warning: something chatty ``` </details> <!-- profopt:end noise --> @team\n"
    message = (noise * (tail_chars // len(noise) + 1))[:tail_chars] + "\n" + TRACEBACK
    benches = [failed_benchmark(f"gpu-bench-{i:02d}", "head" if i % 3 else "base", message) for i in range(n_failed)]
    benches.append(benchmark("train-step", "keep", 14.2, 12.4, "improved", ci=(-14.6, -10.1), seed=99))
    return comparison(benches, "failed")


def _count_metric(base_runs: list[float], head_runs: list[float], verdict: str, floor: float = 0.02) -> dict:
    """An instruction metric in instructions.instruction_change's shape (interval: range of runs ± floor)."""
    b, h = sorted(base_runs)[len(base_runs) // 2], sorted(head_runs)[len(head_runs) // 2]
    return {"base": b, "head": h, "delta_pct": (h / b - 1) * 100,
            "ci_low_pct": (min(head_runs) / max(base_runs) - 1) * 100 - floor,
            "ci_high_pct": (max(head_runs) / min(base_runs) - 1) * 100 + floor, "p_value": None,
            "verdict": verdict, "better": "lower", "paired": False, "interval": "runs_range",
            "n_base": len(base_runs), "n_head": len(head_runs), "n": min(len(base_runs), len(head_runs)),
            "threshold_pct": 0.5, "noise_floor_pct": floor, "noise_floor_min_pct": 0.02,
            "noise_floor_by_side": {"base": floor, "head": floor}, "runs": {"base": base_runs, "head": head_runs},
            "spread_pct": {"base": 0.0, "head": 0.0}}


def instructions() -> dict:
    """instrument: instructions only (no walltime rounds): a pure-Python loop with 1% more work."""
    base_runs, head_runs = [3209379.75, 3209379.75], [3242954.75, 3242954.75]
    diff = [{"name": "_PyObject_MakeTpCall", "object": "libpython3.11.so.1.0", "base_ir": 990135.9,
             "head_ir": 1000035.9, "delta_ir": 9900.0, "delta_pct": 1.0, "only_in": None},
            {"name": "x_add", "object": "libpython3.11.so.1.0", "base_ir": 288804.0, "head_ir": 292904.0,
             "delta_ir": 4100.0, "delta_pct": 1.42, "only_in": None}]
    side = {"status": "ok", "error": None, "n": 8, "est_cycles_runs": [], "est_cycles": None}
    b = {"name": "loop", "decision": "reject", "reason": "instructions regressed", "unit": "items", "goal": None,
         "status": {"base": "ok", "head": "ok"}, "error": None, "rounds": 0, "outlier_rounds": 0,
         "metrics": {"instructions": {**_count_metric(base_runs, head_runs, "regressed"),
                                      "reason": "instructions per step 3,209,380 → 3,242,955 (+1.046%) beyond "
                                                "τ = 0.5%"}},
         "constraints": [], "bottleneck": None, "profile": None, "samples": {"base": [], "head": []},
         "instructions": {"base": {**side, "runs": base_runs, "instructions": base_runs[0]},
                          "head": {**side, "runs": head_runs, "instructions": head_runs[0]},
                          "function_diff": diff, "notes": [message("instr.functions")]}}
    return comparison([b], "reject", rounds=0, notes=[message("instr.what")])



ALL = {"keep": keep, "reject_constraint": reject_constraint, "trade_off": trade_off, "failed": failed,
       "inconclusive": inconclusive, "aa": aa, "no_change": no_change, "unpaired": unpaired, "bare": bare,
       "hostile": hostile, "many": many, "huge_error_tail": huge_error_tail,
       "instructions": instructions}
