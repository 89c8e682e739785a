"""`profopt site`: the store in, a static site out — the index, a page and a data script per
benchmark and label, the stylesheet and scripts, the vendored chart library.

In: a store, the output folder, the labels (all when none), the language, the base URL the site is
served from (canonical links and site.json; every link inside the site is relative, so it works from
file:// and from any folder of GitHub Pages), the repository's URL (commit, pull request and issue
links). Out: the files, each written only when it changed (site/output.py), and a `Built` summary.
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from profopt_ci import __version__
from profopt_ci.report.site_links import data_path, page_path
from profopt_ci.site import data_files, pages
from profopt_ci.site.marks import Memo, find_changes
from profopt_ci.site.nightlies import CACHE_DIR, read_nightlies
from profopt_ci.site.output import Output
from profopt_ci.site.series import labels_of
from profopt_ci.site.table import RowCache
from profopt_ci.store.layout import Store, stderr_warn
from profopt_ci.store.stores import changes
from profopt_ci.words.i18n import say

ASSETS = ("site.css", "index.js", "bench.js", "uplot/uPlot.iife.min.js", "uplot/uPlot.min.css", "uplot/LICENSE")
UPLOT_VERSION = "1.6.32"


@dataclass(frozen=True)
class Built:
    out: Path
    labels: int
    benchmarks: int
    nightlies: int
    read: int          # store files read and checked this time (the rest came from the cache)
    searched: int      # windows searched for change points this time (the rest were memoized)
    written: int
    unchanged: int
    removed: int
    seconds: float


def _assets(output: Output) -> None:
    root = resources.files("profopt_ci.site").joinpath("assets")
    for name in ASSETS:
        output.write(f"assets/{name}", root.joinpath(name).read_bytes())


def _words(lang: str) -> str:
    return json.dumps({k: say(lang, f"site.hover.{k}") for k in ("commit", "date", "value", "ci")}, ensure_ascii=False)


def build_site(store: Store, out: Path, *, labels: list[str] | None = None, lang: str = "en",
               base_url: str | None = None, repo_url: str | None = None,
               warn: Callable[[str], None] = stderr_warn) -> Built:
    started = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    cache = out / CACHE_DIR
    nights, read = read_nightlies(store, labels=labels, cache_dir=cache, warn=warn)
    labs = labels_of(nights)
    docs = [d for d in changes(store, None, warn=warn) if not labels or (d[1]["change_point"].get("label") in labels)]
    memo = Memo(cache / "changes.msgpack")
    found = find_changes(labs, docs, memo)
    memo.save()
    output = Output.open(out, cache / "manifest.json")
    _assets(output)
    commit_url = f"{repo_url.rstrip('/')}/commit/" if repo_url else None
    words = _words(lang)
    table_cache = RowCache(cache / f"rows-{lang}.msgpack")
    rows: dict[str, list[dict]] = {}
    listing: dict[str, dict[str, str]] = {}
    count = 0
    for lab in labs:
        rows[lab.label] = []
        listing[lab.label] = {}
        for s in lab.series.values():
            cps = found.get((lab.label, s.name), [])
            names = pages.labels_of_metrics(lang, s)
            marks = pages.marks_of(lang, lab, s, cps, names, repo_url)
            output.write(data_path(lab.label, s.name),
                         data_files.script(data_files.payload(lab, s, names, {k: pages.band_word(lang, k) for k in names},
                                                              marks, commit_url)))
            output.write(page_path(lab.label, s.name),
                         pages.bench_html(lang, lab, s, marks, names, base_url=base_url, words=words,
                                          cache=table_cache).encode())
            rows[lab.label].append(pages.index_row(lang, lab, s, cps))
            listing[lab.label][s.name] = page_path(lab.label, s.name)
            count += 1
    newest = max((n.created for n in nights), default="")
    when = newest[:16].replace("T", " ") if newest else "—"
    output.write("index.html", pages.index_html(lang, labs, rows, built=when, version=__version__,
                                                base_url=base_url).encode())
    site = {"generator": f"profopt {__version__}", "base_url": base_url, "lang": lang, "pages": listing}
    output.write("site.json", (json.dumps(site, ensure_ascii=False, indent=1, sort_keys=True) + "\n").encode())
    output.write(".nojekyll", b"")  # GitHub Pages serves the files as they are
    output.finish()
    table_cache.save()
    return Built(out=out, labels=len(labs), benchmarks=count, nightlies=len(nights), read=read, searched=memo.searched,
                 written=output.written, unchanged=output.unchanged, removed=output.removed,
                 seconds=time.perf_counter() - started)
