"""The report stage: a comparison@1 dict in, Markdown / HTML / JSON / terminal text out. No analysis here.

    render(comparison, "md", "zh", max_chars=65000, full_report_hint="the job summary")
    view = build_view(comparison, "en")          # once, then every format reads it:
    render(comparison, "md", view=view); write_html(comparison, path, view=view)
    headline(comparison, "en")    # line one, plain text
    shrink(md, limit)             # for the publisher when GitHub answers 422

Templates live in `profopt_ci/report/templates/`: `report.md.j2` and `report.html.j2`, with the
partials `_benchmark.md.j2`, `_benchmark.html.j2`, `_details.md.j2` and `_history.md.j2` beside
them; `template=` replaces the top one and may include the package's partials. The terminal
format is report/text.py, JSON the comparison itself. The Markdown environment escapes every
`{{ … }}` by default (see report/format.md_inline): benchmark names, params, op names and error
tails are untrusted PR content. HTML autoescapes. The context a template gets: `v` (the view as
the format reads it, report/view.Page), `c` (the raw comparison), `lang`, `say(key, **fields)` (the
message catalog), `full_report_hint`, `preface` (trusted Markdown written first, or None); in
Markdown also `mermaid(chart)` and the filter `code` (a fenced block).

Scale: the view builds what a template reads, when it reads it (report/view.py). Markdown is
streamed and, when it is already past the limit, stopped where shrink() cuts it (report/markdown.py).
The HTML page gives the first HTML_FULL_MAX benchmarks in report order a full section with plots
and every other one a row (name, decision, step time change and CI), and is streamed by `write_html`.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path

import jinja2

from profopt_ci.documents.comparison import load_comparison
from profopt_ci.documents.names import COMPARISON_SCHEMA
from profopt_ci.documents.types import json_default
from profopt_ci.errors import UsageError
from profopt_ci.report import icons
from profopt_ci.report import view as view_mod
from profopt_ci.report.format import Raw, chart_label, chart_title, md_code_block, md_escape, md_inline
from profopt_ci.report.headline import headline
from profopt_ci.report.markdown import markdown
from profopt_ci.report.shrink import shrink
from profopt_ci.report.view import View, build_view
from profopt_ci.words.i18n import LANGS, say

__all__ = ["render", "write_html", "build_view", "headline", "shrink", "load_comparison", "FORMATS", "MAX_CHARS"]

FORMATS = ("md", "html", "json", "text")
MAX_CHARS = 65000
TEXT_ERROR_BUDGET = 8000  # characters of error tails a terminal shows
TEMPLATES = Path(__file__).parent / "templates"


def render(comparison: dict, fmt: str = "md", lang: str = "en", *, template: Path | None = None,
           max_chars: int | None = MAX_CHARS, full_report_hint: str | None = None, cols: int | None = None,
           view: View | None = None, site_url: str | None = None, preface: str | None = None) -> str:
    """The report as text. Markdown is cut to `max_chars` (None: no limit); HTML and JSON never are.
    `cols`: the terminal's width for "text" (80 when not given). `view`: the comparison's view in
    `lang` (build_view), when the caller renders it in more than one format. `preface`: trusted
    Markdown the caller built from the catalogs (the action's failure note), written first and
    counted in `max_chars`."""
    _check(comparison, fmt, lang)
    if fmt == "json":
        return json.dumps(comparison, indent=2, ensure_ascii=False, default=json_default) + "\n"
    view = _view(view, comparison, lang, site_url)
    if fmt == "text":
        from profopt_ci.report.text import text

        return text(view.page(error_budget=TEXT_ERROR_BUDGET), cols or 80)
    if fmt == "html":
        return _template("html", template).render(**_context(_html_page(view), comparison, lang, full_report_hint))
    page = view.page(error_budget=(max_chars or MAX_CHARS) // 2)  # the error tails take half at most
    context = _context(page, comparison, lang, full_report_hint, Raw(preface) if preface else None)
    return markdown(_template("md", template), context, max_chars, full_report_hint, packaged=template is None)


def write_html(comparison: dict, path: Path, lang: str = "en", *, template: Path | None = None,
               full_report_hint: str | None = None, view: View | None = None, site_url: str | None = None) -> None:
    """The HTML report streamed into `path` chunk by chunk (jinja2's `generate()`): the same text as
    `render(…, "html")`, never held as one string. Past HTML_FULL_MAX benchmarks only the first
    ones in report order get a full section with plots; the others are one row each (report/view.py)."""
    _check(comparison, "html", lang)
    page = _html_page(_view(view, comparison, lang, site_url))
    chunks = _template("html", template).generate(**_context(page, comparison, lang, full_report_hint))
    with open(path, "w", encoding="utf-8") as fh:
        fh.writelines(chunks)


def _view(view: View | None, comparison: dict, lang: str, site_url: str | None = None) -> View:
    if view is None:
        return build_view(comparison, lang, site_url)
    if view.c is not comparison or view.lang != lang:
        raise ValueError("render: the view is of another comparison or language")
    return view


def _html_page(view: View) -> view_mod.Page:
    return view.page(error_budget=10 * MAX_CHARS, plots=True, full_max=view_mod.HTML_FULL_MAX)


def _context(view: object, comparison: dict, lang: str, hint: str | None, preface: Raw | None = None) -> dict:
    return dict(v=view, c=comparison, lang=lang, t=functools.partial(say, lang), full_report_hint=hint, preface=preface)


def _check(comparison: object, fmt: str, lang: str) -> None:
    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if lang not in LANGS:
        raise UsageError(f"--lang {lang!r}: choose one of {', '.join(LANGS)}")
    _check_schema(comparison, "comparison")


def _check_schema(data: object, where: str) -> None:
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema != COMPARISON_SCHEMA:
        raise UsageError(f"{where}: expected schema {COMPARISON_SCHEMA!r}, found {schema!r}; "
                         "render a file written by `profopt compare` or `profopt diff`")


def _template(fmt: str, template: Path | None) -> jinja2.Template:
    if template is None:
        return _environment(fmt, None).get_template(f"report.{fmt}.j2")
    path = Path(template)
    if not path.is_file():
        raise UsageError(f"--template {path}: no such file")
    try:
        return _environment(fmt, str(path.resolve().parent)).get_template(path.name)
    except jinja2.TemplateSyntaxError as exc:
        raise UsageError(f"--template {path}: line {exc.lineno}: {exc.message}") from None


@functools.lru_cache(maxsize=16)
def _environment(fmt: str, extra_dir: str | None) -> jinja2.Environment:
    """One compiled environment per format and template folder, reused across renders."""
    dirs = [extra_dir, str(TEMPLATES)] if extra_dir else [str(TEMPLATES)]
    common = dict(loader=jinja2.FileSystemLoader(dirs), trim_blocks=True, lstrip_blocks=True,
                  keep_trailing_newline=True, undefined=jinja2.StrictUndefined)
    if fmt == "html":
        env = jinja2.Environment(autoescape=True, **common)
        env.globals["icons"] = icons  # symbols every browser draws (inline SVG), not emoji
        env.filters["without_emoji"] = icons.without_emoji
        return env
    env = jinja2.Environment(autoescape=False, finalize=_md_finalize, **common)
    env.filters["code"] = md_code_block
    env.globals["mermaid"] = mermaid
    env.globals["site_link"] = site_link
    return env


def _md_finalize(value: object) -> str:
    if type(value) is str:  # most of what a template prints: straight to the (cached) escaping
        return md_escape(value)
    return "" if value is None else md_inline(value)


def site_link(url: str, text: str) -> Raw:
    """A benchmark's link to its page on the nightly site (a URL made of safe characters only, in <>)."""
    return Raw(f"[{md_escape(text)}](<{url}>)")


def mermaid(chart: dict) -> Raw:
    """A mermaid `xychart-beta` block: bars are the base (= 100), the line is head relative to it by
    the verdict's estimate (100 + change %), and two more lines its CI where every point has one."""
    labels = ", ".join(f'"{chart_label(x)}"' for x in chart["labels"])
    bases = ", ".join("100" for _ in chart["head"])
    title, y_label = chart_title(chart["title"]), chart_title(chart["y_label"])
    lines = [chart["head"]]
    if all(v is not None for v in chart.get("low", []) + chart.get("high", [])) and chart.get("low"):
        lines += [chart["low"], chart["high"]]
    series = "".join("    line [" + ", ".join(f"{v:g}" for v in line) + "]\n" for line in lines)
    return Raw("```mermaid\nxychart-beta\n"
               f'    title "{title}"\n'
               f"    x-axis [{labels}]\n"
               f'    y-axis "{y_label}" 0 --> {chart["y_max"]}\n'
               f"    bar [{bases}]\n"
               f"{series}```")
