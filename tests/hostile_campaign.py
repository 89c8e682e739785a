"""The hostile-input campaign (issue 28): seeded mutations of everything a user hands profopt.

In: a work folder and a seed. Out: cases — mutated specs (`validate`), comparisons (`report`),
results (`diff`), shard files (`merge`), refs, flags, suite paths and specs (`compare` in a real git
repository) — and, per case, what the real CLI entry point (`cli.main`, in-process) did with it. A
case *fails the campaign* when profopt had an internal error: an exception left `main`, it said
"internal error" or printed a traceback, it exited outside 0–3, it hung, or it exited 3 without
writing the results file it was asked for.

The seeds are real: results and shard files from `profopt run`, comparisons from a real
`profopt compare` beside the report fixtures, a repository whose suite has hostile test ids.
tests/test_hostile_campaign.py runs a seeded slice; bench/hostile_campaign.py the full size.
"""
from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import random
import re
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import comparison_fixtures as fixtures
from conftest import make_repo

YAML_VALUES = [".nan", "-.inf", ".inf", "-1", "0", "1e308", "9" * 5000, "2024-01-01", "!!binary aGk=", "!!set {a}",
               "[]", "{}", "null", "true", "'x\\0y'", '"a=b"', "&a [*a]", "*nope", "[[[[[[[[[[[[[[]]]]]]]]]]]]]]",
               "-3%", "3%%", "\"\\x00\"", "~", "'", "{1: a, 1.0: b}", "0x10", "1_000", "- - -", ": :",
               "9" * 400, "-" + "7" * 400, "1e400", "'a/b'", "'../..'", "' '", "'" + "x" * 300 + "'", "ünï名前"]
JSON_VALUES = [None, True, -1, 0, 1e308, -1e308, float("nan"), float("inf"), 10**50, "x", "", "<script>", [], {},
               [[[[[]]]]], {"a": {"b": {"c": [1, "2", None]}}}, 2**63, 1.5, ["a", 1], 10**400, -(10**400),
               "a/b", "../../x", "x" * 300, "ünï 名前", "@everyone", "```", "</details>", "| a | b |", "\u202e"]
NUMBERS = ["9" * 400, "-" + "9" * 400, "1e400", "-1e400", "1e-400", "0", "-0", "-1", "0.0", "4294967296", "2e9",
           str(2**63), str(-(2**63)), ".5", "1e308", "9" * 30 + "%", "0.000001%", "-3%"]
# names and paths a user can choose: benchmark names, suite paths, parameter ids, refs
HOSTILE_TEXT = ["", " ", ".", "..", "../..", "/", "/etc/passwd", "a/b", "a b", "-x", "--", "名前", "ünï",
                "x" * 300, "\u202e", "\t", "a\nb", "$(id)", "`id`", ";id", ":", "::", "*", "?", "[a]", "%s%n",
                "HEAD~999", "HEAD^{tree}", "@{-1}", "HEAD@{yesterday}", "main..HEAD", "HEAD:profopt.yml",
                "0" * 40, "refs/heads/../x", "9" * 400, "-1", "0", "nan", "inf", "1e309", "3%%", "-3%"]
SPEC = """\
version: 1
hardware_label: cpu-2vcpu
setup: echo ready
env: {OMP_NUM_THREADS: "1"}
defaults: {warmup: 3, min_time_ms: 100, values: 5, rounds: 20, max_rounds: 60, threshold: 3%, timeout_s: 600}
benchmarks:
  - name: train-step
    callable: bench.train:make_step
    params: {batch_size: 64, seq_len: 128, dtype: float32}
    items_per_iteration: 64
    unit: samples
    goal: {metric: step_time, direction: decrease, target: 10%}
    constraints:
      - {metric: loss, rel_tol: 0.01}
      - {metric: output_digest, equal: true}
    profile: auto
  - name: cmd
    command: [python, -c, "print(1)"]
suites:
  - {pytest: tests/bench/, select: 'test_n and not 名'}
"""
STEP = """\
import profopt_ci


def make_step(n=200, fail=False):
    if fail:
        raise RuntimeError("this benchmark cannot be built")

    def step():
        profopt_ci.record(loss=1.0, output_digest="same")
        return sum(range(n))
    return step
"""
SUITE = """\
import pytest

IDS = ["a/b", "..", "with space", "ünï 名前", "x" * 300]


@pytest.mark.parametrize("n", range(len(IDS)), ids=IDS)
def test_n(benchmark, n):
    benchmark(sum, range(50 * (n + 1)))
"""
QUICK = ('defaults: {warmup: 0, rounds: 1, max_rounds: 1, round_ms: 10, profile: "off", quality_steps: 1, '
         'timeout_s: 60}\n')
REPO_SPEC = ("version: 1\nhardware_label: campaign\n" + QUICK + "benchmarks:\n"
             "  - {name: fast, callable: 'bench.w:make_step', params: {n: 200}}\n"
             "  - {name: other, callable: 'bench.w:make_step', params: {n: 400}}\n")
SUITE_SPEC = ("version: 1\nhardware_label: campaign\n" + QUICK
              + "suites:\n  - {pytest: tests/bench/}\n  - {asv: benchmarks/asv.conf.json, select: time_}\n")
FAILING_SPEC = REPO_SPEC + "  - {name: broken, callable: 'bench.w:make_step', params: {fail: true}}\n"
ASV_BROKEN = "import json\n\nCONFIG = json.loads('{')\n\n\ndef time_x():\n    pass\n"
VERBS = ("validate", "report", "diff", "merge", "compare")


class Hung(BaseException):
    """Raised by the case's alarm: a BaseException, so no `except Exception` in profopt swallows it."""


@dataclass
class Case:
    verb: str
    argv: list[str]
    what: str                    # how the input was made, for the report of a failing case
    out: Path | None = None      # the results file an exit 3 must still have written
    timeout_s: int = 30
    cwd: Path | None = None      # where it runs (default: the seeds' repository)


@dataclass
class Outcome:
    case: Case
    code: int | None
    err: str
    seconds: float
    problem: str | None = None


@dataclass
class Seeds:
    work: Path
    repo: Path
    results: list[Path] = field(default_factory=list)
    shards: list[Path] = field(default_factory=list)
    comparisons: list[dict] = field(default_factory=list)


# ---- running one case --------------------------------------------------------------------------------


def run_case(case: Case, cwd: Path) -> Outcome:
    """`cli.main(case.argv)` here, in `cwd`; stdout and stderr captured; judged (see the module)."""
    from profopt_ci.cli import command_line as cli

    if case.out is not None:
        case.out.unlink(missing_ok=True)
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM)}
    err, out = io.StringIO(), io.StringIO()
    here = os.getcwd()
    start = time.monotonic()
    code: int | None = None
    problem = None

    def on_alarm(*_):
        raise Hung(f"no answer in {case.timeout_s} s (a hang?)")

    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(case.timeout_s)
    try:
        os.chdir(cwd)
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            code = cli.main(case.argv)
    except SystemExit as exc:  # argparse: a bad flag (2), --help (0)
        code = exc.code if isinstance(exc.code, int) else 2
    except BaseException as exc:  # noqa: BLE001 — what escapes main is the finding
        problem = f"escaped main: {type(exc).__name__}: {str(exc)[:300]}"
    finally:
        signal.alarm(0)
        os.chdir(here)
        for s, h in saved.items():
            signal.signal(s, h)
    text = err.getvalue()
    if problem is None:
        problem = judge(code, text, case)
    return Outcome(case, code, text, time.monotonic() - start, problem)


def judge(code: int | None, err: str, case: Case) -> str | None:
    if code not in (0, 1, 2, 3):
        return f"exit {code}"
    if "internal error" in err:
        return "internal error: " + err[err.index("internal error"):][:300]
    if "Traceback (most recent call last)" in err:
        return "a traceback: " + err[err.index("Traceback"):][:1500]
    if code == 3 and case.out is not None and not case.out.is_file():
        return f"exit 3 without {case.out.name}"
    return None


# ---- the seeds: real runs ------------------------------------------------------------------------------


def prepare(work: Path) -> Seeds:
    """A real repository (two commits), its real results and shard files, a real comparison."""
    repo = work / "repo"
    files = {"bench/__init__.py": "", "bench/w.py": STEP, "profopt.yml": REPO_SPEC, "suite.yml": SUITE_SPEC,
             "failing.yml": FAILING_SPEC, "tests/bench/test_names.py": SUITE,
             "pytest.ini": "[pytest]\ndisable_test_id_escaping_and_forfeit_all_rights_to_community_support = true\n",
             "benchmarks/__init__.py": "", "benchmarks/asv.conf.json": '{"version": 1, "benchmark_dir": "."}',
             "benchmarks/bench_broken.py": ASV_BROKEN, ".gitignore": "*.json\n!benchmarks/asv.conf.json\n.profopt/\nspec-*.yml\n"}
    make_repo(repo, [files, {"bench/w.py": STEP.replace("sum(range(n))", "sum(range(n + 1))")}])
    seeds = Seeds(work=work, repo=repo)
    for argv, path in ((["run", "--out"], "results.json"), (["run", "--spec", "failing.yml", "--out"], "failing.json"),
                       (["run", "--shard", "1/2", "--out"], "s1.json"), (["run", "--shard", "2/2", "--out"], "s2.json")):
        got = run_case(Case("seed", [*argv, str(work / path)], "a seed", timeout_s=300), repo)
        if got.problem or got.code not in (0, 3):
            raise RuntimeError(f"seed {argv}: exit {got.code}: {got.err[-2000:]}")
        (seeds.shards if "--shard" in argv else seeds.results).append(work / path)
    out = work / "real-comparison.json"
    got = run_case(Case("seed", ["compare", "--base", "HEAD~1", "--fail-on", "none", "--out", str(out),
                                 "--report", str(work / "r.md"), "--html", str(work / "r.html")], "a seed",
                        timeout_s=300), repo)
    if got.problem or got.code != 0:
        raise RuntimeError(f"seed compare: exit {got.code}: {got.err[-2000:]}")
    seeds.comparisons = [json.loads(out.read_text()), fixtures.keep(), fixtures.reject_constraint(), fixtures.failed(),
                         fixtures.hostile(), fixtures.unpaired(), fixtures.instructions(), fixtures.trade_off()]
    return seeds


# ---- mutations -------------------------------------------------------------------------------------------


def mutate_spec(rng: random.Random, text: str) -> str:
    lines = text.splitlines()
    how = rng.randrange(8)
    i = rng.randrange(len(lines))
    numbers = [(n, m.span()) for n, line in enumerate(lines) for m in re.finditer(r"(?<![\w.])\d+(\.\d+)?%?(?![\w.])", line)]
    if how == 7 and numbers:  # a number where a number goes, out of every range
        n, (a, b) = rng.choice(numbers)
        lines[n] = lines[n][:a] + rng.choice(NUMBERS) + lines[n][b:]
        return "\n".join(lines) + "\n"
    if how == 0 and ":" in lines[i]:  # a value replaced
        key, _, _ = lines[i].partition(":")
        lines[i] = f"{key}: {rng.choice(YAML_VALUES)}"
    elif how == 1:  # a line deleted or duplicated
        if rng.random() < 0.5:
            del lines[i]
        else:
            lines.insert(i, lines[i])
    elif how == 2:  # a flow value replaced inside braces
        lines[i] = lines[i].replace(rng.choice(["64", "3%", "100", "1", "true", "float32", "10%", "20", "200",
                                                "tests/bench/", "fast", "0.01"]), rng.choice(YAML_VALUES), 1)
    elif how == 3:  # random bytes
        pos = rng.randrange(len(lines[i]) + 1)
        lines[i] = lines[i][:pos] + "".join(rng.choice("{}[]:&*!|>-,'\"#%@`\t ") for _ in range(rng.randint(1, 4))) + lines[i][pos:]
    elif how == 4:  # truncated
        return text[: rng.randrange(len(text))]
    elif how == 5:  # a hostile suite item or benchmark name
        item = rng.choice(["  - {pytest: %s}", "  - {asv: %s}", "  - {pyperf: %s}", "  - {pytest: tests/bench/, select: %s}"])
        lines += ["suites:" if "suites:" not in text else "", item % json.dumps(rng.choice(HOSTILE_TEXT))]
    else:  # a new key with a hostile value
        lines.insert(i, " " * (len(lines[i]) - len(lines[i].lstrip())) + f"{rng.choice(['zz', 'env', 'params', 'rounds', 'name'])}: "
                     + rng.choice(YAML_VALUES))
    return "\n".join(lines) + "\n"


def _paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, (*prefix, i))


def mutate_doc(rng: random.Random, doc: dict) -> dict:
    """1–3 edits: a value replaced by a hostile one, a key removed, or a key renamed to a hostile name
    (benchmark names are keys of results@1)."""
    doc = copy.deepcopy(doc)
    by_depth: dict[int, list[tuple]] = {}
    for p in _paths(doc):
        if p and p[-1] != "schema":
            by_depth.setdefault(len(p), []).append(p)
    for _ in range(rng.randint(1, 3)):  # a depth first, then a path there: a record's own keys are hit as
        path = rng.choice(by_depth[rng.choice(list(by_depth))])  # often as the thousands of sample values
        parent = doc
        try:
            for step in path[:-1]:
                parent = parent[step]
            roll = rng.random()
            if roll < 0.15 and isinstance(parent, dict):
                parent.pop(path[-1], None)
            elif roll < 0.3 and isinstance(parent, dict) and path[-1] in parent:
                parent[rng.choice(HOSTILE_TEXT) or "_"] = parent.pop(path[-1])
            elif roll < 0.65:  # the same type, a hostile value: what a reader's types let through
                parent[path[-1]] = _like(rng, parent[path[-1]])
            else:
                parent[path[-1]] = copy.deepcopy(rng.choice(JSON_VALUES))
        except (KeyError, IndexError, TypeError):
            continue  # an earlier mutation removed the way there
    return doc


def mutate_record(rng: random.Random, doc: dict, prefer: str | None = None) -> dict:
    """One key of one record removed or given a hostile value: the shard record, a benchmark entry,
    its goal, profile, metrics or error, the sides — the records readers take apart field by field."""
    doc = copy.deepcopy(doc)
    records = [r for r in _records(doc) if r]
    if not records:
        return doc
    record = rng.choice(records)
    if prefer and isinstance(doc.get(prefer), dict) and doc[prefer] and rng.random() < 0.5:
        record = doc[prefer]  # the record this verb reads first (merge: the shard record)
    key = rng.choice(list(record))
    roll = rng.random()
    if roll < 0.4:
        del record[key]
    elif roll < 0.7:
        record[key] = _like(rng, record[key])
    else:
        record[key] = copy.deepcopy(rng.choice(JSON_VALUES))
    return doc


def _records(doc: dict) -> Iterator[dict]:
    for key in ("shard", "base", "head", "pairing", "policy", "runner"):
        if isinstance(doc.get(key), dict):
            yield doc[key]
    benches = doc.get("benchmarks")
    for entry in (benches.values() if isinstance(benches, dict) else benches if isinstance(benches, list) else []):
        if isinstance(entry, dict):
            yield entry
            for key in ("goal", "profile", "metrics", "error", "bottleneck", "instructions", "quality", "summary"):
                if isinstance(entry.get(key), dict):
                    yield entry[key]
                    yield from (v for v in entry[key].values() if isinstance(v, dict))


def _like(rng: random.Random, value):
    """A hostile value of `value`'s own JSON type."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return rng.choice([0, -1, 1, 2**63, -(2**63), 10**400, value * 1000, -value])
    if isinstance(value, float):
        return rng.choice([0.0, -0.0, 1e-300, -1.0, 1e308, value * 1e6, -value, 5e-324])
    if isinstance(value, str):
        return rng.choice([*HOSTILE_TEXT, value * 50, value[::-1]])
    if isinstance(value, list):
        cut = value[: rng.randrange(len(value) + 1)]
        return rng.choice([cut, value + value, list(reversed(value)), []])
    if isinstance(value, dict):
        keys = list(value)
        rng.shuffle(keys)
        return {k: value[k] for k in keys[: rng.randrange(len(keys) + 1)]}
    return value


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    how = rng.randrange(6)
    if how == 0:
        return data[: rng.randrange(len(data) + 1)]
    if how == 1:
        pos = rng.randrange(len(data))
        return data[:pos] + bytes([rng.randrange(256)]) + data[pos + 1:]
    if how == 2:
        return rng.choice([b"", b"null", b"[]", b"{}", b"\xff\xfe", b'{"schema": "profopt/results@1"}',
                           b'{"schema": "profopt/comparison@1"}', b"[" * 100_000, b"1" * 5000, b"\x00" * 64])
    if how == 3:
        return data.replace(b'"schema"', b'"schem"', 1)
    if how == 4:
        return data + b"garbage"
    return data.replace(b": ", b": " + b"9" * 400 + b", \"x\": ", 1)


def _dump(doc: dict) -> bytes:
    return json.dumps(doc).encode()  # NaN / Infinity survive dumps; the readers must refuse them


# ---- the cases -------------------------------------------------------------------------------------------


def cases(seeds: Seeds, rng: random.Random, counts: dict[str, int]) -> Iterator[Case]:
    """`counts[verb]` cases of each verb, interleaved, from `rng`."""
    makers: dict[str, Callable[[int], Case]] = {
        "validate": lambda k: _validate(seeds, rng, k), "report": lambda k: _report(seeds, rng, k),
        "diff": lambda k: _diff(seeds, rng, k), "merge": lambda k: _merge(seeds, rng, k),
        "compare": lambda k: _compare(seeds, rng, k)}
    order = [v for v in VERBS for _ in range(counts.get(v, 0))]
    rng.shuffle(order)
    for k, verb in enumerate(order):
        yield makers[verb](k)


def _file(seeds: Seeds, name: str, data: bytes | str) -> Path:
    path = seeds.work / "cases" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _validate(seeds: Seeds, rng: random.Random, k: int) -> Case:
    roll = rng.random()
    if roll < 0.12:  # a hostile suite on the command line, collected in the repository
        suite = f"{rng.choice(['pytest', 'asv', 'pyperf', 'nose', ''])}:{rng.choice(HOSTILE_TEXT)}"
        return Case("validate", ["validate", "--no-import", "--suite", suite], f"--suite {suite!r}", timeout_s=120)
    text = mutate_spec(rng, rng.choice([SPEC, REPO_SPEC, SUITE_SPEC]))
    if rng.random() < 0.3:
        text = mutate_spec(rng, text)
    path = seeds.repo / f"spec-{k}.yml"  # in the repository: its suite paths are read from the spec's folder
    path.write_text(text, encoding="utf-8")
    return Case("validate", ["validate", "--no-import", "--spec", str(path)], f"spec:\n{text[:3000]}")


def _report(seeds: Seeds, rng: random.Random, k: int) -> Case:
    seed = rng.choice(seeds.comparisons)
    roll = rng.random()
    data = (_dump(mutate_record(rng, seed)) if roll < 0.35 else _dump(mutate_doc(rng, seed)) if roll < 0.85
            else mutate_bytes(rng, _dump(seed)))
    path = _file(seeds, f"comparison-{k}.json", data)
    fmt, lang = rng.choice(["md", "md", "html", "json"]), rng.choice(["en", "zh"])
    out = seeds.work / "cases" / f"report-{k}.{fmt}"
    return Case("report", ["report", str(path), "--format", fmt, "--lang", lang, "--out", str(out)],
                f"comparison {data[:2000]!r}")


def _results(seeds: Seeds, rng: random.Random, k: int, pool: list[Path], tag: str,
             prefer: str | None = None) -> tuple[Path, str]:
    seed = rng.choice(pool).read_bytes()
    roll = rng.random()
    if roll < 0.2:
        return _file(seeds, f"{tag}-{k}.json", seed), "as measured"
    data = (_dump(mutate_record(rng, json.loads(seed), prefer)) if roll < 0.5 else _dump(mutate_doc(rng, json.loads(seed)))
            if roll < 0.85 else mutate_bytes(rng, seed))
    return _file(seeds, f"{tag}-{k}.json", data), f"{data[:1500]!r}"


def _diff(seeds: Seeds, rng: random.Random, k: int) -> Case:
    base, what_b = _results(seeds, rng, k, seeds.results, "base")
    head, what_h = _results(seeds, rng, k, seeds.results, "head")
    out = seeds.work / "cases" / f"diff-{k}.json"
    return Case("diff", ["diff", str(base), str(head), "--out", str(out), "--report", str(out.with_suffix(".md")),
                         "--html", str(out.with_suffix(".html")), "--fail-on", rng.choice(["regression", "none"])],
                f"base {what_b}\nhead {what_h}", out=out)


def _merge(seeds: Seeds, rng: random.Random, k: int) -> Case:
    files, what = [], []
    if k % 5 == 0:  # the control: every shard as measured merges (k comes from the seeded order, not the seeds)
        out = seeds.work / "cases" / f"merged-{k}.json"
        return Case("merge", ["merge", *map(str, seeds.shards), "--out", str(out)], "every shard as measured", out=out)
    for j in range(rng.choice([1, 2, 2, 2, 3])):
        path, how = _results(seeds, rng, k * 10 + j, seeds.shards if rng.random() < 0.85 else seeds.results, "shard",
                             "shard")
        files.append(str(path))
        what.append(how)
    out = seeds.work / "cases" / f"merged-{k}.json"
    return Case("merge", ["merge", *files, "--out", str(out)], "\n".join(what), out=out)


def _compare(seeds: Seeds, rng: random.Random, k: int) -> Case:
    out = seeds.work / "cases" / f"compare-{k}.json"
    argv = ["compare", "--base", "HEAD~1", "--out", str(out), "--report", str(out.with_suffix(".md")),
            "--html", str(out.with_suffix(".html")), "--fail-on", "none"]
    roll = rng.random()
    if roll < 0.45:  # a hostile ref or flag value
        flag = rng.choice(["--base", "--head", "--rounds", "--max-rounds", "--threshold", "--cpuset", "--history",
                           "--pairing", "--instrument", "--profile-dir", "--lang"])
        value = rng.choice(HOSTILE_TEXT)
        if flag == "--profile-dir":  # never a folder outside the campaign's own
            value = str(seeds.work / "cases" / f"profiles-{k}" / value.lstrip("/").replace("..", "_"))
        argv += [flag, value]
        what = f"{flag} {value!r}"
    elif roll < 0.75:  # a hostile suite path, or one of the repository's own specs (a suite that cannot be collected)
        if rng.random() < 0.5:
            value = f"{rng.choice(['pytest', 'asv', 'pyperf'])}:{rng.choice(HOSTILE_TEXT)}"
            argv += ["--suite", value]
        else:
            value = rng.choice(["suite.yml", "failing.yml"])
            argv += ["--spec", value]
        what = f"{argv[-2]} {value!r}"
    else:  # a pull request that changes the spec into a mutated one: a repository of its own
        text = mutate_spec(rng, rng.choice([REPO_SPEC, SUITE_SPEC])) + f"# case {k}\n"  # never the base's own
        repo = seeds.work / "cases" / f"repo-{k}"
        make_repo(repo, [{"bench/__init__.py": "", "bench/w.py": STEP, "profopt.yml": REPO_SPEC,
                          "tests/bench/test_names.py": SUITE}, {"profopt.yml": text}])
        return Case("compare", argv, f"head's spec:\n{text}", out=out, timeout_s=300, cwd=repo)
    return Case("compare", argv, what, out=out, timeout_s=300)


def summary(outcomes: list[Outcome]) -> dict:
    """Per verb: cases, exit codes, failures; the failing cases."""
    per: dict[str, dict] = {}
    for o in outcomes:
        row = per.setdefault(o.case.verb, {"cases": 0, "codes": {}, "failures": 0, "seconds": 0.0})
        row["cases"] += 1
        row["codes"][o.code] = row["codes"].get(o.code, 0) + 1
        row["failures"] += o.problem is not None
        row["seconds"] += o.seconds
    return per


def campaign(seeds: Seeds, seed: int, counts: dict[str, int],
             each: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Every case of the seeded campaign run and judged, in order."""
    rng = random.Random(seed)
    outcomes = []
    for case in cases(seeds, rng, counts):
        outcome = run_case(case, case.cwd or seeds.repo)
        outcomes.append(outcome)
        if each is not None:
            each(outcome)
    return outcomes
