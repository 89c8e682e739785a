#!/usr/bin/env python3
"""The GitHub Action's entry point, run on the job's runner by action.yml.

Thin on purpose: flags (or the INPUT_* variables action.yml sets through `env:`) go to
`profopt_ci.action.entry.main`, where the logic lives and is tested.
"""
import sys
from pathlib import Path

try:
    from profopt_ci.action.entry import main
except ImportError:  # run from a checkout of the action without installing it
    sys.path.insert(0, str(Path(__file__).resolve().parent / "src"))
    from profopt_ci.action.entry import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
