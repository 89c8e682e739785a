"""`profopt diff`: two stored results@1 files in, a `profopt/comparison@1` out, unpaired.

In: the two results documents (already read and version-checked) and, when given, the spec that
says how to judge (threshold, constraints, goal). Out: the comparison with mode `unpaired`, whose
notes say that the figures are weaker than a paired compare's (no interleaved rounds).
"""
from __future__ import annotations

from dataclasses import replace

from profopt_ci.analyze import instruction_entries
from profopt_ci.analyze.judge import ALPHA, build_entry, finish
from profopt_ci.documents import comparison as comparison_doc
from profopt_ci.documents.types_comparison import Comparison
from profopt_ci.pipeline.entries import compile_notes, differences, gpu_notes, outlier_notes, policy, verdict
from profopt_ci.specfile.load import Benchmark, Settings, Spec, resolve_settings
from profopt_ci.words.i18n import message


def run_diff(spec: Spec | None, base: dict, head: dict, *, fail_on: str | None = None) -> Comparison:
    """Compare two results@1 files. No pairing exists between their samples, so the test is unpaired.
    `fail_on`: the policy (None: no policy section)."""
    names = [n for n in head["benchmarks"] if n in base["benchmarks"]]
    missing = sorted(set(base["benchmarks"]) ^ set(head["benchmarks"]))
    defined = {b.name: b for b in spec.benchmarks} if spec is not None else {}
    defaults = resolve_settings({}, {})  # one object for all: a large diff would resolve it once per benchmark
    sides = [(base["benchmarks"][n], head["benchmarks"][n]) for n in names]
    pairs = [_pair(n, b, hd, defined, defaults) for n, (b, hd) in zip(names, sides, strict=True)]
    # The rows stay as read (documents.types.Sample Structs): the statistics (analyze.unpaired, in
    # `finish`) read each side once, and the comparison holds the same objects.
    entries = [_counted(build_entry(h, b, hd, paired=False), h, b, hd) for (_, h), (b, hd) in zip(pairs, sides, strict=True)]
    entries = instruction_entries.mark_failures(finish(entries, {h.name: h for _, h in pairs}))
    notes = [message("note.unpaired")]
    if missing:
        notes.append(message("note.only_in_one", names=missing))
    if base.get("hardware_label") != head.get("hardware_label"):
        notes.append(message("note.labels_differ", base=str(base.get("hardware_label")), head=str(head.get("hardware_label"))))
    if base.get("spec_hash") != head.get("spec_hash"):
        notes.append(message("note.specs_differ"))
    notes += outlier_notes(entries) + gpu_notes(entries) + compile_notes(entries)
    metas = [{"ref": r.get("commit"), "commit": r.get("commit"), "fingerprint": r.get("fingerprint") or {},
              "env": r.get("env") or {}} for r in (base, head)]
    threshold = pairs[0][1].settings.threshold if pairs else None
    return comparison_doc.build(
        mode="unpaired", hardware_label=head.get("hardware_label") or "default", entries=entries,
        verdict=verdict(entries), base=metas[0], head=metas[1], diffs=differences(pairs, *metas), seed=None,
        notes=notes, threshold_pct=threshold, confidence=1 - ALPHA, policy=policy(entries, fail_on))


def _counted(entry: dict, bench: Benchmark, base: dict, head: dict) -> dict:
    """The entry with its counted instructions, when both sides have them."""
    counted = (base.get("instructions"), head.get("instructions"))
    return instruction_entries.merge(entry, bench, {"base": counted[0], "head": counted[1]}) if all(counted) else entry


def _pair(name: str, base: dict, head: dict, defined: dict[str, Benchmark],
          defaults: Settings) -> tuple[Benchmark, Benchmark]:
    """(base, head). Of base only its params are read (by `differences`): when they equal head's,
    as for nearly every benchmark, base is head's own object (one fewer to build per benchmark)."""
    h = _bench_from(name, head, defined, defaults)
    return (h if (base.get("params") or {}) == h.params else _bench_from(name, base, defined, defaults)), h


def _bench_from_results(name: str, entry: dict, spec: Spec | None) -> Benchmark:
    """The spec's definition when there is one (constraints, goal, threshold), with the file's params."""
    defined = {b.name: b for b in spec.benchmarks if b.name == name} if spec is not None else {}
    return _bench_from(name, entry, defined, resolve_settings({}, {}))


def _bench_from(name: str, entry: dict, defined: dict[str, Benchmark], defaults: Settings) -> Benchmark:
    """`_bench_from_results` with the spec indexed by name and the default settings resolved once."""
    params = entry.get("params") or {}
    if name in defined:
        return replace(defined[name], params=params)
    return Benchmark(name=name, callable=None, command=None, params=params,
                     items_per_iteration=entry.get("items_per_iteration"), unit=entry.get("unit") or "items",
                     goal=None, constraints=[], env={}, settings=defaults)
