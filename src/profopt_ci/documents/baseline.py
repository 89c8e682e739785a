"""`profopt/baseline@1`: one stored nightly run (`baseline refresh`), compacted from a results@1.

In: the results@1 the run wrote (commit, spec hash, label, fingerprint, env, rounds, seed), the ref
it was measured at, and per benchmark the compact summary the store stage computed (per-round
values, median, CI, round cost; store.stored_baselines.bench_summary) plus the benchmarks that failed.
Out: the baseline@1 (`build`), the frozen `Baseline` Struct `schema/baseline.schema.json` is
generated from. A stored one is read by store/stored_baselines.py through documents.read.
"""
from __future__ import annotations

from profopt_ci import __version__
from profopt_ci.documents.names import BASELINE_SCHEMA
from profopt_ci.documents.results import construct, now_iso
from profopt_ci.documents.types_stored import Baseline


def build(results: dict, *, ref: str | None, benchmarks: dict[str, dict], failed: dict[str, str]) -> Baseline:
    """The stored document, the frozen `Baseline`: the run's identity from `results`, the compacted
    `benchmarks`."""
    return construct({
        "schema": BASELINE_SCHEMA,
        "tool_version": __version__,
        "created": now_iso(),
        "commit": results.get("commit"),
        "ref": ref,
        "dirty": bool(results.get("dirty")),
        "spec_hash": results.get("spec_hash"),
        "hardware_label": results.get("hardware_label"),
        "fingerprint": results.get("fingerprint") or {},
        "env": results.get("env") or {},
        "rounds": results.get("rounds"),
        "seed": results.get("seed"),
        **({"runner": results["runner"]} if results.get("runner") else {}),
        "benchmarks": benchmarks,
        "failed": failed,
    }, Baseline)

