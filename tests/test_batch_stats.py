"""The vectorized unpaired statistics (analyze.batch) give exactly what the scalar path gives.

The scalar functions (`decide.compare_metrics`, `stats.unpaired_change`, `stats.memory_change`) are
the reference; the batch path must agree on every float, verdict, reason string and key order, for
seeded random inputs with ties, zeros, NaN, ±inf, None, bools, ints, missing keys, n from 1 to 40.
"""
from __future__ import annotations

import json
import math
import random
from dataclasses import replace

import numpy as np
import pytest

from profopt_ci.analyze import batch, decide, multiplicity, ranks
from profopt_ci.pipeline.entries import build_entry, finish, resolve
from profopt_ci.spec.load import Benchmark, resolve_settings

DEFAULTS = resolve_settings({}, {})
METRICS = ("step_time_ms", "throughput", "peak_memory_mb", "cuda_max_allocated_mb", "cuda_max_reserved_mb")


def _bench(name: str, threshold: float = 3.0, memory_tolerance: float = 5.0) -> Benchmark:
    settings = replace(DEFAULTS, threshold_pct=threshold, memory_tolerance_pct=memory_tolerance)
    return Benchmark(name=name, callable=None, command=None, params={}, items_per_iteration=1, unit="items",
                     goal=None, constraints=[], env={}, settings=settings)


def _value(rng: random.Random, kind: str, scale: float) -> object:
    if kind == "ties":  # few distinct values: ties within and across the sides, MAD 0 often
        return rng.choice([1.0, 1.5, 2.0, 2.5]) * scale
    if kind == "shifted":
        return scale * rng.lognormvariate(0.0, 0.02) * rng.choice([1.0, 1.0, 1.3])
    if kind == "outliers":
        return scale * (rng.choice([1.0] * 6 + [5.0]) + rng.random() * 1e-3)
    if kind == "equal":
        return scale
    if kind == "ulps":  # equal up to rounding (not outliers of each other), now and then one far value
        return scale * (1.0 + rng.choice([0, 0, 1, 2, 3]) * 2.2e-16) * rng.choice([1.0] * 9 + [1.0 + 1e-9])
    return scale * rng.lognormvariate(0.0, 0.3)


def _odd(rng: random.Random) -> object:
    """What a hand-written results file may hold in a metric's place."""
    return rng.choice([None, 0.0, -1.0, math.nan, math.inf, -math.inf, True, False, 2, "1.5", np.float64(1.5)])


def _samples(rng: random.Random, n: int, kind: str, scale: float, odd_share: float, present: set[str]) -> list:
    rows = []
    for r in range(n):
        row: dict = {"round": r}
        for m in METRICS:
            if m not in present:
                if rng.random() < 0.9:  # usually the key is there and null, as results@1 writes it
                    row[m] = None
                continue
            v = _value(rng, kind, {"throughput": 1000.0, "peak_memory_mb": 50.0}.get(m, scale))
            row[m] = _odd(rng) if rng.random() < odd_share else v
        rows.append(row)
    return rows


def _items(seed: int, count: int, odd_share: float) -> list:
    rng = random.Random(seed)
    items = []
    for i in range(count):
        present = {m for m in METRICS if rng.random() < 0.8}
        kind = rng.choice(["lognormal", "ties", "shifted", "outliers", "equal", "ulps"])
        nb, nh = rng.choice([(5, 5), (6, 6), (12, 12), (rng.randint(1, 40), rng.randint(1, 40))])
        scale = rng.choice([1.0, 0.37, 123.0])
        bench = _bench(f"b{i}", threshold=rng.choice([3.0, 3.0, 0.0, 1.5, 50.0]),
                       memory_tolerance=rng.choice([5.0, 0.0, 20.0]))
        base = _samples(rng, nb, kind, scale, odd_share, present)
        head = _samples(rng, nh, kind, scale * rng.choice([1.0, 1.05, 0.9]), odd_share, present)
        items.append((bench, base, head))
    return items


def _scalar(items: list) -> list[dict]:
    return [decide.compare_metrics(b, base, head, paired=False) for b, base, head in items]


def _same(got: list[dict], want: list[dict]) -> None:
    for g, w in zip(got, want, strict=True):
        # json.dumps: the same keys in the same order and every float to the last bit (repr)
        assert json.dumps(g) == json.dumps(w)


@pytest.mark.parametrize("seed", range(6))
def test_batch_equals_scalar_on_clean_random_inputs(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    items = _items(seed, 400, odd_share=0.0)
    want = _scalar(items)
    fallbacks = []
    real = decide.compare_metrics
    monkeypatch.setattr(decide, "compare_metrics", lambda *a, **k: fallbacks.append(a) or real(*a, **k))
    _same(batch.compare_unpaired(items), want)
    # clean floats within MAX_N: none of them needed the scalar path
    assert not fallbacks
    verdicts = {m["verdict"] for r in want for m in r.values()}
    assert verdicts >= {"improved", "regressed", "unchanged", "inconclusive"}, verdicts


@pytest.mark.parametrize("seed", range(4))
def test_batch_equals_scalar_with_unusable_values(seed: int) -> None:
    items = _items(100 + seed, 400, odd_share=0.08)
    _same(batch.compare_unpaired(items), _scalar(items))


def test_unstable_and_outlier_notes_agree() -> None:
    rng = random.Random(3)
    items = []
    for i in range(200):  # 12 a side with one or two far values: unstable, or a note on a decided CI
        base = [{"step_time_ms": 1.0 + rng.random() * 1e-3} for _ in range(12)]
        head = [{"step_time_ms": rng.choice([1.0, 1.2, 1.02]) + rng.random() * 1e-3} for _ in range(12)]
        for side in (base, head):
            for k in rng.sample(range(12), rng.randint(0, 3)):
                side[k]["step_time_ms"] = 3.0 + rng.random()
        items.append((_bench(f"b{i}"), base, head))
    want = _scalar(items)
    _same(batch.compare_unpaired(items), want)
    assert {r["step_time_ms"]["verdict"] for r in want} >= {"unstable", "regressed"}
    assert any(r["step_time_ms"]["outlier_note"] for r in want)


def test_large_samples_and_missing_keys_take_the_scalar_path_alike() -> None:
    rng = random.Random(5)
    big = [{"step_time_ms": rng.lognormvariate(0, 0.1)} for _ in range(batch.MAX_N + 1)]
    items = [(_bench("big"), big, big[:30]), (_bench("none"), [], []),
             (_bench("keys"), [{"step_time_ms": 1.0 + k / 10} for k in range(8)],
              [{"step_time_ms": 1.1 + k / 10, "peak_memory_mb": 3.0} for k in range(8)])]
    _same(batch.compare_unpaired(items), _scalar(items))


def test_bad_threshold_raises_like_the_scalar_path() -> None:
    rows = [{"step_time_ms": 1.0 + k / 10} for k in range(6)]
    items = [(_bench("ok"), rows, rows), (_bench("bad", threshold=-1.0), rows, rows)]
    with pytest.raises(ValueError, match="threshold_pct must be a non-negative number, not -1.0"):
        decide.compare_metrics(*items[1], paired=False)
    with pytest.raises(ValueError, match="threshold_pct must be a non-negative number, not -1.0"):
        batch.compare_unpaired(items)


def test_entries_resolve_unpaired_metrics_in_finish() -> None:
    """build_entry leaves an unpaired entry's metrics to finish; the result is the scalar one."""
    items = _items(7, 60, odd_share=0.02)
    entries = [build_entry(b, {"status": "ok", "error": None, "samples": base},
                           {"status": "ok", "error": None, "samples": head}, paired=False) for b, base, head in items]
    for e in entries:  # what the instructions merge does between build_entry and finish
        e["metrics"]["instructions"] = {"verdict": "unchanged"}
    resolve(entries)
    for e, want in zip(entries, _scalar(items), strict=True):
        assert json.dumps(e["metrics"]) == json.dumps({**want, "instructions": e["metrics"]["instructions"]})
        assert e["outlier_rounds"] == want.get("step_time_ms", {}).get("outliers", 0)
        assert not any(k.startswith("_") for k in e)
    finish(entries, {b.name: b for b, _, _ in items})
    assert all("decision" in e for e in entries)


def test_an_int_too_big_for_a_float_raises_alike() -> None:
    base, head = [{"step_time_ms": 10**400}] * 6, [{"step_time_ms": 1.0}] * 6
    with pytest.raises(OverflowError):
        decide.compare_metrics(_bench("b"), base, head, paired=False)
    with pytest.raises(OverflowError):
        batch.compare_unpaired([(_bench("b"), base, head)])


def test_exact_tail_is_the_scalar_division() -> None:
    for m, n in ((1, 1), (5, 5), (3, 8), (8, 40)):
        cum, total = ranks._mwu_cumulative(m, n), math.comb(m + n, m)
        assert ranks.mwu_exact_tail(m, n).tolist() == [c / total for c in cum]


def test_multiplicity_names_the_first_bad_p_value() -> None:
    ps = [0.01, None, 0.5, 1.5, math.nan]
    with pytest.raises(ValueError, match=r"p_values\[3\] = 1.5 is not a probability"):
        multiplicity.bh_adjusted(ps)
    with pytest.raises(ValueError, match=r"p_values\[2\] = nan is not a probability"):
        multiplicity.holm_adjusted([0.2, None, math.nan])
    rng = np.random.default_rng(1)
    many = [None if rng.random() < 0.1 else float(p) for p in rng.random(2000)]
    bh, holm = multiplicity.bh_adjusted(many), multiplicity.holm_adjusted(many)
    present = [p for p in many if p is not None]
    order = sorted(range(len(present)), key=lambda k: present[k])
    m = len(present)
    want_bh, run = [0.0] * m, 1.0  # statsmodels fdr_bh written out: min over j >= i of m p_(j) / j
    for rank in range(m, 0, -1):
        run = min(run, present[order[rank - 1]] * m / rank)
        want_bh[order[rank - 1]] = min(run, 1.0)
    assert [p for p in bh if p is not None] == want_bh
    assert [p is None for p in holm] == [p is None for p in many]


def test_chunks_of_one_shape_give_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    items = _items(11, 300, odd_share=0.02)
    want = _scalar(items)
    monkeypatch.setattr(batch, "CHUNK", 7)  # many chunk boundaries inside each group of equal counts
    _same(batch.compare_unpaired(items), want)


def test_normal_p_many_is_the_scalar_normal_p() -> None:
    rng = random.Random(2)
    for n1, n2 in ((9, 9), (12, 30), (40, 40), (2, 2)):
        mn = n1 * n2
        u = np.asarray([rng.randint(mn // 2 * 2, mn * 2) / 2 for _ in range(300)])
        ties = np.asarray([rng.choice([0.0, 6.0, 24.0, float((n1 + n2) ** 3 - (n1 + n2))]) for _ in range(300)])
        got = ranks.mwu_normal_p_many(u, n1, n2, ties)
        assert got == [ranks.mwu_normal_p(float(a), n1, n2, float(t)) for a, t in zip(u, ties, strict=True)]
        assert None in got or all(0.0 <= p <= 1.0 for p in got)
