"""pipeline: the verbs that run the stages in order — run (one tree), compare (base vs head,
look by look: sequential; entries), diff (two results), stored (refresh, compare --baseline stored).

See docs/layout.md for the whole tree.
"""
