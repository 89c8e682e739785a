"""measure: a spec and checkouts in, samples out — checkouts (worktrees, venvs), processes and
rounds, lockstep workers, the in-process harness, fingerprints, counted instructions, shards.

See docs/layout.md for the whole tree.
"""
