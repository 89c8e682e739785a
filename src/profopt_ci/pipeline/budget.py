"""A compare's time budget: the wall time it may take, spent in order — the rounds, the passes after
them, the outputs.

In: the budget in seconds (`time_budget`, `--time-budget`) and the moment the compare started; as
the rounds go, each benchmark's first-round wall (what its passes will take: a process per side,
built, stepped) and the wall of its later rounds. Out: how long the rounds may still run
(`rounds_left`), what a benchmark's next round costs, how many rounds the rest affords
(`affordable`), whether a pass still fits (`pass_fits`). A benchmark decided with nothing for a
pass to do gives its passes' time back (`settle`). No budget: all infinite.
"""
from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field

OUTPUTS_S = 2.0  # writing the comparison, the report and the HTML, with room to spare
PASS_SHARE = 1.2  # a benchmark's passes (quality, profile: a process per side) against its first round


@dataclass
class Budget:
    seconds: float | None = None
    started: float = field(default_factory=time.monotonic)
    first_round_s: dict[str, float] = field(default_factory=dict)  # each benchmark's first round: its passes' cost
    round_s: dict[str, float] = field(default_factory=dict)  # its latest later round
    settled: set[str] = field(default_factory=set)  # decided with no pass to come: nothing kept for it

    @property
    def on(self) -> bool:
        return self.seconds is not None

    def left(self) -> float:
        """Seconds left of the whole budget."""
        if self.seconds is None:
            return math.inf
        return self.seconds - (time.monotonic() - self.started)

    def passes_s(self, names: list[str]) -> float:
        """What the passes of these benchmarks will take, as their first rounds say."""
        return sum(self.first_round_s.get(n, 0.0) for n in names if n not in self.settled) * PASS_SHARE

    def settle(self, name: str) -> None:
        """`name` is decided and will have no pass (its figures held, no quality constraint): the time
        kept for its passes goes back to the rounds."""
        self.settled.add(name)

    def rounds_left(self, names: list[str] | None = None) -> float:
        """Seconds the rounds may still run: the budget less the passes of every benchmark measured so
        far (they all run after the rounds; `names`: those of these only) and the outputs."""
        return self.left() - self.passes_s(list(self.first_round_s) if names is None else names) - OUTPUTS_S

    def spent(self, name: str, seconds: float) -> None:
        """A round of `name` took `seconds`."""
        if name in self.first_round_s:
            self.round_s[name] = seconds
        else:
            self.first_round_s[name] = seconds

    def next_round_s(self, name: str) -> float:
        """What the next round of `name` will take: its latest later round; else its first, scaled as
        the later rounds of the others are to their first (a first round starts its processes and
        imports, and may take several later ones' time)."""
        if name in self.round_s:
            return self.round_s[name]
        first = self.first_round_s.get(name, 0.0)
        ratios = [self.round_s[n] / self.first_round_s[n] for n in self.round_s if self.first_round_s.get(n)]
        return first * min(1.0, statistics.median(ratios)) if ratios else first

    def affordable(self, names: list[str]) -> int | None:
        """How many more rounds of every one of `names` the rounds left buy (None: no budget)."""
        if self.seconds is None:
            return None
        per = sum(self.next_round_s(n) for n in names)
        return max(0, int(self.rounds_left() // per)) if per > 0 else None

    def pass_fits(self, name: str) -> bool:
        """Whether a benchmark's profile still fits before the outputs are due."""
        return self.left() - OUTPUTS_S >= self.first_round_s.get(name, 0.0) * PASS_SHARE
