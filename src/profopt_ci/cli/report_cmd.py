"""`profopt report`: render a comparison.json again, in another format or language.

In: a comparison@1 file, `--format md|html|json|text` (default: text on a terminal, else md),
`--lang`, `--template`, `--out`. Out: the rendering on stdout or in `--out`; exit 0, or 2 when the
file is not a comparison@1.
"""
from __future__ import annotations

import argparse
import gc
import shutil
import sys
from pathlib import Path

from profopt_ci.cli.options import lang_flag
from profopt_ci.cli.output_files import retain, site_url, site_url_flag
from profopt_ci.errors import EXIT_OK
from profopt_ci.gc_pause import paused


def register(sub) -> None:
    rep = sub.add_parser("report", help="render a comparison")
    rep.add_argument("file", metavar="comparison.json")
    rep.add_argument("--format", choices=("md", "html", "json", "text"),
                     help="md: GitHub Markdown; html: self-contained page; json: the comparison; text: for a "
                          "terminal (default: text on a terminal, else md)")
    lang_flag(rep)
    rep.add_argument("--template", help="a jinja2 template to use instead of the packaged one")
    rep.add_argument("--out", help="write here instead of stdout")
    site_url_flag(rep)
    rep.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    from profopt_ci.report.render import MAX_CHARS, load_comparison, render, write_html

    # No cycles in a read document: no collection runs while it is read (else one full pass over
    # all its entries as the reader's own pause ended), and none visits it while rendering.
    with paused():
        comparison = load_comparison(args.file)
        gc.freeze()
    retain(comparison)
    template = Path(args.template) if args.template else None
    fmt = args.format or ("text" if not args.out and sys.stdout.isatty() else "md")
    if fmt == "html" and args.out:  # never cut, so streamed to the file rather than built as one string
        write_html(comparison, Path(args.out), args.lang, template=template, site_url=site_url(args))
        return EXIT_OK
    text = render(comparison, fmt, args.lang, template=template, max_chars=MAX_CHARS if fmt == "md" else None,
                  cols=shutil.get_terminal_size().columns, site_url=site_url(args))
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return EXIT_OK
