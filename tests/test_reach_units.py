"""reach/units.py: a Python source as code units, compared as code and not as text."""
from __future__ import annotations

import textwrap

from profopt_ci.reach.units import MODULE, changed_units, units_of

SOURCE = textwrap.dedent('''\
    """The module's docstring."""
    import functools

    LIMIT = 10


    def helper(x, scale=LIMIT):
        """Its docstring."""
        return x * scale  # a comment


    @functools.cache
    def cached(n):
        def inner(k):
            return k + 1
        return sum(inner(i) for i in range(n))


    class Shape:
        """A shape."""
        sides = 4

        def area(self):
            return self.sides ** 2

        @property
        def name(self):
            return "shape"


    if LIMIT > 5:
        def maybe():
            return 1
    ''')


def _units(text: str):
    got = units_of(text.encode())
    assert got is not None
    return got


def test_functions_methods_and_guarded_defs_are_units_and_nested_ones_belong_to_their_function():
    u = _units(SOURCE)
    assert set(u.functions) == {"helper", "cached", "Shape.area", "Shape.name", "maybe"}
    lines = SOURCE.splitlines()
    at = {name: i + 1 for i, line in enumerate(lines) for name in ("def inner", "def helper", "@functools.cache",
                                                                   "sides = 4", "return sum", "def area")
          if line.strip().startswith(name)}
    assert u.unit_at(at["def helper"]) == "helper"
    assert u.unit_at(at["@functools.cache"]) == "cached"  # a decorated function's code starts at its decorator
    assert u.unit_at(at["def inner"]) == "cached"  # nested: part of the function that defines it
    assert u.unit_at(at["return sum"]) == "cached"  # its generator expression too
    assert u.unit_at(at["sides = 4"]) == MODULE  # a class body runs as the module is imported
    assert u.unit_at(at["def area"]) == "Shape.area"
    assert u.unit_at(1) == MODULE


def test_docstrings_comments_and_moved_lines_are_no_change():
    moved = SOURCE.replace('"""The module\'s docstring."""', '"""Another docstring,\n\nlonger."""\n\n\n')
    moved = moved.replace('"""Its docstring."""', '"""Explains helper."""').replace("# a comment", "# reworded")
    moved = moved.replace('    """A shape."""\n', "")  # a class docstring removed
    old, new = _units(SOURCE), _units(moved)
    assert old.module == new.module and old.functions == new.functions
    assert changed_units(old, new, {MODULE, "helper", "cached", "Shape.area"}) == []


def test_a_body_change_is_its_unit_only_and_a_module_level_change_is_the_module():
    old = _units(SOURCE)
    body = _units(SOURCE.replace("return self.sides ** 2", "return self.sides ** 3"))
    assert changed_units(old, body, {MODULE, "Shape.area", "helper"}) == ["Shape.area"]
    assert changed_units(old, body, {MODULE, "helper"}) == []  # it did not run: nothing it ran changed
    for edit in (("LIMIT = 10", "LIMIT = 11"),  # a module constant
                 ("sides = 4", "sides = 5"),  # a class attribute
                 ("def helper(x, scale=LIMIT):", "def helper(x, scale=LIMIT + 1):"),  # a default argument
                 ("@functools.cache", "@functools.lru_cache(maxsize=2)")):  # a decorator
        new = _units(SOURCE.replace(*edit))
        assert changed_units(old, new, {MODULE}) == [MODULE], edit


def test_a_nested_function_change_is_its_enclosing_unit_and_a_removed_unit_changed():
    old = _units(SOURCE)
    nested = _units(SOURCE.replace("return k + 1", "return k + 2"))
    assert changed_units(old, nested, {"cached"}) == ["cached"]
    gone = _units(SOURCE.replace("    @property\n    def name(self):\n        return \"shape\"\n", ""))
    assert "Shape.name" in changed_units(old, gone, {"Shape.name"})


def test_a_name_defined_twice_is_two_units_and_a_source_that_does_not_parse_changes_everything():
    twice = _units("def f():\n    return 1\n\n\ndef f():\n    return 2\n")
    assert set(twice.functions) == {"f", "f#2"} and twice.unit_at(5) == "f#2"
    assert units_of(b"def broken(:\n") is None
    assert changed_units(_units(SOURCE), None, {"helper"}) == [MODULE]


def test_package_metadata_the_setup_made_is_not_a_file_the_benchmark_depends_on_but_its_data_is(tmp_path):
    """An editable install's egg-info and the checkout's .git pointer say what the project is (the
    gated pyproject.toml and the commit); a data file the setup wrote is the benchmark's input."""
    import subprocess

    from profopt_ci.reach import record
    from profopt_ci.reach.trees import Tree

    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("X = 1\n")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c"]):
        subprocess.run(["git", *args], cwd=root, check=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, check=True, capture_output=True,
                            text=True).stdout.strip()
    made = {"Pkg.egg-info/PKG-INFO": "Version: 1.0.dev3+g1234\n", "pkg/table.dat": "1 2 3\n"}
    for rel, text in made.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    opened = [str(root / rel) for rel in [*made, ".git/HEAD", "pkg/__init__.py"]]
    rec = record.build({"opened": opened}, benchmark="b", identity="i", tree=Tree(root, commit), top=root,
                       venv=None, env={}, seconds=0.1)
    assert rec.untracked == ["pkg/table.dat"]
    assert record.metadata("Pkg.egg-info/PKG-INFO") and record.metadata(".git") and record.metadata("x/a.dist-info/RECORD")
    assert not record.metadata("pkg/table.dat") and not record.metadata("egg-info.py")
