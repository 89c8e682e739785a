"""What holding and releasing a side costs per value (turns.Turns), measured on live workers.

Two real lockstep workers (`profopt_ci.measure.worker --serve`) of one step, driven value by value
as a round drives them. Interleaved blocks, the same pairs of values each:
- `held`: the other side is held (SIGSTOP on its process group) while each value is taken, as
  compare does now;
- `free`: both stay running (the old lockstep);
and the signal pair alone (`hold(); release()` of one worker, nothing asked). Prints medians over
the blocks: the wall time per value, the difference held − free (the cost a value pays for the
switch, the goal is ≤ 50 µs), and the raw signal pair.

    PYTHONPATH=src python bench/hold_cost.py [--step torch2|python] [--blocks 15]
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from profopt_ci.measure import live_worker
from profopt_ci.measure.processes import Side, child_env
from profopt_ci.measure.turns import Turns
from profopt_ci.specfile.load import parse_spec

STEPS = {
    "torch2": "import torch\ntorch.set_num_threads(2)\n"
              "def make_step():\n    a = torch.randn(128, 128)\n    return lambda: a @ a\n",
    "python": "def make_step():\n    return lambda: sum(range(2000))\n",
}


class Free:
    """Turns that never hold: the old lockstep, both sides running."""

    def __init__(self, channels) -> None:
        self.channels = channels

    def to(self, name) -> None:
        pass


def block(workers, turns, pairs: int, rng: random.Random) -> float:
    start = time.perf_counter_ns()
    for _ in range(pairs):  # as lockstep.callable_round takes its values
        order = sorted(workers)
        rng.shuffle(order)
        for n in order:
            turns.to(n)
            workers[n].value_ns()
    return (time.perf_counter_ns() - start) / (2 * pairs) / 1e3  # µs per value


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--step", choices=list(STEPS), default="torch2")
    p.add_argument("--blocks", type=int, default=15)
    p.add_argument("--pairs", type=int, default=200)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="profopt-hold-") as tmp:
        where = Path(tmp)
        (where / "holdstep.py").write_text(STEPS[args.step])
        spec = parse_spec("version: 1\nbenchmarks:\n  - {name: s, callable: 'holdstep:make_step', value_ms: 0.2}\n",
                          str(where / "profopt.yml"))
        bench = spec.benchmarks[0]
        workers = {}
        for name in ("base", "head"):
            side = Side(name, where)
            workers[name] = live_worker.WorkerProcess.start(side, bench, child_env(spec, bench, side), where, 0)
        try:
            for w in workers.values():
                w.answer("built")
            loops = min(int(w.expect("loops", w.ask("c"))) for w in workers.values())
            for w in workers.values():
                w.expect("ready", w.ask(f"w {loops}"))
            rng = random.Random(0)
            held, free, signal_pair = [], [], []
            for b in range(args.blocks):
                kinds = [("held", Turns(workers)), ("free", Free(workers))]
                if b % 2:
                    kinds.reverse()
                for kind, turns in kinds:
                    us = block(workers, turns, args.pairs, rng)
                    (held if kind == "held" else free).append(us)
                    if isinstance(turns, Turns):
                        turns.all()
                w = workers["head"]
                start = time.perf_counter_ns()
                for _ in range(args.pairs):
                    w.hold()
                    w.release()
                signal_pair.append((time.perf_counter_ns() - start) / args.pairs / 1e3)
        finally:
            for w in workers.values():
                w.close()
    h, f = statistics.median(held), statistics.median(free)
    diffs = statistics.median(a - b for a, b in zip(held, free, strict=True))
    print(f"step {args.step}, {loops} loop(s) a value, {args.blocks} blocks of {args.pairs} pairs, interleaved")
    print(f"  per value, other side held : {h:8.1f} µs (median)")
    print(f"  per value, both running    : {f:8.1f} µs")
    print(f"  held - free, paired        : {diffs:+8.1f} µs a value (goal <= 50 µs)")
    print(f"  hold()+release() alone     : {statistics.median(signal_pair):8.1f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
