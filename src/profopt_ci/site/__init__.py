"""site: a static site of the stored nightly baselines (`profopt site`).

nightlies (the store read into compact rows, with a cache so a rebuild reads only new runs) →
series (per label and benchmark, oldest first) → marks (change points, bisect culprits,
environment and runner changes) → data_files (one script of data per benchmark page) and pages
(the index and one page per benchmark and label, HTML) → output (written only when changed).
build ties them together. assets/ holds the stylesheet, the scripts and the vendored uPlot.

See docs/baselines.md (the site's files) and docs/layout.md.
"""
