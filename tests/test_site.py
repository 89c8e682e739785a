"""`profopt site` without a browser: the files it writes, their escaping and policy, what a rebuild
rewrites, the change documents the nightly keeps in the store, the vendored uPlot, the report's
links to the site. The pages in Chromium: tests/test_site_browser.py."""
from __future__ import annotations

import hashlib
import json
import re
from html import unescape
from importlib import resources
from pathlib import Path

import comparison_fixtures as fx
import pytest
from conftest import run_cli
from sitekit import HOSTILE, night, policy_problems, sha, step_store

from profopt_ci.documents import bisect as bisect_doc
from profopt_ci.report.render import render
from profopt_ci.report.site_links import data_path, page_path
from profopt_ci.site.build import ASSETS, build_site
from profopt_ci.store import stores


def _build(store, out, **kw):
    return build_site(store, out, warn=lambda m: None, **kw)


def test_the_site_has_an_index_and_a_page_and_data_script_per_benchmark_and_label(tmp_path):
    step_store(tmp_path / "s", names=("busy", HOSTILE))
    step_store(tmp_path / "s", n=6, names=("busy",), label="gpu-a100")
    proc = run_cli(["site", "--store", f"dir:{tmp_path / 's'}", "--out", str(tmp_path / "site"),
                    "--repo-url", "https://github.com/octo/bench"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "15 nightlies, 3 benchmark page(s) on 2 label(s)" in proc.stderr
    site = tmp_path / "site"
    listing = json.loads((site / "site.json").read_text())["pages"]
    assert listing == {"gpu-a100": {"busy": page_path("gpu-a100", "busy")},
                       "test-cpu": {"busy": page_path("test-cpu", "busy"), HOSTILE: page_path("test-cpu", HOSTILE)}}
    index = (site / "index.html").read_text()
    for label, pages in listing.items():
        for name, path in pages.items():
            assert f'href="{path}"' in index
            page = (site / path).read_text()
            data = (site / data_path(label, name)).read_text()
            assert data.startswith("window.profoptData=") and data.endswith(";\n")
            payload = json.loads(data[len("window.profoptData="):-2])
            assert payload["name"] == name and payload["label"] == label
            assert payload["commitUrl"] == "https://github.com/octo/bench/commit/"
            assert len(payload["commits"]) == (9 if label == "test-cpu" else 6)
            assert "../../data/" in page and "../../assets/bench.js" in page
    assert re.fullmatch(r"b/test-cpu/busy__img_src_x_onerror[_a-z0-9]+quoted_-[0-9a-f]{10}\.html",
                        page_path("test-cpu", HOSTILE))
    for name in ASSETS:
        assert (site / "assets" / name).is_file()


def test_every_page_is_escaped_and_keeps_to_its_policy(tmp_path):
    step_store(tmp_path / "s", names=(HOSTILE,))
    _build(stores.DirStore(tmp_path / "s"), tmp_path / "site")
    pages = [tmp_path / "site" / "index.html", tmp_path / "site" / page_path("test-cpu", HOSTILE)]
    for path in pages:
        html = path.read_text()
        assert "<img" not in html and "&lt;img src=x onerror=&#34;alert(1)&#34;&gt; &amp; &#34;quoted&#34;" in html
        assert policy_problems(html) == []
        csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', html)
        policy = unescape(csp[1]) if csp else ""
        assert "default-src 'none'" in policy and "script-src 'self'" in policy and "style-src 'self'" in policy
        assert "http://" not in html and "https://" not in html  # nothing from another origin (no --repo-url)
    data = (tmp_path / "site" / data_path("test-cpu", HOSTILE)).read_text()
    assert json.loads(data[len("window.profoptData="):-2])["name"] == HOSTILE  # a JSON string, nothing more


def test_a_rebuild_rewrites_only_what_changed(tmp_path):
    step_store(tmp_path / "s", names=("busy", "idle"))
    step_store(tmp_path / "s", n=6, names=("busy",), label="gpu-a100")
    store, out = stores.DirStore(tmp_path / "s"), tmp_path / "site"
    first = _build(store, out)
    assert first.read == 15 and first.written == first.written + first.unchanged  # nothing to keep yet
    files = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file() and ".profopt-site" not in p.parts}
    again = _build(store, out)
    assert (again.read, again.written, again.searched) == (0, 0, 0)
    stores.save(store, night(9, {"busy": 13.0, "idle": 14.3}))   # one more test-cpu nightly
    third = _build(store, out)
    changed = {p for p in files if p.stat().st_mtime_ns != files[p]}
    want = {out / "index.html"} | {out / f(label, name) for f in (page_path, data_path)
                                   for label, name in (("test-cpu", "busy"), ("test-cpu", "idle"))}
    assert third.read == 1 and changed == want and third.written == len(want)
    only = _build(store, out, labels=["gpu-a100"])   # a label left out: its pages go
    assert only.removed == 4 and not (out / page_path("test-cpu", "busy")).exists()
    assert (out / page_path("gpu-a100", "busy")).is_file()


def test_a_change_point_shows_what_the_stored_bisection_found(tmp_path, capfd):
    store = step_store(tmp_path / "s", n=9, at=5, cpu_from=7)
    culprit = {"commit": sha(5), "subject": "Use a <slower> loop", "author_date": "2026-11-05T10:00:00+00:00",
               "pr": 42, "good_end": sha(4), "candidates": [],
               "effect": {"verdict": "regressed", "delta_pct": 29.8, "ci_low_pct": 27.0, "ci_high_pct": 32.5, "rounds": 12}}
    doc = bisect_doc.build(created="2026-11-06T04:00:00+00:00", first_bad={"benchmark": "busy", **culprit},
                           good=(None, sha(4)), bad=(None, sha(5)), metric="step_time_ms", threshold_pct=3.0,
                           hardware_label="test-cpu", commits=1, ends=[], steps=[], probes=[], notes=[], seconds=1.0,
                           change_point={"label": "test-cpu", "benchmark": "busy", "from_commit": sha(4)[:12],
                                         "to_commit": sha(5)[:12], "delta_pct": 30.0, "p_value": 1e-5, "before": 10.0,
                                         "after": 13.0, "from_date": "2026-11-05", "to_date": "2026-11-06"})
    stores.save_change(store, doc)
    proc = run_cli(["baseline", "list", "--store", f"dir:{tmp_path / 's'}"], tmp_path)
    assert proc.returncode == 0 and "skipped" not in proc.stderr  # the changes folder is not a foreign file
    built = _build(store, tmp_path / "site", repo_url="https://github.com/octo/bench")
    assert built.benchmarks == 1
    page = (tmp_path / "site" / page_path("test-cpu", "busy")).read_text()
    assert f"first bad commit {sha(5)[:12]} “Use a &lt;slower&gt; loop” (2026-11-05), effect +29.8%" in page
    assert 'href="https://github.com/octo/bench/pull/42"' in page
    assert "environment: cpu_model Test CPU → Other CPU" in page
    index = (tmp_path / "site" / "index.html").read_text()
    assert re.search(rf"\+(29|30|31)\.\d% at {sha(5)[:12]} \(2026-11-06\) · bisected to {sha(5)[:12]}", index)


def test_the_chinese_site_says_its_words_in_chinese(tmp_path):
    step_store(tmp_path / "s")
    _build(stores.DirStore(tmp_path / "s"), tmp_path / "site", lang="zh")
    page = (tmp_path / "site" / page_path("test-cpu", "busy")).read_text()
    assert '<html lang="zh-CN">' in page and "单步时间 (ms)" in page and "变化点" in page
    assert "每晚基准历史" in (tmp_path / "site" / "index.html").read_text()


def test_uplot_is_vendored_pinned_with_its_licence_in_the_package():
    root = resources.files("profopt_ci.site").joinpath("assets/uplot")
    record = root.joinpath("VENDORED.md").read_text()
    for name in ("uPlot.iife.min.js", "uPlot.min.css"):
        digest = hashlib.sha256(root.joinpath(name).read_bytes()).hexdigest()
        assert f"`{name}`\n  (sha256 {digest})" in record or f"`{name}` (sha256 {digest})" in record.replace("\n  ", " ")
    assert json.loads(root.joinpath("package.json").read_text())["version"] == "1.6.32"
    assert "MIT License" in root.joinpath("LICENSE").read_text() and "Leon Sorokin" in root.joinpath("LICENSE").read_text()
    pyproject = (Path(__file__).parent.parent / "pyproject.toml").read_text()
    assert '"site/assets/uplot/*"' in pyproject and '"site/templates/*"' in pyproject


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_a_report_links_each_benchmark_to_its_site_page(fmt):
    c = fx.keep()
    url = "https://octo.github.io/bench"
    with_link = render(c, fmt, "en", max_chars=None, site_url=url)
    names = [b["name"] for b in c["benchmarks"]]
    for name in names:
        target = f"{url}/{page_path(c['hardware_label'], name)}"
        assert (f"[nightly history](<{target}>)" if fmt == "md" else f'<a href="{target}">nightly history</a>') in with_link
    assert "nightly history" not in render(c, fmt, "en", max_chars=None)


def test_bad_site_flags_are_usage_errors(tmp_path):
    for args in (["--base-url", "javascript:alert(1)"], ["--repo-url", "https://x/\"><script>"], ["--store", "nowhere"]):
        proc = run_cli(["site", "--store", f"dir:{tmp_path}", "--out", str(tmp_path / "o"), *args], tmp_path)
        assert proc.returncode == 2 and proc.stderr.startswith("profopt: ") and "Traceback" not in proc.stderr


def test_the_report_verb_links_to_the_site_and_the_action_passes_site_url_on(tmp_path):
    import json as _json

    from profopt_ci.action.inputs import settings_from_args
    from profopt_ci.action.workspace import compare_argv
    from profopt_ci.errors import UsageError

    c = fx.keep()
    (tmp_path / "c.json").write_text(_json.dumps(c))
    proc = run_cli(["report", "c.json", "--format", "md", "--site-url", "https://octo.github.io/bench/"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"(<https://octo.github.io/bench/{page_path(c['hardware_label'], 'train-step')}>)" in proc.stdout
    bad = run_cli(["report", "c.json", "--site-url", "javascript:alert(1)"], tmp_path)
    assert bad.returncode == 2 and "--site-url" in bad.stderr

    env = {"GITHUB_WORKSPACE": str(tmp_path), "INPUT_MODE": "pr", "INPUT_SITE_URL": "https://octo.github.io/bench"}
    s = settings_from_args([], env)
    assert compare_argv(s, "measure", "/work")[-2:] == ["--site-url", "https://octo.github.io/bench"]
    assert settings_from_args([], {**env, "INPUT_MODE": "site", "INPUT_PAGES": "true"}).mode == "site"
    for name, value in (("INPUT_SITE_URL", "ftp://x"), ("INPUT_PAGES", "maybe")):
        with pytest.raises(UsageError, match=name.removeprefix("INPUT_").lower().replace("_", "-")):
            settings_from_args([], {**env, name: value})
