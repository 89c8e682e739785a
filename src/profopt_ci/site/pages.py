"""The site's HTML: the index (a table per hardware label) and one page per benchmark and label.

In: the labels' series (site/series.py), their change points (site/marks.py), the language, the
commit URL prefix, the site's base URL. Out: the pages' text, and each benchmark's marks (the words
its chart and its table show at a nightly). Templates in site/templates/ are autoescaped; the long
tables are built here, every value passed through `escape` (names, commits, statuses and subjects
are repository text: a benchmark named `<img onerror=…>` stays text). No inline script or style:
the Content-Security-Policy allows the site's own files only.
"""
from __future__ import annotations

import functools
from pathlib import Path
from urllib.parse import quote

import jinja2
from markupsafe import Markup

from profopt_ci.report.format import DASH, num, pct
from profopt_ci.report.headline import metric_label
from profopt_ci.report.site_links import data_path, page_path
from profopt_ci.site.marks import Change
from profopt_ci.site.series import Label, Series
from profopt_ci.site.sparkline import sparkline
from profopt_ci.site.table import RowCache, rows
from profopt_ci.words.i18n import say

TEMPLATES = Path(__file__).parent / "templates"
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; font-src 'self'; "
       "connect-src 'none'; base-uri 'none'; form-action 'none'")
SPARK_N = 30
MAIN = "step_time_ms"


@functools.lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True, trim_blocks=True,
                              lstrip_blocks=True, undefined=jinja2.StrictUndefined)


def labels_of_metrics(lang: str, s: Series) -> dict[str, str]:
    out = {}
    for key in s.metrics:
        if key.startswith("quality:"):
            out[key] = say(lang, "site.metric.quality", name=key.split(":", 1)[1])
        else:
            out[key] = metric_label(lang, key, s.unit)
    return out


def band_word(lang: str, key: str) -> str:
    """What a metric's band is: the median's 95% CI, or for a count or a recorded value the range."""
    ranged = key == "instructions" or key.startswith("quality:")
    return say(lang, "site.col.range" if ranged else "site.col.ci")


def _ci(low: float, high: float) -> str:
    return f"{num(low)}–{num(high)}" if low == low and high == high else DASH   # NaN: none


# ---- marks: what a nightly of a benchmark is marked with -----------------------------------------


def _bisect_words(lang: str, doc: dict, repo_url: str | None) -> tuple[str, list[tuple[str, str]]]:
    """(the culprit's sentence, its links: pull request, issue search)."""
    first = doc.get("first_bad") or {}
    effect = first.get("effect") or {}
    text = say(lang, "site.mark.first_bad", commit=str(first.get("commit"))[:12], subject=str(first.get("subject") or ""),
             date=str(first.get("author_date") or "")[:10], effect=pct(effect.get("delta_pct")))
    if len(first.get("candidates") or []) > 1:
        text += "; " + say(lang, "site.mark.candidates", n=len(first["candidates"]))
    links = []
    if repo_url:
        if isinstance(first.get("pr"), int):
            links.append((say(lang, "site.mark.pr", number=first["pr"]), f"{repo_url}/pull/{first['pr']}"))
        query = quote(f'is:issue in:title "{str(first.get("commit"))[:12]}"')
        links.append((say(lang, "site.mark.issue"), f"{repo_url}/issues?q={query}"))
    return text, links


def marks_of(lang: str, lab: Label, s: Series, changes: list[Change], labels: dict[str, str],
             repo_url: str | None) -> list[dict]:
    """The marks of one benchmark's nightlies: {i (point), kind, metric, text, links}, in order."""
    out = []
    for c in changes:
        where = say(lang, "site.cp", delta=pct(c.delta_pct), commit=c.to_commit[:12], date=c.date)
        text = f"{labels.get(c.metric, c.metric)}: {say(lang, 'site.mark.change', delta=where)}"
        links: list[tuple[str, str]] = []
        state = say(lang, f"site.state.{c.state}", commit=str(((c.bisect or {}).get('first_bad') or {}).get('commit'))[:12])
        text += f" ({state})"
        if c.bisect and c.bisect.get("first_bad"):
            words, links = _bisect_words(lang, c.bisect, repo_url)
            text += f"; {words}"
        out.append({"i": c.point, "kind": "change", "metric": c.metric, "text": text, "links": links})
    for j, night in enumerate(s.at):
        if night in lab.env_changes:
            moved = ", ".join(f"{k} {a} → {b}" for k, a, b in lab.env_changes[night])
            out.append({"i": j, "kind": "env", "metric": None, "text": say(lang, "site.mark.env", changes=moved), "links": []})
        if night in lab.runner_off:
            out.append({"i": j, "kind": "runner", "metric": None,
                        "text": say(lang, "site.mark.runner", pct=pct(lab.runner_off[night])), "links": []})
        if s.failed[j] is not None:
            out.append({"i": j, "kind": "failed", "metric": None,
                        "text": say(lang, "site.mark.failed", status=say(lang, f"site.status.{s.failed[j]}", default=str(s.failed[j]))), "links": []})
    out.sort(key=lambda m: m["i"])
    return out


# ---- the benchmark page ---------------------------------------------------------------------------


def bench_html(lang: str, lab: Label, s: Series, marks: list[dict], labels: dict[str, str], *,
               base_url: str | None, words: str, cache: RowCache) -> str:
    path = page_path(lab.label, s.name)
    up = "../" * path.count("/")
    ctx = dict(
        lang=lang, t=functools.partial(say, lang), csp=CSP, up=up, data=up + data_path(lab.label, s.name),
        canonical=f"{base_url.rstrip('/')}/{path}" if base_url else None, label=lab.label, name=s.name,
        unit=s.unit, params=s.params, metrics=[(k, v, band_word(lang, k)) for k, v in labels.items()],
        rows=rows(lab, s, marks, cache),
        marks=[m for m in marks if m["kind"] in ("change", "env")], words=words, n=len(s),
        newest=lab.nightlies[s.at[-1]] if s.at else None,
    )
    return _env().get_template("bench.html.j2").render(**ctx)


# ---- the index ------------------------------------------------------------------------------------


def _main(s: Series) -> str | None:
    return MAIN if MAIN in s.metrics else next(iter(s.metrics), None)


def _since(values: list[float], back: int) -> tuple[str, float | None]:
    if len(values) <= back or not values[-1] > 0 or not values[-1 - back] > 0:
        return DASH, None
    change = (values[-1] / values[-1 - back] - 1) * 100
    return pct(change), change


def index_row(lang: str, lab: Label, s: Series, changes: list[Change]) -> dict:
    key = _main(s)
    v = s.metrics.get(key) if key else None
    valued = [j for j, x in enumerate(v.median) if x > 0] if v else []
    last = valued[-1] if valued else None
    d7, d7v = _since(v.median, 7) if v else (DASH, None)
    d30, d30v = _since(v.median, 30) if v else (DASH, None)
    newest_night = len(lab.nightlies) - 1
    if s.at and s.at[-1] == newest_night:
        status = (say(lang, "site.failed", status=say(lang, f"site.status.{s.failed[-1]}", default=str(s.failed[-1]))) if s.failed[-1]
                  else say(lang, "site.ok"))
        failed = s.failed[-1] is not None
    else:
        status, failed = DASH, False
    cp = next((c for c in reversed(changes) if c.metric == key), None)
    cp_text = DASH
    if cp is not None:
        first = ((cp.bisect or {}).get("first_bad") or {}).get("commit")
        cp_text = (say(lang, "site.cp", delta=pct(cp.delta_pct), commit=cp.to_commit[:12], date=cp.date) + " · "
                   + say(lang, f"site.state.{cp.state}", commit=str(first)[:12]))
    return {
        "name": s.name, "href": page_path(lab.label, s.name),
        "metric": labels_of_metrics(lang, s).get(key, "") if key and key != MAIN else "",
        "newest": num(v.median[last]) if last is not None else DASH, "newest_v": v.median[last] if last is not None else None,
        "ci": _ci(v.low[last], v.high[last]) if last is not None else DASH,
        "spark": sparkline(v.median[-SPARK_N:]) if v else Markup(""),
        "d7": d7, "d7_v": d7v, "d30": d30, "d30_v": d30v,
        "cp": cp_text, "cp_v": cp.point if cp else None, "cp_state": cp.state if cp else "",
        "status": status, "failed": failed,
    }


def index_html(lang: str, labels: list[Label], rows: dict[str, list[dict]], *, built: str, version: str,
               base_url: str | None) -> str:
    sections = []
    for lab in labels:
        newest = lab.nightlies[-1]
        sections.append({"label": lab.label, "anchor": "l-" + page_path(lab.label, "")[2:].split("/")[0],
                         "meta": say(lang, "site.label.meta", n=len(lab.nightlies), date=newest.created[:10],
                                   commit=newest.commit[:12]),
                         "rows": rows[lab.label]})
    ctx = dict(lang=lang, t=functools.partial(say, lang), csp=CSP, up="", sections=sections, built=built,
               version=version, canonical=f"{base_url.rstrip('/')}/index.html" if base_url else None)
    return _env().get_template("index.html.j2").render(**ctx)
