"""Trying to break `measure: changed` (issue 37): a benchmark reached only in a way a reader of the
code would miss is still measured, and no other is. Each case is a real PR to a real repository
and a real compare; the rounds are few, since what is checked is which benchmarks were measured
and why (tests/test_reach_compare.py checks verdicts)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import git, make_repo, run_cli

SPEC = """\
version: 1
hardware_label: test
benchmarks_from: each  # each side runs its own suite files: a change to one is a change (head: both run the head's)
defaults: {rounds: 2, max_rounds: 2, round_ms: 20, warmup: 0, quality_steps: 1, profile: "off", threshold: 50%}
benchmarks:
  - {name: getattr, callable: "b:getattr_step"}
  - {name: registry, callable: "b:registry_step"}
  - {name: constant, callable: "b:constant_step"}
  - {name: class-attr, callable: "b:class_attr_step"}
  - {name: decorator, callable: "b:decorator_step"}
  - {name: default-arg, callable: "b:default_arg_step"}
  - {name: cached, callable: "b:cached_step"}
  - {name: reexport, callable: "b:reexport_step"}
  - {name: monkeypatch, callable: "b:monkeypatch_step"}
  - {name: by-name, callable: "b:by_name_step"}
  - {name: shadow, callable: "shadowing:step"}
  - {name: own-file, callable: "own:step"}
  - {name: subprocess, callable: "spawn:step"}
suites:
  - {pytest: suite}
"""

FILES = {
    "profopt.yml": SPEC,
    "pkg/__init__.py": "from pkg.impl import fast_sum as total\n",
    "pkg/impl.py": "def fast_sum(n):\n    return sum(range(n))\n",
    "pkg/dyn.py": "def op_a(n):\n    return n + 1\n\n\ndef op_b(n):\n    return n + 2\n",
    "pkg/reg.py": ("REGISTRY = {}\n\n\ndef register(name):\n    def put(fn):\n        REGISTRY[name] = fn\n"
                   "        return fn\n    return put\n\n\n@register('x')\ndef handler_x(n):\n    return n * 2\n\n\n"
                   "@register('y')\ndef handler_y(n):\n    return n * 3\n"),
    "pkg/consts.py": "FACTOR = 3\n\n\ndef scaled(n):\n    return n * FACTOR\n",
    "pkg/shapes.py": "class Box:\n    side = 2\n\n    def area(self):\n        return self.side ** 2\n",
    "pkg/deco.py": ("import functools\n\n\ndef traced(fn):\n    @functools.wraps(fn)\n    def wrapper(*a):\n"
                    "        return fn(*a)\n    return wrapper\n\n\n@traced\ndef work(n):\n    return n - 1\n"),
    "pkg/defaults.py": "def pad(s, width=8):\n    return s.ljust(width)\n",
    "pkg/caching.py": ("import functools\n\n\n@functools.lru_cache(maxsize=None)\ndef table(n):\n"
                       "    return [i * i for i in range(n)]\n"),
    "pkg/patch.py": "def slow(n):\n    return sum(range(n))\n\n\ndef quick(n):\n    return n * (n - 1) // 2\n",
    "pkg/plugins/__init__.py": "",
    "pkg/plugins/alpha.py": "def run(n):\n    return n % 7\n",
    "pkg/plugins/beta.py": "def run(n):\n    return n % 11\n",
    "b.py": """\
# each factory imports what it uses: a module-level change reaches every benchmark that imported
# the module, so each mechanism lives in a module of its own
import importlib

import pkg


def getattr_step():
    from pkg import dyn
    return lambda: getattr(dyn, "op_" + "a")(5)


def registry_step():
    from pkg import reg
    return lambda: reg.REGISTRY["x"](5)


def constant_step():
    from pkg import consts
    return lambda: consts.scaled(5)


def class_attr_step():
    from pkg import shapes
    return shapes.Box().area


def decorator_step():
    from pkg import deco
    return lambda: deco.work(5)


def default_arg_step():
    from pkg import defaults
    return lambda: defaults.pad("a")


def cached_step():
    from pkg import caching
    caching.table(50)  # filled in the factory: the steps only hit the cache
    return lambda: len(caching.table(50))


def reexport_step():
    return lambda: pkg.total(50)


def monkeypatch_step():
    from pkg import patch
    patch.slow = patch.quick  # the factory swaps the function the step calls
    return lambda: patch.slow(50)


def by_name_step(name="alpha"):
    module = importlib.import_module("pkg.plugins." + name)
    return lambda: module.run(5)
""",
    "shadowing.py": "import colorsys\n\n\ndef step():\n    return lambda: colorsys.rgb_to_hsv(0.2, 0.4, 0.4)\n",
    "own.py": "def step():\n    return lambda: sum(range(20))\n",
    "spawn.py": ("import subprocess\nimport sys\n\n\ndef step():\n"
                 "    subprocess.run([sys.executable, '-c', 'pass'], check=True)\n    return lambda: 1\n"),
    "suite/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef numbers():\n    return list(range(30))\n",
    "suite/test_fixture.py": "def test_sorted(benchmark, numbers):\n    benchmark(sorted, numbers)\n",
    # two tests in one file: their records share one collection (reach/runs.by_file), and a change
    # to one test's body reaches that test only
    "suite/test_plain.py": ("def test_plain(benchmark):\n    benchmark(sum, range(30))\n\n\n"
                            "def test_plain_min(benchmark):\n    benchmark(min, range(30))\n"),
    "docs/guide.md": "# guide\n",
}

# PR → the files it changes, and the benchmarks it must reach (the subprocess one is always measured:
# its reach cannot be recorded)
PRS: dict[str, tuple[dict[str, str], set[str]]] = {
    "getattr": ({"pkg/dyn.py": FILES["pkg/dyn.py"].replace("n + 1", "n + 10")}, {"getattr"}),
    "getattr-other": ({"pkg/dyn.py": FILES["pkg/dyn.py"].replace("n + 2", "n + 20")}, set()),
    "registry": ({"pkg/reg.py": FILES["pkg/reg.py"].replace("n * 2", "n * 4")}, {"registry"}),
    "constant": ({"pkg/consts.py": FILES["pkg/consts.py"].replace("FACTOR = 3", "FACTOR = 4")}, {"constant"}),
    "class-attr": ({"pkg/shapes.py": FILES["pkg/shapes.py"].replace("side = 2", "side = 3")}, {"class-attr"}),
    "decorator": ({"pkg/deco.py": FILES["pkg/deco.py"].replace("return fn(*a)", "return fn(*a) + 0")},
                  {"decorator"}),
    "default-arg": ({"pkg/defaults.py": FILES["pkg/defaults.py"].replace("width=8", "width=9")}, {"default-arg"}),
    "cached": ({"pkg/caching.py": FILES["pkg/caching.py"].replace("i * i", "i * i * i")}, {"cached"}),
    "reexport": ({"pkg/impl.py": FILES["pkg/impl.py"].replace("sum(range(n))", "sum(list(range(n)))")},
                 {"reexport"}),  # every benchmark imports pkg: its __init__ runs, fast_sum only here
    "monkeypatch": ({"pkg/patch.py": FILES["pkg/patch.py"].replace("n * (n - 1) // 2", "(n - 1) * n // 2")},
                    {"monkeypatch"}),
    "by-name": ({"pkg/plugins/alpha.py": "def run(n):\n    return n % 5\n"}, {"by-name"}),
    "by-name-other": ({"pkg/plugins/beta.py": "def run(n):\n    return n % 13\n"}, set()),
    "conftest": ({"suite/conftest.py": FILES["suite/conftest.py"].replace("range(30)", "range(40)")},
                 {"test_sorted"}),
    "own-file": ({"own.py": FILES["own.py"].replace("range(20)", "range(21)")}, {"own-file"}),
    "suite-file": ({"suite/test_plain.py": FILES["suite/test_plain.py"].replace("sum, range(30)", "sum, range(31)")},
                   {"test_plain"}),
    "shadow": ({"colorsys.py": "def rgb_to_hsv(r, g, b):\n    return (r, g, b)\n"}, {"shadow"}),
    "docs": ({"docs/guide.md": "# guide\n\nMore.\n", "docs/new.md": "# new\n", "NOTES.md": "notes\n"}, set()),
}


def _compare(root: Path, branch: str) -> dict:
    proc = run_cli(["compare", "--base", "main", "--head", branch, "--fail-on", "none", "--out", f"{branch}.json"],
                   root, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((root / f"{branch}.json").read_text())


@pytest.fixture(scope="module")
def breaks(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("breaks") / "repo"
    make_repo(root, [{**FILES, ".gitignore": "*.json\n.profopt/\n"}])
    for name, (files, _) in PRS.items():
        git(root, "checkout", "-q", "-b", name, "main")
        for rel, text in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", name)
    git(root, "checkout", "-q", "main")
    return root


def _measured(c: dict) -> dict[str, dict]:
    return {b["name"]: b["reach"] for b in c["benchmarks"] if b["reach"]["measured"]}


@pytest.mark.slow
@pytest.mark.parametrize("pr", list(PRS))
def test_a_change_reached_only_dynamically_is_measured_and_nothing_else(breaks, pr, monkeypatch, tmp_path):
    monkeypatch.setenv("PROFOPT_CACHE_DIR", str(breaks.parent / "cache"))  # records kept across the PRs
    c = _compare(breaks, pr)
    measured = _measured(c)
    assert measured["subprocess"]["why"]["id"] == "reach.unknown.process"  # python started by the factory
    wanted = PRS[pr][1] | {"subprocess"}
    if pr == "shadow":  # a module added at the top, where imports look first, shadowing the stdlib's
        assert measured["shadow"]["changed"] == ["colorsys (import: colorsys.py)"], measured["shadow"]
    assert set(measured) == wanted, {n: r["why"]["text"] for n, r in measured.items()}
    for name in wanted - {"subprocess"}:
        assert measured[name]["changed"] and measured[name]["why"]["id"] == "reach.changed", measured[name]
        assert c["benchmarks"][[b["name"] for b in c["benchmarks"]].index(name)]["rounds"] == 2
    skipped = [b for b in c["benchmarks"] if not b["reach"]["measured"]]
    assert all(b["decision"] == "no-change" and b["rounds"] == 0 and not b["samples"]["base"] for b in skipped)
    assert c["counts"]["not_measured"] == len(skipped) == len(c["benchmarks"]) - len(wanted)
