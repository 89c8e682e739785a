"""A seeded slice of the hostile-input campaign (issue 28; the full size is bench/hostile_campaign.py).

Mutated specs, comparisons, results and shard files, refs, flag values, suite paths and specs a pull
request changes, each through the real CLI entry point against real seeds (`profopt run` and
`compare` output, a repository whose suite has hostile test ids): no case may end in an internal
error — nothing escapes `main`, no "internal error", no traceback, exit 0–3 only, and the results
file written whenever the exit is 3. tests/hostile_campaign.py says how each input is made.
"""
from __future__ import annotations

import hostile_campaign as hc
import pytest

SEED = 2828
SLICE = {"validate": 90, "report": 80, "diff": 40, "merge": 40, "compare": 6}


@pytest.mark.slow
def test_a_seeded_slice_of_the_campaign_ends_without_an_internal_error(tmp_path):
    seeds = hc.prepare(tmp_path)
    outcomes = hc.campaign(seeds, SEED, SLICE)
    failing = [f"{o.case.verb} {o.case.argv[1:]}: {o.problem}\n{o.case.what[:800]}" for o in outcomes if o.problem]
    assert not failing, "\n\n".join(failing)
    per = hc.summary(outcomes)
    assert {verb: row["cases"] for verb, row in per.items()} == SLICE
    for verb in ("validate", "report", "diff", "merge"):  # the mutations reach both outcomes of each verb
        codes = per[verb]["codes"]
        assert codes.get(0, 0) > 0 and codes.get(2, 0) > 0, (verb, codes)


def test_the_campaign_judges_what_it_should(tmp_path):
    """The judge itself: each way of failing is caught, a clean refusal is not."""
    out = tmp_path / "c.json"
    case = hc.Case("compare", ["compare"], "x", out=out)
    assert hc.judge(2, "profopt: --rounds 'x': expected a whole number\n", case) is None
    assert hc.judge(3, "profopt: internal error: KeyError: 'index'", case).startswith("internal error")
    assert hc.judge(2, "Traceback (most recent call last):\n  File", case).startswith("a traceback")
    assert hc.judge(4, "", case) == "exit 4"
    assert hc.judge(3, "profopt: failed", case) == "exit 3 without c.json"
    out.write_text("{}")
    assert hc.judge(3, "profopt: failed", case) is None
    escaped = hc.run_case(hc.Case("report", ["report", str(tmp_path / "missing.json")], "x"), tmp_path)
    assert escaped.code == 2 and escaped.problem is None  # a missing file is a usage error, not a finding
