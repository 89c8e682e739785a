"""The first round's package listing keeps which distribution owns which module in a file of the
compare's work directory, so each benchmark's first round no longer reads every installed
package's file list (~70 ms) again — for as long as sys.path and its directories are unchanged."""
from __future__ import annotations

import json
import sys

import pytest

from profopt_ci.measure.worker import _owners, imported_packages


def test_a_kept_listing_gives_what_a_fresh_one_gives(tmp_path):
    cache = tmp_path / "packages-base.json"
    fresh = imported_packages()
    assert fresh["pytest"] == pytest.__version__
    assert imported_packages(str(cache)) == fresh  # computed, then written
    assert cache.exists()
    assert imported_packages(str(cache)) == fresh  # read back


def test_the_file_is_read_while_sys_path_is_unchanged_and_ignored_once_it_changes(tmp_path, monkeypatch):
    cache = tmp_path / "packages-head.json"
    _owners(str(cache))
    kept = json.loads(cache.read_text())
    kept["owners"] = {"pytest": ["a-kept-owner"]}
    cache.write_text(json.dumps(kept))
    assert _owners(str(cache)) == {"pytest": ["a-kept-owner"]}  # the file, not a new listing
    (tmp_path / "new").mkdir()
    monkeypatch.setattr(sys, "path", [*sys.path, str(tmp_path / "new")])
    assert "a-kept-owner" not in _owners(str(cache)).get("pytest", [])  # another path: listed anew
    assert "a-kept-owner" not in json.loads(cache.read_text())["owners"].get("pytest", [])
    # a directory on the path that changes (a package installed into it) is listed anew too
    monkeypatch.setattr(sys, "path", [*sys.path])
    kept = json.loads(cache.read_text())
    cache.write_text(json.dumps({**kept, "owners": {"pytest": ["a-kept-owner"]}}))
    (tmp_path / "new" / "mod.py").write_text("")
    assert "a-kept-owner" not in _owners(str(cache)).get("pytest", [])


def test_a_corrupt_or_missing_file_is_listed_anew(tmp_path):
    cache = tmp_path / "packages-base.json"
    cache.write_text("{not json")
    assert _owners(str(cache)) == _owners(None)
    assert _owners(str(tmp_path / "no-such-dir" / "x.json")) == _owners(None)  # and unwritable: no error
