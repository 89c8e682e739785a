"""A library whose PRs reach some benchmarks and not others (issue 37's setup), as a real git repository.

`library(root)` writes and commits: three modules (lib/maths.py, lib/text.py, lib/dispatch.py) and a
data file (lib/data/words.txt), six callables (bench_lib.py) and a pytest-benchmark suite of two
(benchmarks/test_bench.py), README and unit tests; `PRS` are the five pull requests of its checks,
each a change to apply on a branch. tests/test_reach_compare.py and bench/reach_done_when.py use it.
"""
from __future__ import annotations

import textwrap
from pathlib import Path

from conftest import git, write_files

SPEC = """\
version: 1
defaults: {rounds: 6, max_rounds: 12, threshold: 5%, profile: "off", quality_steps: 5}
benchmarks:
  - {name: crunch, callable: "bench_lib:make_crunch"}
  - {name: scaled, callable: "bench_lib:make_scaled"}
  - {name: dyn-square, callable: "bench_lib:make_square"}
  - {name: dyn-cube, callable: "bench_lib:make_cube"}
  - {name: words, callable: "bench_lib:make_words"}
  - {name: text, callable: "bench_lib:make_text"}
suites:
  - {pytest: benchmarks}
"""

MATHS = '''\
"""Arithmetic helpers."""
SCALE = 40


def slow_helper(n):
    """The inner loop."""
    total = 0
    for i in range(n):
        total += i * i
    return total


def crunch(n=3000):
    return slow_helper(n)


def scaled_sum(n=3000):
    # reads the module constant
    total = 0
    for _ in range(SCALE):
        total += n
    return total + sum(range(n // 4))
'''

TEXT = '''\
"""Text helpers."""
import os

HERE = os.path.dirname(__file__)


def normalize(s):
    """Lower-case and strip."""
    return " ".join(w.strip().lower() for w in s.split())


def tokens(s):
    return [w for w in normalize(s).split(" ") if w]


def load_words():
    with open(os.path.join(HERE, "data", "words.txt"), encoding="utf-8") as fh:
        return fh.read().split()
'''

DISPATCH = '''\
"""Operations chosen by name."""


def _op_square(n):
    return sum(i * i for i in range(n))


def _op_cube(n):
    return sum(i * i * i for i in range(n))


def run(name, n=2000):
    return globals()["_op_" + name](n)
'''

BENCH = '''\
from lib import dispatch, maths, text


def make_crunch():
    return lambda: maths.crunch()


def make_scaled():
    return lambda: maths.scaled_sum()


def make_square():
    return lambda: dispatch.run("square")


def make_cube():
    return lambda: dispatch.run("cube")


def make_words():
    words = text.load_words()
    def step():
        return sorted(set(w.lower() for w in words))
    return step


def make_text():
    line = "The Quick brown  FOX jumps over the lazy dog " * 20
    return lambda: text.normalize(line)
'''

SUITE = '''\
from lib import maths, text


def test_crunch_bench(benchmark):
    benchmark(maths.crunch)


def test_tokens_bench(benchmark):
    line = "Alpha beta  GAMMA delta " * 40
    benchmark(text.tokens, line)
'''

UNIT = '''\
from lib import text


def test_normalize():
    assert text.normalize("  A  b ") == "a b"
'''


def library(root: Path) -> Path:
    words = " ".join(f"word{i % 500}" for i in range(2000))
    write_files(root, {"profopt.yml": SPEC, "lib/__init__.py": "", "lib/maths.py": MATHS, "lib/text.py": TEXT,
                       "lib/dispatch.py": DISPATCH, "lib/data/words.txt": words + "\n", "bench_lib.py": BENCH,
                       "benchmarks/test_bench.py": SUITE, "tests/test_unit.py": UNIT,
                       "README.md": "# lib\n\nA library.\n"})
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the library")
    return root


def _edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text_now = path.read_text()
    assert old in text_now, (rel, old)
    path.write_text(text_now.replace(old, new, 1))


def docs_only(root: Path) -> None:
    """Docs, comments, docstrings and unit tests only."""
    (root / "README.md").write_text("# lib\n\nA library, now documented.\n\n## Use\n\n`from lib import maths`\n")
    _edit(root, "lib/maths.py", '"""The inner loop."""', '"""The inner loop: squares, summed."""')
    _edit(root, "lib/maths.py", "def crunch(n=3000):\n", "def crunch(n=3000):\n    # the whole computation\n")
    _edit(root, "lib/text.py", '"""Lower-case and strip."""', '"""Lower-case, then strip every word."""')
    (root / "tests" / "test_unit.py").write_text(UNIT + textwrap.dedent('''

        def test_tokens():
            assert text.tokens("a  b") == ["a", "b"]
        '''))


def slower_helper(root: Path) -> None:
    """The helper `crunch` calls made three times slower."""
    _edit(root, "lib/maths.py", "    for i in range(n):\n        total += i * i\n",
          "    for i in range(3 * n):\n        total += i * i\n")


def bigger_constant(root: Path) -> None:
    """A module constant read by one function."""
    _edit(root, "lib/maths.py", "SCALE = 40", "SCALE = 4000")


def slower_dispatched(root: Path) -> None:
    """A function reached only through globals()[name], made slower."""
    _edit(root, "lib/dispatch.py", "return sum(i * i for i in range(n))", "return sum(i * i for i in range(3 * n))")


def longer_data(root: Path) -> None:
    """The data file one factory reads, made longer."""
    words = " ".join(f"word{i}" for i in range(8000))
    (root / "lib" / "data" / "words.txt").write_text(words + "\n")


PRS = {"docs": docs_only, "helper": slower_helper, "constant": bigger_constant, "dispatch": slower_dispatched,
       "data": longer_data}


def pull_request(root: Path, name: str) -> str:
    """Branch `name` off main with that PR's change committed; returns the branch (the repo stays on it)."""
    git(root, "checkout", "-q", "main")
    git(root, "checkout", "-q", "-B", name)
    PRS[name](root)
    git(root, "commit", "-q", "-am", f"PR: {name}")
    return name
