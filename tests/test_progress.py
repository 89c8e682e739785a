"""What a running compare prints: one live line per benchmark on a terminal, one line per look in a log."""
from __future__ import annotations

import io
import json

from conftest import CPU_STEP, make_repo, run_cli

from profopt_ci.measure.progress import Progress, progress_of
from profopt_ci.words.i18n import say


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_one_live_line_per_benchmark_rewritten_in_place():
    out = Tty()
    p = Progress(stream=out)
    p("profopt: base main = abc, head HEAD = def")
    p.heading_for("a", 1, 5)
    p.round("a", [1.01, 0.99, 1.0], 2, 16)
    p.round("b", [1.10], 0, 16)
    p.round("a", [1.01, 0.99, 1.0, 1.02], 3, 16)
    assert set(p.lines) == {"a", "b"}
    assert p.lines["a"].startswith("profopt: a: round 4/16 · look 1/5 · +0.5% so far · ~") and p.lines["a"].endswith("s left")
    p("profopt: a: look 1/5 after 16 rounds: unchanged (+0.4%, CI -1.0…+1.9%)")
    p.done("a")
    text = out.getvalue()
    assert "\x1b[1A\x1b[2K" in text  # the live lines are erased before each rewrite
    assert text.endswith("profopt: b: round 1/16 · +10.0% so far · ~0 s left\n")
    assert p.lines.keys() == {"b"}


def test_a_log_gets_no_round_lines_unless_asked(monkeypatch):
    out = io.StringIO()
    p = Progress(stream=out)
    p.round("a", [1.0], 0, 16)
    assert out.getvalue() == ""
    monkeypatch.setenv("PROFOPT_PROGRESS", "rounds")
    p.round("a", [1.0, 1.0], 1, 16)
    assert out.getvalue().startswith("profopt: a: round 2/16 · +0.0% so far")
    assert progress_of(print).round("x", [], 0, 1) is None  # a plain callable log: no live lines at all


def test_a_three_benchmark_compare_in_ci_prints_a_line_per_look_not_per_round(tmp_path):
    spec = ("version: 1\nhardware_label: test-cpu\ndefaults: {profile: 'off', seed: 4, round_ms: 100}\nbenchmarks:\n"
            + "".join(f"  - {{name: b{i}, callable: 'bench.work:make_step', params: {{us: {300 * (i + 1)}}}}}\n"
                      for i in range(3)))
    root = tmp_path / "repo"
    make_repo(root, [{"bench/__init__.py": "", "bench/work.py": CPU_STEP, "profopt.yml": spec}])
    proc = run_cli(["compare", "--base", "HEAD", "--head", "HEAD", "--rounds", "3", "--fail-on", "none",
                    "--threshold", "20%"], root)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    looks = [ln for ln in lines if ": look " in ln]
    assert len(looks) == 3 and all("after 3 rounds" in ln for ln in looks)
    assert not [ln for ln in lines if " round " in ln and "look" not in ln]
    assert len(lines) <= 12, "\n".join(lines)  # a line a round would be 18 (3 benchmarks × 3 rounds × 2 sides)
    notes = json.loads((root / ".profopt" / "comparison.json").read_text())["notes"]
    assert sum("pairing lockstep" in say("en", n) for n in notes) == 1  # how the pairing ran: said once
