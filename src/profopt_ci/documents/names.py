"""The versioned document names, once: every builder writes these and every reader insists on them.

In: nothing. Out: the `schema` strings of profopt's documents and, for each, the packaged JSON
Schema that describes it (`src/profopt_ci/schema/<file>.schema.json`).
"""
from __future__ import annotations

RESULTS_SCHEMA = "profopt/results@1"  # one side measured (`run`, `merge`, each side of `compare`)
COMPARISON_SCHEMA = "profopt/comparison@1"  # base vs head (`compare`, `diff`)
BASELINE_SCHEMA = "profopt/baseline@1"  # one stored nightly run (`baseline refresh`)
SIDES_SCHEMA = "profopt/sides@1"  # the prepared checkouts, `compare --phase setup` → `--phase measure`
BISECT_SCHEMA = "profopt/bisect@1"  # the commit that changed a benchmark (`bisect`, `baseline refresh --bisect`)

SCHEMA_FILES = {RESULTS_SCHEMA: "results", COMPARISON_SCHEMA: "comparison", BASELINE_SCHEMA: "baseline",
                SIDES_SCHEMA: "sides", BISECT_SCHEMA: "bisect"}
