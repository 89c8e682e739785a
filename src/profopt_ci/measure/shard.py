"""Scale-out over a GitHub Actions matrix: `profopt run --shard I/N` and `profopt merge`.

In: a spec's benchmarks, `I/N`, recorded costs; or N shard results@1 files. Out: the benchmarks
of shard I; or one merged results@1 document (or a usage error naming what does not add up).

Every job of the matrix computes the same split on its own, so the split must be deterministic:
with recorded costs (a stored baseline's cost per round × the spec's rounds) it is greedy
longest-processing-time (biggest first onto the least-loaded shard, ties by name and index); without
them, round-robin over the sorted names. Each shard's results@1 records its split (`shard`), so
`merge` can refuse what would not add up: other specs, labels or commits, a benchmark twice, a
shard missing.
"""
from __future__ import annotations

import heapq
import re
import statistics
from pathlib import Path

from profopt_ci.documents.names import RESULTS_SCHEMA
from profopt_ci.documents.read import load_json
from profopt_ci.errors import UsageError
from profopt_ci.measure.fingerprint import material_keys

_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse_shard(text: str) -> tuple[int, int]:
    """`I/N` with 1 ≤ I ≤ N (1-based, like a matrix of `shard: [1, 2, 3]`)."""
    m = _SHARD.match(text or "")
    if not m:
        raise UsageError(f"--shard {text!r}: expected I/N, e.g. 1/3")
    i, n = int(m[1]), int(m[2])
    if n < 1 or not 1 <= i <= n:
        raise UsageError(f"--shard {text}: I must be between 1 and N (N ≥ 1)")
    return i, n


def assign(names: list[str], n: int, costs: dict[str, float] | None = None) -> list[list[str]]:
    """`names` split into `n` lists; each list keeps the order of `names`."""
    order = {name: k for k, name in enumerate(names)}
    known = {k: v for k, v in (costs or {}).items() if k in order and v > 0}
    shards: list[list[str]] = [[] for _ in range(n)]
    if not known:
        for k, name in enumerate(sorted(names)):
            shards[k % n].append(name)
    else:
        # a benchmark without a recorded cost (new since the baseline) counts as a typical one
        typical = statistics.median(known.values())
        weighted = sorted(names, key=lambda name: (-known.get(name, typical), name))
        loads = [(0.0, i) for i in range(n)]
        for name in weighted:
            load, i = heapq.heappop(loads)
            shards[i].append(name)
            heapq.heappush(loads, (load + known.get(name, typical), i))
    return [sorted(s, key=order.__getitem__) for s in shards]


def shard_info(names: list[str], index: int, count: int, costs: dict[str, float] | None,
               cost_commit: str | None) -> dict:
    """What a shard's results@1 records under `shard`."""
    split = assign(names, count, costs)
    balanced = bool(costs) and any(name in costs for name in names)
    return {
        "index": index, "count": count, "benchmarks": split[index - 1], "all": list(names),
        "balance": "cost" if balanced else "name",
        "cost_commit": cost_commit if balanced else None,
        "estimated_ms": [round(sum((costs or {}).get(x, 0.0) for x in s), 1) for s in split] if balanced else None,
    }


def _fail(problem: str, files: list[str]) -> UsageError:
    return UsageError(f"cannot merge: {problem} ({', '.join(files)})")


def merge(paths: list[str | Path]) -> tuple[dict, list[str]]:
    """Join shard results into one results@1 with the layout of an unsharded run; (results, warnings)."""
    if not paths:
        raise UsageError("merge: name the shard results files to join")
    docs = [(str(p), load_json(p, RESULTS_SCHEMA)) for p in paths]
    names = [p for p, _ in docs]
    for key in ("spec_hash", "hardware_label", "commit"):
        values = {d.get(key) for _, d in docs}
        if len(values) > 1:
            shown = "; ".join(f"{p}: {str(d.get(key))[:16]}" for p, d in docs)
            raise _fail(f"the shards differ in {key} — {shown}", [])
    seen: dict[str, str] = {}
    for p, d in docs:
        for name in d.get("benchmarks") or {}:
            if name in seen:
                raise _fail(f"benchmark {name!r} is in two files", [seen[name], p])
            seen[name] = p
    warnings: list[str] = []
    order = _check_shards(docs, seen, warnings)
    first = docs[0][1]
    merged = {k: v for k, v in first.items() if k not in ("shard", "benchmarks")}
    merged["created"] = max(str(d.get("created") or "") for _, d in docs) or first.get("created")
    merged["dirty"] = any(d.get("dirty") for _, d in docs)
    merged["rounds"] = max((d.get("rounds") or 0) for _, d in docs)
    seeds = {d.get("seed") for _, d in docs}
    merged["seed"] = seeds.pop() if len(seeds) == 1 else None
    by_file = {p: d for p, d in docs}
    merged["benchmarks"] = {name: by_file[seen[name]]["benchmarks"][name] for name in order}
    for p, d in docs[1:]:
        diffs = material_keys(d.get("fingerprint") or {}, first.get("fingerprint") or {})
        if diffs:
            warnings.append(f"{p} was measured in another environment than {names[0]} ({', '.join(diffs)}): "
                            "its benchmarks are not comparable with the others")
    merged["merged_from"] = [{"file": Path(p).name, "shard": d.get("shard", {}).get("index") if d.get("shard") else None,
                              "benchmarks": list(d.get("benchmarks") or {}),
                              "fingerprint": d.get("fingerprint") or {}} for p, d in docs]
    return merged, warnings


def _shard_record(path: str, info: object) -> dict | None:
    """A file's `shard` record as `run --shard` writes it, or a usage error naming the key (a record
    edited by hand, or cut short, is refused here rather than failing the merge half-way)."""
    if not info:
        return None
    if not isinstance(info, dict):
        raise UsageError(f"cannot merge {path}: `shard` is {type(info).__name__} — expected the record "
                         "`profopt run --shard I/N` writes (index, count, benchmarks, all)")
    for key in ("index", "count"):
        value = info.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            got = "missing" if key not in info else f"{value!r}"[:40]
            raise UsageError(f"cannot merge {path}: `shard.{key}` is {got} — expected a whole number ≥ 1, "
                             "as `profopt run --shard I/N` writes it")
    if info["index"] > info["count"]:
        raise UsageError(f"cannot merge {path}: `shard.index` {info['index']} is past `shard.count` {info['count']}")
    listed = info.get("all")
    if listed is not None and not (isinstance(listed, list) and all(isinstance(n, str) for n in listed)):
        raise UsageError(f"cannot merge {path}: `shard.all` is not a list of benchmark names")
    return info


def _check_shards(docs: list[tuple[str, dict]], seen: dict[str, str], warnings: list[str]) -> list[str]:
    """Benchmark order of the unsharded run; refuses a missing shard or benchmark."""
    infos = [(p, _shard_record(p, d.get("shard"))) for p, d in docs]
    if not all(info for _, info in infos):
        unsharded = [p for p, info in infos if not info]
        if len(docs) > 1:
            warnings.append(f"no shard record in {', '.join(unsharded)}: completeness cannot be checked")
        return list(seen)
    counts = {info["count"] for _, info in infos}
    if len(counts) > 1:
        raise _fail(f"the shards were split different ways ({' vs '.join(str(c) for c in sorted(counts))} shards)",
                    [p for p, _ in infos])
    count = counts.pop()
    indices = [info["index"] for _, info in infos]
    dupes = sorted({i for i in indices if indices.count(i) > 1})
    if dupes:
        raise _fail(f"shard {', '.join(f'{i}/{count}' for i in dupes)} given twice", [p for p, _ in infos])
    missing = sorted(set(range(1, count + 1)) - set(indices))
    if missing:
        raise _fail(f"shard {', '.join(f'{i}/{count}' for i in missing)} missing", [p for p, _ in infos])
    everything = infos[0][1].get("all") or list(seen)
    if any((info.get("all") or everything) != everything for _, info in infos):
        raise _fail("the shards split different benchmark lists (a different --only, or costs read from "
                    "different baselines)", [p for p, _ in infos])
    absent = [name for name in everything if name not in seen]
    if absent:
        raise _fail(f"no shard measured {', '.join(absent)} — the shards disagreed on the split "
                    "(costs from different stored baselines?); rerun with the same --store state", [p for p, _ in infos])
    return [name for name in everything if name in seen] + [n for n in seen if n not in everything]
