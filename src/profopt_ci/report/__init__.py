"""report: a comparison@1 dict in; Markdown, HTML, JSON or terminal text out. No analysis here.

render (templates/, the entry point) ← view (built once per comparison, read by every format; its
parts from bench_view, details, history, headline, instructions) ← format (numbers, escaping) and
i18n (lookup; one catalog per language, messages_en / messages_zh, for messages and notes); markdown
streams a template and cuts it as shrink does (shrink fits a PR comment), svg draws the HTML plots,
text is the terminal view.
"""
