"""What every verb shares before it runs: the parser class, common flags, the spec and the plan.

In: argparse namespaces and the flags' text. Out: a loaded `Spec` (with the hardware_label warning
on stderr), the `Plan` that spec and the command line's overrides resolve to (specfile/plan.py), and
flag registrations each verb module calls on its own sub-parser. Bad flags become a `UsageError`.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from profopt_ci.errors import UsageError
from profopt_ci.specfile.load import SPEC_NAMES, find_spec, load_spec, parse_spec
from profopt_ci.specfile.model import SUITE_KINDS, Spec, parse_instrument
from profopt_ci.specfile.plan import Plan, make_plan, overrides

SPEC_HELP = "spec file (default: ./profopt.yml)"
LANGS = ("en", "zh")


class Parser(argparse.ArgumentParser):
    """argparse exits 2 on a bad flag itself; this one raises, so main() prints it in our form."""

    def error(self, message: str):
        verb = self.prog.partition(" ")[2]  # main() prints the "profopt: " itself
        raise UsageError(f"{verb}: {message}" if verb else message)


def positive(text: str) -> int:
    """An argparse type for a number of rounds: a whole number from 1 to the spec's own limit."""
    from profopt_ci.specfile.keys import NUMBER_LIMITS

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} — expected at least 1")
    if value > NUMBER_LIMITS["rounds"]:  # a typo'd length, not a run of years
        raise argparse.ArgumentTypeError(f"{text[:20]}{'…' if len(text) > 20 else ''} — expected at most "
                                         f"{NUMBER_LIMITS['rounds']:,}")
    return value


def load(path: str | None, suites: list[str] | None = None) -> Spec:
    """The spec `--spec` names (else ./profopt.yml), checked; warns when it sets no hardware_label.
    `suites`: the `--suite KIND:PATH` flags, added to it — or, with no spec file at all, the spec."""
    items = [suite_item(text) for text in suites or []]
    if items and path is None and not any((Path.cwd() / n).is_file() for n in SPEC_NAMES):
        data = {"version": 1, "suites": items}
        return parse_spec(json.dumps(data), "--suite", path=Path.cwd() / SPEC_NAMES[0])
    spec_path = find_spec(path)
    spec = load_spec(spec_path, display=path or spec_path.name)
    if items:
        raw = {**spec.raw, "suites": [*(spec.raw.get("suites") or []), *items]}
        spec = parse_spec(json.dumps(raw, default=str), path or spec_path.name, path=spec.path)
    if "hardware_label" not in spec.raw:
        print(f"profopt: warning: {path or spec_path.name} sets no hardware_label, so results are labelled "
              "`default`; set one (e.g. cpu-2vcpu) so results from different machines are never compared",
              file=sys.stderr)
    return spec


def suite_item(text: str) -> dict[str, str]:
    """`--suite pytest:tests/bench/` → the `suites:` item {pytest: tests/bench/}."""
    kind, sep, where = text.partition(":")
    if not sep or kind not in SUITE_KINDS or not where:
        raise UsageError(f"--suite {text}: expected KIND:PATH with KIND one of {', '.join(SUITE_KINDS)} "
                         "(e.g. --suite pytest:tests/bench/)")
    return {kind: where}


def suite_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", action="append", metavar="KIND:PATH",
                   help="a suite written for another tool (pytest:PATH, asv:DIR, pyperf:SCRIPT), collected as "
                        "benchmarks; repeatable; without a spec file it is the whole spec")


def plan(spec: Spec, args: argparse.Namespace) -> Plan:
    """The spec and this command line's overrides, resolved once (plan.py); every stage reads it."""
    ov = overrides(threshold=getattr(args, "threshold", None) or None, rounds=getattr(args, "rounds", None),
                   max_rounds=getattr(args, "max_rounds", None), pairing=getattr(args, "pairing", None),
                   cpus=getattr(args, "cpuset", None) or None, instrument=instrument(args),
                   confirm=True if getattr(args, "confirm", False) else None)
    return make_plan(spec, ov)


def instrument(args: argparse.Namespace) -> tuple[str, ...] | None:
    """`--instrument walltime|instructions|walltime,instructions`, over the spec's `instrument`."""
    if not getattr(args, "instrument", None):
        return None
    try:
        return parse_instrument([p.strip() for p in args.instrument.split(",") if p.strip()])
    except ValueError as exc:
        raise UsageError(f"--instrument: {exc}") from None


def instrument_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--instrument", metavar="walltime|instructions|walltime,instructions",
                   help="what to measure, overriding the spec's `instrument` (instructions: Ir per step under valgrind)")


def lang_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lang", choices=LANGS, default="en", help="report language (default: en)")
