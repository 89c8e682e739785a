"""Every statement a comparison makes is a message (issue 29): in the comparison.json of a real A/A,
of a real broken loss constraint and of a real asv suite, each prose string under `summary`,
`reason`, `detail`, `cause`, `note` and `outlier_note` is a message `{id, args, text}` or has one
beside it under `<key>_msg` whose `text` is that string and whose id both catalogs (en, zh) know.

Three real compares through the CLI on real git repositories, at few rounds: the words, not the
verdicts, are what is checked here.
"""
from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import json
import re
from collections.abc import Iterator
from pathlib import Path

import comparison_fixtures as fx
import pytest
from conftest import CPU_STEP, make_repo, run_cli
from test_i18n_coverage import english

from profopt_ci.analyze.decide import decide_benchmark, decided
from profopt_ci.documents import comparison as comparison_doc
from profopt_ci.report.render import render
from profopt_ci.specfile.model import Goal
from profopt_ci.words.i18n import EN, ZH, message, say

PROSE = ("summary", "reason", "detail", "cause", "note", "outlier_note")
FAST = "{warmup: 1, value_ms: 1, round_ms: 60, rounds: 6, max_rounds: 6, seed: 3, profile: \"off\", quality_steps: 5}"


def _is_message(m: object) -> bool:
    return (isinstance(m, dict) and set(m) == {"id", "args", "text"} and isinstance(m["id"], str)
            and isinstance(m["args"], dict) and isinstance(m["text"], str))


def unsaid(doc: object, where: str = "$") -> Iterator[str]:
    """Where a prose string is not a message and has none beside it (or a wrong one)."""
    if isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from unsaid(v, f"{where}[{i}]")
        return
    if not isinstance(doc, dict):
        return
    for key, value in doc.items():
        here = f"{where}.{key}"
        if key in PROSE and isinstance(value, str) and value:
            m = doc.get(f"{key}_msg")
            if not _is_message(m):
                yield f"{here}: {value!r} has no {key}_msg"
            elif m["text"] != value:
                yield f"{here}: {key}_msg says {m['text']!r}, not {value!r}"
        elif key in PROSE and isinstance(value, dict) and not _is_message(value) and "kind" not in value:
            yield f"{here}: an object that is not a message"
        if _is_message(value) or (key.endswith("_msg") and isinstance(value, dict)):
            if not _is_message(value):
                yield f"{here}: not a message"
            elif value["id"] not in EN or value["id"] not in ZH:
                yield f"{here}: id {value['id']!r} is not in both catalogs"
            elif say("en", value) != value["text"]:
                yield f"{here}: the catalog's English differs from its text ({value['text']!r})"
        yield from unsaid(value, here)


def _compare(root: Path, *args: str, rc: int = 0) -> dict:
    proc = run_cli(["compare", *args, "--fail-on", "none"], root, timeout=600)
    assert proc.returncode == rc, proc.stderr[-3000:]
    return json.loads((root / ".profopt" / "comparison.json").read_text())


def _check(c: dict) -> None:
    problems = list(unsaid(c))
    assert not problems, "\n".join(problems)
    # zh says each in its own words: only an entry of figures and data alone reads as the English does
    for m in _messages(c):
        words = re.sub(r"\{[^}]*\}", "", EN[m["id"]])
        assert say("zh", m) != m["text"] or not re.search(r"[A-Za-z]{2,}", words), m


def _messages(doc: object) -> Iterator[dict]:
    if isinstance(doc, list):
        for v in doc:
            yield from _messages(v)
    elif isinstance(doc, dict):
        if _is_message(doc):
            yield doc
        for v in doc.values():
            yield from _messages(v)


SPEC = f"""\
version: 1
hardware_label: test-cpu
defaults: {FAST}
benchmarks:
  - name: busy
    callable: bench.work:make_step
    params: {{us: 300, loss: {{loss}}}}
    constraints:
      - {{metric: loss, rel_tol: 0.01}}
      - {{metric: output_digest, equal: true}}
"""


@pytest.mark.slow
def test_an_aa_comparison_says_everything_in_messages(tmp_path):
    root = tmp_path / "repo"
    make_repo(root, [{"bench/__init__.py": "", "bench/work.py": CPU_STEP, "profopt.yml": SPEC.replace("{loss}", "1.0")}])
    c = _compare(root, "--base", "HEAD", "--head", "HEAD")
    assert c["benchmarks"][0]["decision"] != "failed", c["benchmarks"][0].get("error")
    assert c["summary_msg"]["text"] == c["summary"]
    _check(c)


@pytest.mark.slow
def test_a_broken_loss_constraint_says_everything_in_messages(tmp_path):
    root = tmp_path / "repo"
    make_repo(root, [{"bench/__init__.py": "", "bench/work.py": CPU_STEP, "profopt.yml": SPEC.replace("{loss}", "1.0")},
                     {"profopt.yml": SPEC.replace("{loss}", "1.5")}])
    c = _compare(root, "--base", "HEAD~1", "--head", "HEAD")
    b = c["benchmarks"][0]
    assert b["decision"] == "reject" and b["reason_msg"]["id"] == "reason.broken", b.get("reason")
    loss = next(con for con in b["constraints"] if con["metric"] == "loss")
    assert not loss["ok"] and loss["detail_msg"]["text"] == loss["detail"]
    _check(c)


LIB = "def work(n):\n    x = 0\n    for i in range(n):\n        x += i\n    return x\n"
ASV = """\
import mylib


def time_work():
    mylib.work(2000)


def peakmem_work():
    mylib.work(2000)


def track_length():
    return mylib.work(10)


def time_broken():
    mylib.missing(3)
"""


@pytest.mark.slow
def test_an_asv_suite_comparison_says_everything_in_messages(tmp_path):
    root = tmp_path / "repo"
    spec = f"version: 1\nhardware_label: test-cpu\ndefaults: {FAST}\nsuites:\n  - {{asv: benchmarks}}\n"
    make_repo(root, [{"mylib.py": LIB, "profopt.yml": spec, "benchmarks/__init__.py": "",
                      "benchmarks/bench_lib.py": ASV},
                     {"mylib.py": LIB + "\n\ndef cube(n):\n    return n ** 3\n",
                      "benchmarks/bench_new.py": "import mylib\n\n\ndef time_cube():\n    mylib.cube(5)\n"}])
    c = _compare(root, "--base", "HEAD~1", "--head", "HEAD", rc=3)  # a benchmark failed: exit 3, a report all the same
    by = {b["name"]: b for b in c["benchmarks"]}
    assert by["bench_lib.track_length"]["decision"] == "no-change", by["bench_lib.track_length"]
    assert by["bench_lib.time_broken"]["decision"] == "failed"
    _check(c)
    # where en and zh disagreed: a track_ benchmark's recorded value held (zh said "no paired rounds")
    assert "its recorded value held within the constraint" in render(c, "md", "en")
    assert ZH["reason.held"] in render(c, "md", "zh")


# ---- the catalogs of what a comparison states ------------------------------------------------------

STATEMENTS = ("reason.", "why.", "con.", "summary.", "sum.", "cause.", "drift.", "mname.")
PRODUCERS = ("analyze.decide", "analyze.quality", "analyze.stats", "analyze.unpaired", "analyze.changepoints",
             "analyze.instruction_entries", "measure.instruction_runs", "pipeline.entries", "analyze.judge", "pipeline.confirm", "pipeline.compare_refs", "pipeline.compare_run",
             "suites.expand", "suites.callables")
FIELD = re.compile(r"\{(\w+)(?::([^}]*))?\}")
# A sample value by the field's spec: what a producer passes for it.
SAMPLES = {"msg": message("why.not_confirmed"), "msgs": [message("sum.memory_unchanged"), message("sum.con_ok", metric="x")],
           "metrics": ["step_time_ms", "peak_memory_mb"], "metric": "instructions", "sides": ["base", "head"],
           "side": "head", "verdict": "improved", "term": "failed",
           "broken": [["x", message("con.delta", delta="2%", op=">", limit="1%")]]}


def sample(key: str) -> dict:
    return message(key, **{name: SAMPLES.get(spec, 7 if spec else "7") for name, spec in FIELD.findall(EN[key])})


@pytest.mark.parametrize("key", sorted(k for k in EN if k.startswith(STATEMENTS)))
def test_every_statement_says_itself_in_zh_without_english(key):
    m = sample(key)
    assert say("en", m) == m["text"] and key in ZH
    zh = re.sub(r"`[^`]*`", " ", say("zh", m))  # code a user types stays as it is
    assert not english(zh) - {"Benjamini", "Hochberg"}, (key, zh)
    assert json.loads(json.dumps(m)) == m


def test_every_statement_is_made_by_a_producer():
    """No dead words; metric names are said through the `metric(s)` spec, not named."""
    named = set()
    for name in PRODUCERS:
        tree = ast.parse(inspect.getsource(importlib.import_module(f"profopt_ci.{name}")))
        named |= {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in EN}
    catalog = {k for k in EN if k.startswith(STATEMENTS) and not k.startswith("mname.")}
    assert catalog == catalog & named, catalog - named


def test_a_goal_metric_that_held_says_so_in_every_language():
    """Where en and zh disagreed: a no-change decided by its goal metric (zh said "every metric unchanged")."""
    c = fx.keep()
    b = c["benchmarks"][0]
    b["goal"]["metric"] = "peak_memory_mb"
    bench = dataclasses.replace(fx.JUDGED, goal=Goal("peak_memory_mb", "decrease", 10.0))
    c["benchmarks"][0] = b = decided(comparison_doc.entry(b), *decide_benchmark(bench, b["metrics"], b["constraints"]))
    assert b["decision"] == "no-change" and b["reason"] == "goal metric peak memory unchanged (step time improved)"
    assert b["reason"] in render(c, "md", "en")
    assert "目标指标峰值内存无变化（单步时间改善）" in render(c, "md", "zh")
