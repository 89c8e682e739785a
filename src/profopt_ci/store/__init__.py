"""store: baseline documents in and out of a store — file layout, the dir and git stores, queries
(stores), and the baseline summaries, list/show/push and nightly history (baseline).

See docs/layout.md for the whole tree.
"""
