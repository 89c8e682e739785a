"""Compare's rounds look by look: more rounds only for a benchmark that is not yet decided.

In: the rounds' `RoundContext` (the plan, both sides, the `RoundState` to fill, …), the compared
benchmarks, and a `measure` callable with `measure.rounds.measure_round`'s signature (the real one runs processes; tests pass one
that appends literal samples). Out: the samples in the state, and per benchmark the α its final
look spent. Each benchmark is looked at after the round counts of `analyze.look_schedule.plan_looks`; a
step time still inconclusive (or unstable) there gets the next look's rounds, with α spent across
the looks (`analyze.look_schedule.spent_alpha`) so that looking again cannot manufacture significance.
"""
from __future__ import annotations

import time
from collections.abc import Callable

from profopt_ci.analyze import look_schedule
from profopt_ci.analyze.decide import SPEED
from profopt_ci.analyze.judge import ALPHA, look, worth_profiling
from profopt_ci.documents.types_comparison import Entry
from profopt_ci.measure.progress import progress_of
from profopt_ci.measure.rounds import RoundContext, measure_round
from profopt_ci.measure.side_pass import has_pass
from profopt_ci.pipeline.budget import Budget
from profopt_ci.pipeline.entries import track_dict
from profopt_ci.specfile.load import Benchmark

# measure_round's signature: one round of one benchmark on the context's sides, appended to the
# RoundState. `sequential_rounds` takes another one in tests (literal samples, no processes).
MeasureRound = Callable[..., None]


def _measure_alone(ctx: RoundContext, benches: list[Benchmark], measure: MeasureRound) -> None:
    """A side failed before measuring: still measure the one that works, so its results are kept."""
    state = ctx.state
    for b in benches:
        alone = [s for s in ctx.sides if state.track(b.name, s.name).status == "ok"]
        if len(alone) == 1 and not state.track(b.name, alone[0].name).samples:
            for r in range(b.settings.rounds):
                measure(ctx.on(alone), b, r, b.settings.rounds)


def _look(ctx: RoundContext, bench: Benchmark, k: int, looks: list[int], rounds: int) -> tuple[float, bool, Entry]:
    """Look `k` (0-based) at a benchmark after `rounds` rounds: (α spent, whether to go on, its entry)."""
    state, log = ctx.state, ctx.log
    alpha = look_schedule.spent_alpha(k + 1, len(looks), ALPHA)
    entry = look(ctx.plan.judged(bench.name), track_dict(state, bench, "base"), track_dict(state, bench, "head"),
                 alpha=alpha)
    state.looked[bench.name] = entry  # what the passes after the rounds ask of it, judged once
    m = entry["metrics"].get(SPEED, {})
    verdict = m.get("verdict")
    # unstable too: outlier rounds are diluted by more rounds, and the estimate is robust to them
    more = verdict in ("inconclusive", "unstable") and k + 1 < len(looks)
    figures = ""
    if m.get("delta_pct") is not None:
        ci = (f", CI {m['ci_low_pct']:+.1f}…{m['ci_high_pct']:+.1f}%"
              if m.get("ci_low_pct") is not None and m.get("ci_high_pct") is not None else "")
        figures = f" ({m['delta_pct']:+.1f}%{ci})"
    then = f" — extending to {looks[k + 1]}" if more else ""
    log(f"profopt: {bench.name}: look {k + 1}/{len(looks)} after {rounds} rounds: {verdict}{figures}{then}")
    if not more:
        progress_of(log).done(bench.name)
    return alpha, more, entry


def _then(active: list[Benchmark], i: int, done_of: dict[str, int], plans: dict[str, list[int]],
          look: dict[str, int]) -> tuple[Benchmark, int] | None:
    """The round measured after the one `active[i]` is about to measure, where it is sure: the next
    active benchmark's next round, or the first one's round after this when no look is due before it
    (a look may stop it). `done_of`: the rounds each has so far."""
    if i + 1 < len(active):
        nxt = active[i + 1]
        return nxt, done_of[nxt.name]
    first = active[0]
    r = done_of[first.name] + (i == 0)  # its round of this pass is measured already unless it is this one
    return (first, r) if r < plans[first.name][look[first.name]] else None


def sequential_rounds(ctx: RoundContext, benches: list[Benchmark], *, measure: MeasureRound = measure_round,
                      alone: bool = True, budget: Budget | None = None,
                      first: frozenset[str] = frozenset()) -> dict[str, float]:
    """Rounds look by look; returns the α spent at each benchmark's final look. `alone`: a
    benchmark one side failed is measured on the other side alone, so its results are kept.

    `budget` (time_budget): each round, the benchmarks the change reaches (`first`) go first, then
    the cheaper rounds and those nearer a decision; after the first round the looks are planned
    anew to fit what the rounds left afford, and where they cannot take every benchmark to a look
    that can decide, some are held at their first round until the others are done (`_fit`); a
    round that would not fit stops the rounds, and each benchmark still undecided gets one more
    look at the rounds it has (`state.cut`: its rounds)."""
    budget, state, log = budget or Budget(), ctx.state, ctx.log
    plans = {b.name: look_schedule.plan_looks(b.settings.rounds, b.settings.max_rounds) for b in benches}
    look = {b.name: 0 for b in benches}
    final_alpha = {b.name: ALPHA for b in benches}
    distance: dict[str, float] = {}  # how far from a decision at the last look (its mde over τ)
    live = [s for s in ctx.sides if any(state.track(b.name, s.name).status == "ok" for b in benches)]
    ctx = ctx.on(live)
    done: set[str] = set()
    held: list[Benchmark] = []  # kept at the rounds they have so that the others reach a decidable look
    rounds = {b.name: 0 for b in benches}  # each benchmark's rounds so far
    while True:
        active = [b for b in benches if b.name not in done and b not in held and state.ok(b.name, live)]
        if held and not active and len(live) >= 2:  # the others are done: the rest of the budget is the held's
            again = _fit(plans, held, budget, log, first)
            active, held = [b for b in held if b not in again], again
        if not active or len(live) < 2:
            if alone:
                _measure_alone(ctx, benches, measure)
            return final_alpha
        order = sorted(active, key=lambda b: (b.name not in first, budget.next_round_s(b.name),
                                              distance.get(b.name, 0.0))) if budget.on else active
        for i, b in enumerate(order):
            if budget.on and rounds[b.name] > 0 and budget.rounds_left() < budget.next_round_s(b.name):
                _cut(ctx, [*order, *held], plans, look, final_alpha)
                return final_alpha
            progress_of(log).heading_for(b.name, look[b.name] + 1, len(plans[b.name]))
            started = time.monotonic()
            then = _then(order, i, rounds, plans, look)  # its workers may start during this round
            try:
                measure(ctx, b, rounds[b.name], plans[b.name][look[b.name]],
                        following=lambda then=then: then if then is not None and state.ok(then[0].name, live) else None)
            finally:
                if then is None:  # nothing started ahead waits past a round whose successor is not sure
                    state.drop_ahead()
            budget.spent(b.name, time.monotonic() - started)
            rounds[b.name] += 1
        if budget.on and all(rounds[b.name] == 1 for b in active) and not held and not done:
            held = _fit(plans, active, budget, log, first)
        for b in (b for b in active if b not in held):
            looks, k = plans[b.name], look[b.name]
            if rounds[b.name] < looks[k] or not state.ok(b.name, live):
                continue
            final_alpha[b.name], more, entry = _look(ctx, b, k, looks, rounds[b.name])
            m = entry["metrics"].get(SPEED, {})
            tau = b.settings.threshold or 1.0
            distance[b.name] = (m.get("mde") or tau) / tau if isinstance(m.get("mde"), (int, float)) else 1.0
            if more:
                look[b.name] = k + 1
            else:
                done.add(b.name)
                if not has_pass(b, worth_profiling(entry)):
                    budget.settle(b.name)  # no pass is to come: the time kept for it goes back to the rounds


LEAST_LOOK = 8  # rounds a first look needs to decide at a look's share of α = 0.01 (signed ranks)


def _fit(plans: dict[str, list[int]], active: list[Benchmark], budget: Budget, log,
         first: frozenset[str] = frozenset()) -> list[Benchmark]:
    """After the first round: looks planned anew where the rounds the budget leaves cannot reach the
    planned ones — the first at what it affords (at least LEAST_LOOK), the last at most there.

    Where the rounds left cannot take every benchmark to LEAST_LOOK, rounds shared by all would
    decide none: those the change reaches and the cheaper ones go on to LEAST_LOOK, the rest are
    held at the round they have (returned; each is looked at when the others are done)."""
    more = budget.affordable([b.name for b in active])
    if more is None:
        return []
    total = 1 + more
    held = _held(active, budget, first) if total < LEAST_LOOK else []
    going = [b for b in active if b not in held]
    said = total
    if held:
        total = max(total, LEAST_LOOK)
    fitted = []
    for b in going:
        start, last = plans[b.name][0], plans[b.name][-1]
        if total >= last:
            continue
        rounds = max(LEAST_LOOK, min(start, total))
        plans[b.name] = look_schedule.plan_looks(rounds, max(rounds, min(last, total)))
        fitted.append(b.name)
    log(f"profopt: time budget: {budget.left():.0f} s left; about {said} rounds each fit"
        + (f" — looks planned to fit ({', '.join(fitted)})" if fitted else "")
        + (f"; held at the rounds they have until the others reach {LEAST_LOOK}: {', '.join(b.name for b in held)}"
           if held else ""))
    return held


def _held(active: list[Benchmark], budget: Budget, first: frozenset[str]) -> list[Benchmark]:
    """The benchmarks left at one round: after as many as the rounds left take to LEAST_LOOK, those
    the change reaches first, then the cheaper rounds. None held when not even one would get there."""
    left = budget.rounds_left()
    ranked = sorted(active, key=lambda b: (b.name not in first, budget.next_round_s(b.name)))
    going, cost = 0, 0.0
    for b in ranked:
        cost += (LEAST_LOOK - 1) * budget.next_round_s(b.name)
        if cost > left:
            break
        going += 1
    return ranked[going:] if going else []


def _cut(ctx: RoundContext, order: list[Benchmark], plans: dict[str, list[int]], look: dict[str, int],
         final_alpha: dict[str, float]) -> None:
    """The budget is spent: each benchmark still undecided gets one more look, at the rounds it has."""
    state = ctx.state
    for b in order:
        rounds = min(len(state.track(b.name, s.name).samples) for s in ctx.sides)
        state.cut[b.name] = rounds
        if rounds:
            k = min(look[b.name], len(plans[b.name]) - 1)
            final_alpha[b.name], _, _ = _look(ctx, b, k, plans[b.name], rounds)
    ctx.log(f"profopt: time budget spent: rounds stopped ({', '.join(f'{n} after {r}' for n, r in state.cut.items())})")
