"""Unpaired comparisons of many benchmarks at once (analyze.unpaired): what a benchmark gets does
not depend on the others beside it, on how they are chunked, or on the unusable values its samples
hold (they are dropped), for seeded random inputs with ties, zeros, NaN, ±inf, None, bools, ints,
missing keys, n from 1 to 40; settings are checked; entries are completed in `finish`.
"""
from __future__ import annotations

import math
import random
from typing import get_args

import msgspec
import numpy as np
import pytest

from profopt_ci.analyze import multiplicity, ranks, unpaired
from profopt_ci.analyze.judge import build_entry, finish, resolve
from profopt_ci.analyze.unpaired import compare_unpaired, memory_change, unpaired_change
from profopt_ci.documents.types import Decision
from profopt_ci.documents.types_comparison import Entry
from profopt_ci.specfile.load import Benchmark, resolve_settings

DEFAULTS = resolve_settings({}, {})
METRICS = ("step_time_ms", "throughput", "peak_memory_mb", "cuda_max_allocated_mb", "cuda_max_reserved_mb")


def _bench(name: str, threshold: float = 3.0, memory_tolerance: float = 5.0) -> Benchmark:
    settings = msgspec.structs.replace(DEFAULTS, threshold=threshold, memory_tolerance=memory_tolerance)
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


def _same(got: list[dict], want: list[dict]) -> None:
    for g, w in zip(got, want, strict=True):
        # encoded: the same keys in the same order and every float to the last bit (repr)
        assert msgspec.json.encode(g) == msgspec.json.encode(w)


def _usable(v: object) -> bool:
    return type(v) in (int, float, np.float64) and math.isfinite(v) and v > 0


def _cleaned(rows: list[dict], metric: str) -> list[float]:
    return [float(r[metric]) for r in rows if _usable(r.get(metric))]


@pytest.mark.parametrize("seed", range(3))
def test_a_benchmark_gets_the_same_alone_as_among_many(seed: int) -> None:
    items = _items(seed, 400, odd_share=0.05)
    together = compare_unpaired(items)
    _same([compare_unpaired([it])[0] for it in items[::7]], together[::7])
    verdicts = {m["verdict"] for r in together for m in r.values()}
    assert verdicts >= {"improved", "regressed", "unchanged", "inconclusive"}, verdicts


@pytest.mark.parametrize("seed", range(3))
def test_unusable_values_are_dropped_metric_by_metric(seed: int) -> None:
    """Each metric's entry is the comparison of the usable values alone, in the metrics' order."""
    items = _items(100 + seed, 300, odd_share=0.08)
    for (bench, base, head), got in zip(items, compare_unpaired(items), strict=True):
        want = {}
        for metric in METRICS:
            b, h = _cleaned(base, metric), _cleaned(head, metric)
            if not b or not h:
                continue
            if metric in ("step_time_ms", "throughput"):
                want[metric] = unpaired_change(b, h, threshold_pct=bench.settings.threshold,
                                               better="higher" if metric == "throughput" else "lower")
            else:
                want[metric] = memory_change(b, h, tolerance_pct=bench.settings.memory_tolerance)
        assert msgspec.json.encode(got) == msgspec.json.encode(want)


def test_large_samples_and_missing_keys() -> None:
    rng = random.Random(5)
    big = [{"step_time_ms": rng.lognormvariate(0, 0.1)} for _ in range(130)]
    items = [(_bench("big"), big, big[:101]), (_bench("none"), [], []),
             (_bench("keys"), [{"step_time_ms": 1.0 + k / 10} for k in range(8)],
              [{"step_time_ms": 1.1 + k / 10, "peak_memory_mb": 3.0} for k in range(8)])]
    got = compare_unpaired(items)
    values = [r["step_time_ms"] for r in big]
    assert got[0]["step_time_ms"] == unpaired_change(values, values[:101])
    big_entry = got[0]["step_time_ms"]
    assert (big_entry["n_base"], big_entry["n_head"], big_entry["n"]) == (130, 101, 101)
    assert abs(big_entry["delta_pct"]) < 3 and big_entry["ci_low_pct"] < 0 < big_entry["ci_high_pct"]  # one sample
    assert got[1] == {}
    assert list(got[2]) == ["step_time_ms"]  # base has no memory: the metric is left out


def test_a_bad_threshold_raises() -> None:
    rows = [{"step_time_ms": 1.0 + k / 10} for k in range(6)]
    items = [(_bench("ok"), rows, rows), (_bench("bad", threshold=-1.0), rows, rows)]
    with pytest.raises(ValueError, match="threshold_pct must be a non-negative number, not -1.0"):
        compare_unpaired(items)


def test_entries_resolve_unpaired_metrics_in_finish() -> None:
    """build_entry leaves an unpaired entry's metrics to finish, which puts them before the others."""
    items = _items(7, 60, odd_share=0.02)
    entries = [build_entry(b, {"status": "ok", "error": None, "samples": base},
                           {"status": "ok", "error": None, "samples": head}, paired=False) for b, base, head in items]
    for e in entries:  # what the instructions merge does between build_entry and finish
        e["metrics"]["instructions"] = {"verdict": "unchanged"}
    resolved = resolve(entries)
    assert all("_pending_metrics" in e for e in entries)  # a pass returns new entries: its input is as it was
    entries = resolved
    for e, want in zip(entries, compare_unpaired(items), strict=True):
        assert msgspec.json.encode(e["metrics"]) == msgspec.json.encode({**want, "instructions": e["metrics"]["instructions"]})
        assert e["outlier_rounds"] == want.get("step_time_ms", {}).get("outliers", 0)
        assert not any(k.startswith("_") for k in e)
    # finish makes each entry its frozen Entry, checked against the model: a NaN or infinite sample
    # value is refused there (the reader refuses it in a file), while the statistics above drop it
    with pytest.raises(msgspec.ValidationError, match="samples"):
        finish(entries, {b.name: b for b, _, _ in items})
    items = [(_bench(f"c{i}"), [{"round": r, "step_time_ms": 10.0 + i + r / 100} for r in range(8)],
              [{"round": r, "step_time_ms": (10.0 + i + r / 100) * f} for r in range(8)])
             for i, f in enumerate((1.0, 1.25, 0.8))]
    entries = finish([build_entry(b, {"status": "ok", "error": None, "samples": base},
                                  {"status": "ok", "error": None, "samples": head}, paired=False)
                      for b, base, head in items], {b.name: b for b, _, _ in items})
    assert all(type(e) is Entry and e["decision"] in get_args(Decision) for e in entries)
    assert [e["metrics"]["step_time_ms"]["verdict"] for e in entries] == ["unchanged", "regressed", "improved"]


def test_an_int_too_big_for_a_float_raises() -> None:
    base, head = [{"step_time_ms": 10**400}] * 6, [{"step_time_ms": 1.0}] * 6
    with pytest.raises(OverflowError):
        compare_unpaired([(_bench("b"), base, head)])


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
    want = compare_unpaired(items)
    monkeypatch.setattr(unpaired, "CELLS", 7 * 25)  # many chunk boundaries inside each group of equal counts
    _same(compare_unpaired(items), want)


@pytest.mark.parametrize("seed", range(2))
def test_read_rows_give_what_the_dicts_give(seed: int) -> None:
    """Rows of a read file (documents.types.Sample: an absent key is UNSET, not None) are compared
    as the dicts they were read from, whether a metric is absent from a whole group or from some rows."""
    import msgspec

    from profopt_ci.documents.types import Sample

    items = [it for it in _items(200 + seed, 300, odd_share=0.0)  # a read row always has a step time
             if all(r.get("step_time_ms") is not None for r in it[1] + it[2])]
    rng = random.Random(seed)
    for _, base, head in items:  # absent rather than null: a command's rows, a CPU run's CUDA memory
        for row in base + head:
            for m in METRICS:
                if m != "step_time_ms" and row.get(m) is None and rng.random() < 0.7:  # a required field
                    row.pop(m, None)
    read = [(bench, [msgspec.convert(r, Sample) for r in base], [msgspec.convert(r, Sample) for r in head])
            for bench, base, head in items]
    assert any(r.cuda_max_reserved_mb is msgspec.UNSET for _, b, _ in read for r in b)
    _same(compare_unpaired(read), compare_unpaired(items))
    mixed = [(bench, base, read_head) for (bench, base, _), (_, _, read_head) in zip(items, read, strict=True)]
    _same(compare_unpaired(mixed), compare_unpaired(items))  # read rows beside built ones
