"""The GitHub Action's entry point: measure inside the runner image, publish from outside it.

In: flags, else the `INPUT_*` variables action.yml sets through `env:`, and the job's environment.
Out: the exit code (0 ok · 1 the policy failed · 2 usage · 3 a benchmark or the infrastructure
failed), `.profopt/` (comparison.json, report.md, report.html, logs/), the PR comment, the job
summary and the step outputs. `entrypoint.py` (what action.yml runs) calls `main()`. The flow:

1. settings (action/inputs.py); refuse a workspace whose git config holds a token (workspace.py);
2. base and head fixed to commits on the host, a fresh `.profopt` (workspace.py);
3. (runner: docker) the image reused by content hash or built (image.py), then the setup container
   with the network and the measure container without it (runs.py); (runner: local) the same
   `profopt compare` as a subprocess without the token (local.py);
4. on the host: with a failure cause, the report built anew with it first; `profopt publish` or the
   summary and outputs only; in baseline mode the data branch pushed (host.py), and with `pages:
   true` the site of the store built (mode site does only that, measuring nothing).

A container that cannot start, runs out of memory or out of time is exit 3 with a message naming
the cause; what it measured stays in the work directory and is published in a report built with
that cause first.
`main()` is the action's one error boundary, in the CLI's form: `profopt: MESSAGE` on stderr.
"""
from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from pathlib import Path

from profopt_ci.action.host import build_site, change_point_issues, finish_report, publish, push_store
from profopt_ci.action.inputs import ActionSettings, settings_from_args
from profopt_ci.action.local import run_local
from profopt_ci.action.outcome import Outcome, cause_of, say
from profopt_ci.action.runs import run_docker
from profopt_ci.action.workspace import check_no_persisted_token, fix_refs, prepare_workdir
from profopt_ci.errors import EXIT_INFRA, EXIT_OK, InfraError, ProfoptError


def _measure(s: ActionSettings, environ: Mapping[str, str], log: Callable[[str], None]) -> Outcome:
    started = time.monotonic()
    try:
        outcome = (run_docker if s.runner == "docker" else run_local)(s, environ, log)
    except InfraError as exc:
        outcome = Outcome(exit_code=EXIT_INFRA, cause=cause_of(exc))
    text = outcome.cause_text()
    if text:
        log(f"::error title=profopt::{text.splitlines()[0]}")
        print(f"profopt: {text}", file=sys.stderr, flush=True)
    log(f"profopt: measured in {time.monotonic() - started:.1f} s, exit {outcome.exit_code}")
    return outcome


def run_action(s: ActionSettings, environ: Mapping[str, str], log: Callable[[str], None] = say) -> int:
    """The whole action. Exit: compare's own code (0/1/2/3), or 3 when the infrastructure failed."""
    check_no_persisted_token(s.workspace)
    fix_refs(s, environ)
    prepare_workdir(s)
    if s.mode == "site":  # nothing measured: the site of what the store holds
        return build_site(s, environ, log)
    outcome = _measure(s, environ, log)
    if s.mode == "baseline":
        if outcome.exit_code == EXIT_OK:
            push_store(s, environ, log)
        if s.bisect:
            change_point_issues(s, environ, log)
        if s.pages:
            site = build_site(s, environ, log)
            return outcome.exit_code or site
        return outcome.exit_code
    report, comparison = finish_report(s, outcome)
    published = publish(s, environ, report, comparison, outcome, log)
    if outcome.exit_code == EXIT_OK and published != EXIT_OK:
        return published
    return outcome.exit_code


def main(argv: list[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """The action's one error boundary: every error becomes one `profopt: …` line and its exit code."""
    environ = os.environ if environ is None else environ
    try:
        return run_action(settings_from_args(argv, environ), environ)
    except ProfoptError as exc:
        print(f"profopt: {exc}", file=sys.stderr, flush=True)
        return exc.exit_code
    except KeyboardInterrupt:
        print("profopt: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the last resort: a bug of ours is exit 3 (infra), never 1 (policy)
        if environ.get("PROFOPT_DEBUG"):
            traceback.print_exc()
        where = traceback.extract_tb(exc.__traceback__)[-1]
        print(f"profopt: internal error: {type(exc).__name__}: {exc} (at {Path(where.filename).name}:"
              f"{where.lineno}; set PROFOPT_DEBUG=1 for the traceback, and please report it)", file=sys.stderr)
        return EXIT_INFRA


if __name__ == "__main__":
    sys.exit(main())
