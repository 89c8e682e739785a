"""report: a comparison@1 dict in; Markdown, HTML, JSON or terminal text out. No analysis here.

render (templates/, the entry point) ← view (bench_view, details, history, headline, instructions;
built on demand through lazy) ← format (numbers, escaping) and i18n (lookup; catalogs messages_en /
messages_zh; i18n_zh for the producers' English); shrink fits a PR comment, markdown streams the
comment and stops where shrink would cut, svg draws the HTML plots, text is the terminal view.
"""
