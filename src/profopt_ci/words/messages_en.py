"""The report's English message catalog: message key → text with `{placeholders}`.

In: nothing (data). Out: `EN`, the reference catalog: every key the report uses is here, and
words/i18n.py falls back to it for a key another language lacks. Plain text: the renderer
escapes what fills the placeholders. Some entries (instr.what, instr.functions) are also the
English notes measure/instruction_runs.py writes into the JSON.
"""
from __future__ import annotations

EN: dict[str, str] = {
    "decision.keep": "keep",
    "decision.reject": "reject",
    "decision.trade-off": "trade-off",
    "decision.no-change": "no-change",
    "decision.inconclusive": "inconclusive",
    "decision.failed": "failed",
    "verdict.improved": "improved",
    "verdict.regressed": "regressed",
    "verdict.unchanged": "unchanged",
    "verdict.inconclusive": "inconclusive",
    "verdict.unstable": "unstable",
    "col.metric": "metric",
    "col.base": "base",
    "col.head": "head",
    "col.change": "change",
    "col.ci": "{conf} CI",
    "col.verdict": "verdict",
    "col.constraint": "constraint",
    "col.result": "result",
    "col.key": "key",
    "col.phase": "phase",
    "col.op": "op",
    "col.delta_ms": "Δ ms",
    "col.benchmark": "benchmark",
    "col.rounds": "rounds",
    "col.outliers": "outlier rounds",
    "col.base_spread": "base median (min–max)",
    "col.head_spread": "head median (min–max)",
    "col.cv": "CV",
    "col.p": "p",
    "col.p_adj": "p adjusted",
    "metric.step_time_ms": "step time (ms)",
    "metric.throughput": "throughput ({unit}/s)",
    "metric.peak_memory_mb": "peak memory (MB)",
    "metric.cpu_time_ms": "CPU time (ms)",
    "metric.cuda_max_allocated_mb": "CUDA max allocated (MB)",
    "metric.cuda_max_reserved_mb": "CUDA max reserved (MB)",
    "metric.energy_per_step_j": "energy per step (J)",
    "metric.instructions": "instructions per step (Ir)",
    "metric.est_cycles": "est. cycles per step",
    # instrument: instructions (report/instruction_words.py); instr.what and instr.functions are also the
    # English notes measure/instruction_runs.py writes into the JSON
    "instr.what": "instructions: counts of executed instructions (Ir) under valgrind's callgrind — instructions, "
                  "not time; cache effects simulated only with cache_sim (est_cycles is an estimate); threads "
                  "serialized; under valgrind, torch uses AVX2 kernels rather than AVX-512",
    "instr.functions": "the Ir diff names C functions (the interpreter's, builtins', extensions'); Python functions "
                       "show only as interpreter frames there — the time-based hot-op diff names them",
    "instr.cell": " (range of runs ±{floor}%)",
    "col.runs_range": "range of runs ± noise floor",
    "col.ci_or_runs": "{conf} CI (instructions: range of runs ± noise floor)",
    "meta.instr": "instructions τ ±{t}%, {runs} valgrind runs per side",
    "hl.metric_runs": "{name} {metric} {pct} (runs {lo} to {hi}, ±{floor}% noise floor included)",
    "hl.inconclusive_runs": "{name} {metric} unclear after {runs} valgrind runs per side (runs {lo} to {hi}, "
                            "±{floor}% noise floor included)",
    "word.memory": "memory",
    "word.step_time": "step time",
    "meta.benchmarks": "{n} benchmarks",
    "meta.benchmark": "1 benchmark",
    "count.improved": "{n} improved",
    "count.regressed": "{n} regressed",
    "count.constraint_failures": "{n} broken constraints",
    "count.inconclusive": "{n} inconclusive",
    "count.failed": "{n} failed",
    "meta.paired": "paired, {rounds} rounds",
    "meta.paired_range": "paired, {lo}–{hi} rounds",
    "meta.unpaired": "unpaired",
    "meta.threshold": "threshold ±{t}%",
    "meta.confidence": "{conf} confidence",
    "meta.sides": "base {base} → head {head}",
    "unpaired_note": "Unpaired comparison of two stored results: pairing by round was impossible, "
                     "so the figures are weaker than a paired compare.",
    "differences": "Changed besides code",
    "scope.params": "params",
    "scope.env": "env",
    "scope.fingerprint": "hardware",
    "scope.hardware": "hardware",
    "constraints": "Constraints",
    "constraint.ok": "holds",
    "constraint.broken": "broken",
    "goal": "Goal",
    "goal.decrease": "{metric} down by ≥ {target}%",
    "goal.increase": "{metric} up by ≥ {target}%",
    "goal.met": "met ({achieved}%)",
    "goal.missed": "not met ({achieved}%)",
    "bottleneck": "Bottleneck",
    "evidence": "Evidence",
    "cost": "Cost",
    "bottleneck_side.base": "{cls}, in the base (the head no longer shows it)",
    "next_action": "Next action",
    "side.base": "base",
    "side.head": "head",
    "failed_side": "{side} failed ({status})",
    "failed_plain": "{side} failed",
    "error_capped": "last {shown} of {total} characters",
    "unchanged_group": "Unchanged ({n})",
    "section.noise": "rounds and noise",
    "section.hot-ops": "hot-op diff",
    "section.phases": "phase breakdown",
    "section.environments": "environments",
    "section.unchanged": "tables of unchanged benchmarks",
    "section.chart": "chart",
    "section.tail": "the last {n} benchmark sections",
    "details.environments": "Environments",
    "details.phases": "Phase breakdown",
    "details.hot-ops": "Hot-op diff",
    "details.noise": "Rounds and noise",
    "section.history": "nightly history",
    "details.history": "Nightly history",
    "history.title": "{name}: nightly step time (ms)",
    "history.y": "ms",
    "history.head_label": "head",
    "history.caption": "last {n} nightly runs ({first} … {last}): latest {latest} ms, this head {head} ms",
    "history.step": "step {delta} entered between {start} and {end} ({date})",
    "history.no_steps": "no step in the nightly series",
    "history.drifted": "the fresh base ({fresh} ms) left its nightly history (median {median} ms, {delta}, last {n} runs)",
    "history.no_drift": "the fresh base ({fresh} ms) is within its nightly history (median {median} ms, {delta}, last {n} runs)",
    "col.commit": "commit",
    "col.date": "date",
    "col.value": "step time (ms)",
    "env.differs": "differs",
    "env.ref": "ref",
    "env.commit": "commit",
    "env.var": "env {name}",
    "env.where": "environment",
    "env.own": "its own setup venv",
    "env.profopt": "profopt's own",
    "env.python": "interpreter",
    "env.package": "package {name}",
    "env.runner_added": "{version}, added: the suite's runner",
    "env.runner_dep": "{version}, added: what the suite's runner requires",
    "env.runner_setup": "{version}, the suite's runner (from setup)",
    "no_profile": "no profile: {reason}",
    "trace": "trace: {path}",
    "chart.title": "{what} relative to base (base = 100)",
    "chart.y": "% of base",
    "chart.legend": "Bars: base (= 100); line: head by the estimate the verdict uses (the change column); the lines below and above it: its {conf} CI.",
    "chart.shown": "Showing {shown} of {n} benchmarks, the largest changes.",
    "shrunk": "✂️ Shortened to fit a PR comment; left out: {parts}.",
    "full_report": "Full report: {hint}",
    "plots": "Per-round step time (dots) and change with its CI (bar)",
    "plot.overview": "Step time change per benchmark with its CI",
    "html.capped": "{shown} of {total} benchmarks are shown in full (failed, reject, trade-off, inconclusive, keep, "
                   "then unchanged); the other {rest} are one row each in the table after them, and the detail "
                   "tables cover only the {shown}. The comparison JSON (comparison.json) has every figure.",
    "html.compact": "{n} more benchmarks, one row each",
    "col.decision": "decision",
    "col.step_change": "step time change",
    "hl.faster": "{name} {pct} faster ({ci} {lo}–{hi}%)",
    "hl.slower": "{name} {pct} slower ({ci} {lo}–{hi}%)",
    "hl.metric": "{name} {metric} {pct} ({ci} {lo} to {hi})",
    "hl.memory_unchanged": "memory unchanged",
    "hl.memory": "peak memory {pct}",
    "hl.rel_tol": "{metric} within {limit}%",
    "hl.abs_tol": "{metric} within ±{limit}",
    "hl.equal": "{metric} identical",
    "hl.broken": "{name}: {metric} constraint broken ({detail})",
    "hl.tradeoff": "{gain} but {loss}",
    "hl.inconclusive": "{name} {metric} unclear after {rounds} rounds ({ci} {lo} to {hi})",
    "hl.unstable": "{name} {metric} too noisy to call ({outliers} of {rounds} rounds were outliers)",
    "hl.no_change": "no change beyond ±{t}% in {n} benchmarks",
    "hl.failed": "{side} failed on {name}: {cause}",
    "hl.more": "{n} more benchmarks",
    "hl.more1": "1 more benchmark",
    "hl.none": "no benchmarks to compare",
    "hl.new": "new in this PR: {name} {ms} ms a step on head",
    "hl.new_failed": "new in this PR: {name} failed on head",
    "new.title": "New in this PR ({n}): measured on head only, not compared",
    "new.col.name": "benchmark",
    "new.col.head": "head step time",
    "new.col.rounds": "rounds",
    "new.col.why": "why the base did not run it",
    "new.why.none": "the base does not have it",
    "new.failed": "failed",
    "col.base_median": "base median",
    "col.head_median": "head median",
    "col.estimate": "change (estimate)",
    "col.self_ms": "self ms per profiled step",
    "table.legend": "Base and head are medians over the rounds; change and CI are the estimate the verdict uses "
                    "({how}), so the change can differ from head ÷ base of the medians. Memory is judged on "
                    "medians against its tolerance (memory_tolerance in the spec). The CI covers the variation "
                    "within this run, not between runs.",
    "how.paired": "paired: each round's head/base is the median of its pairs' ratios",
    "how.unpaired": "unpaired, from all head/base pairs of values",
    "tolerance": "tolerance ±{mb} MB",
    "goal.unclear": "not established at this noise (estimate {achieved}%, {ci} {lo} to {hi}); more rounds narrow "
                    "the CI: raise max_rounds in the spec or pass --max-rounds",
    "hot.noise": "Δ weighed against the profile's own noise (each op's least and most self ms per step over {base} base and {head} head profiled chunks, one run a side): {mark} marks a Δ within it, listed last",
    "hot.profiled_step": "{side} profiled step {profiled} ms (unprofiled {plain} ms): the profiler slows Python "
                         "code, so compare the ops with each other, not with the step time",
    "rule.equal": "equal",
    "rule.rel_tol": "rel_tol",
    "rule.abs_tol": "abs_tol",
    "and": " and ",
    "term.files": "Files",
    "term.details": "Details: {path}",
    "sep": ", ",
    "colon": ":",
    "sep2": "; ",
    # comparison notes, said by their producers as messages (words/i18n.message)
    "note.aa": "A/A: this measures noise only (base and head are the same commit)",
    "note.partial": "interrupted: partial results",
    "note.lockstep_live": "pairing lockstep — base and head share one CPU set, sized to the step's own threads; live "
                          "workers driven value by value (~{value_ms:g} ms values, ~{round_ms:g} ms of pairs a round)",
    "note.lockstep_live_short": "pairing lockstep — base and head share one CPU set, sized to the step's own threads; "
                                "live workers driven value by value (~{value_ms:g} ms values, ~{round_ms:g} ms of pairs "
                                "a round, ~{short_round_ms:g} ms for a step under 1 ms)",
    "note.lockstep_commands": "pairing lockstep — base and head share one CPU set, sized to the step's own threads; "
                              "commands: whole processes alternated base/head, 3 pairs a round",
    "note.lockstep_both": "pairing lockstep — base and head share one CPU set, sized to the step's own threads; live "
                          "workers driven value by value (~{value_ms:g} ms values, ~{round_ms:g} ms of pairs a round); "
                          "commands: whole processes alternated base/head, 3 pairs a round",
    "note.lockstep_both_short": "pairing lockstep — base and head share one CPU set, sized to the step's own threads; "
                                "live workers driven value by value (~{value_ms:g} ms values, ~{round_ms:g} ms of pairs "
                                "a round, ~{short_round_ms:g} ms for a step under 1 ms); commands: whole processes "
                                "alternated base/head, 3 pairs a round",
    "note.pairing_rounds": "pairing rounds ({names:names}) — one fresh process per side per round, {values} values of "
                           "≥ {min_time_ms:g} ms each",
    "note.cpuset": "CPU set: {cpus} for every benchmark (base and head on the same CPUs, never at once)",
    "note.cpusets": "CPU sets: {sets:cpusets}",
    "note.cpus_why": "CPUs {cpus} ({names:names}): {why:cpuwhy}",
    "note.cpu_why": "CPU {cpus} ({names:names}): {why:cpuwhy}",
    "note.other_load": "{name}: CPUs {cpus} were {share:.0%} busy with other work while values were timed "
                       "({other_s:.1f} of {capacity_s:.1f} CPU-seconds): figures for multi-threaded steps are unreliable",
    "note.page_faults": "{name}: its step time follows its page faults — on {side}, {faults_low}–{faults_high} minor page "
                        "faults a step from round to round, and the rounds with more were slower (Spearman's rho "
                        "{rho:.2f} over {rounds} rounds, {ms_low:.3g}–{ms_high:.3g} ms). Its allocator gives memory back to "
                        "the kernel and takes it again every step, by as much as each process's history decides, so "
                        "the same step runs at different speeds in different processes (the user's loop too). A caching "
                        "allocator (jemalloc or tcmalloc, by LD_PRELOAD) or MALLOC_TRIM_THRESHOLD_ and "
                        "MALLOC_MMAP_THRESHOLD_ in the benchmark's env keep the memory and the time",
    "note.page_faults_paired": "{name}: its step time follows its page faults — within a round, the side whose process "
                               "took more minor page faults a step was the slower one (head's faults less base's, "
                               "{diff_low:+d}…{diff_high:+d} a step, against head's time over base's, {ratio_low_pct:+.1f}%…"
                               "{ratio_high_pct:+.1f}%: Spearman's rho {rho:.2f} over {rounds} rounds). Its allocator gives "
                               "memory back to the kernel and takes it again every step, by as much as each process's "
                               "history decides, so the same step runs at different speeds in different processes (the "
                               "user's loop too), and the rounds' spread widens. A caching allocator (jemalloc or "
                               "tcmalloc, by LD_PRELOAD) or MALLOC_TRIM_THRESHOLD_ and MALLOC_MMAP_THRESHOLD_ in the "
                               "benchmark's env keep the memory and the time",
    "note.other_load_one": "{name}: CPU {cpus} was {share:.0%} busy with other work while values were timed "
                           "({other_s:.1f} of {capacity_s:.1f} CPU-seconds): its step times read high",
    "note.narrow": "{name}: the step uses {need} CPUs ({sides:probes}) but {where} {have} ({cpus}): pinned there, so "
                   "its step time is longer than with its own threads and the change can differ from what its users see",
    "note.callables_from_head": "callables: the head's {n} definition(s) ran against each side's code (benchmarks_from: head)",
    "note.callables_from_head_copied": "callables: the head's {n} definition(s) ran against each side's code (benchmarks_from: head); {copied:names} copied from head",
    "note.suite_said": "{suite}: {text}",
    "runner.added": "the suite's runner: {name} {version}, added to the setup environment by profopt (the setup did not install it)",
    "runner.added_with": "the suite's runner: {name} {version}, added to the setup environment by profopt (the setup did not install it), with {also:names}",
    "runner.setup": "the suite's runner: {name} {version}, installed by the setup",
    "note.suite_files_added": "{suite}: collected {files:names}, which the project's {option} ({patterns}) skip: in the suite's folder, using the {fixture} fixture",
    "note.suites_from_head": "suites: {suites:names} — {n} benchmark(s) collected; the head's suite ran against each side's code (benchmarks_from: head)",
    "note.suites_each": "suites: {suites:names} — {n} benchmark(s) collected; each side ran its own suite (benchmarks_from: each)",
    "note.own_spec_unused": "{side}: its own spec was not used ({why}); {side} runs the benchmarks as defined in "
                            "{spec} passed to profopt",
    "note.own_spec_missing": "{side}: its own spec was not used (it has no spec at this path); {side} runs the "
                             "benchmarks as defined in {spec} passed to profopt",
    "note.own_spec_differs": "{side}'s own spec sets {keys:names} of {name} differently; both sides were measured and "
                             "judged with the settings of the spec passed to profopt",
    "note.base_no_spec_head": "base has no {spec} (this pull request adds it): the head's benchmarks ran on the base's "
                              "code (benchmarks_from: head); its other benchmarks are new in this PR, measured on head only",
    "note.base_no_spec_suites": "base has no {spec} (this pull request adds it): the head's suites ran on the base's "
                                "code; its other benchmarks are new in this PR, measured on head only",
    "note.base_no_spec": "base has no {spec} (this pull request adds it): every benchmark is new in this PR, measured "
                         "on head only",
    "note.new_head_only": "new in this PR: measured on head only: {names:names}",
    "note.new_cause": "{name}: new in this PR — {cause}",
    "note.not_confirmed": "{name}: not confirmed — first run {first:term}{first_figures}, second run "
                          "{second:term}{second_figures}: inconclusive",
    "note.outliers": "{name}: {note:msg}",
    "note.gpu_clocks": "{name}: GPU clocks were not locked: SM {low:,.0f}–{high:,.0f} MHz during the rounds; lock them "
                       "with nvidia-smi -lgc",
    "note.gpu_throttled": "{name}: {n} of {rounds} rounds were throttled ({reasons:terms}) and were left out of the "
                          "verdict; lock the clocks at a rate the board's power and cooling sustain (nvidia-smi -lgc) "
                          "or raise its power limit (nvidia-smi -pl)",
    "note.gpu_unavailable": "GPU telemetry was not read ({why}): clocks, throttling and energy per step are unknown",
    "note.graph_breaks": "{name}: torch.compile — head: {head} graph breaks, base: {base} (head's own break reasons: "
                         "{reasons})",
    "note.recompiles": "{name}: torch.compile — head: {head} recompiles, base: {base}",
    "note.compile_retaken": "{name}: {n} timed value(s) were taken again because torch.compile compiled during "
                            "them: compile time is never inside a timed value",
    "note.not_only_code": "not only the code differs between base and head: {scopes:names} (see differences)",
    "note.runner_slow": "this runner ran {off_pct:.0f}% slower than its usual (probe {ms:.3g} ms vs a median of "
                        "{median_ms:.3g} ms over the last {runs} runs of label {label}): absolute times are off, ratios "
                        "may shift by a few %",
    "note.runner_fast": "this runner ran {off_pct:.0f}% faster than its usual (probe {ms:.3g} ms vs a median of "
                        "{median_ms:.3g} ms over the last {runs} runs of label {label}): absolute times are off, ratios "
                        "may shift by a few %",
    "note.unpaired": "pairing was impossible: the two results were measured separately, not in interleaved rounds, so "
                     "the figures are unpaired (Mann–Whitney U) and weaker: machine drift between the runs shows up "
                     "as change",
    "note.only_in_one": "only in one of the files (not compared): {names:names}",
    "note.labels_differ": "hardware labels differ: {base} vs {head}",
    "note.specs_differ": "the specs differ between the two results",
    "note.env_mismatch": "the stored baseline was measured in a different environment ({diffs:mismatch}); compared "
                         "anyway (--allow-env-mismatch): differences may be the machine's, not the code's",
    "note.dirty_head": "head is the working tree with uncommitted changes",
    "note.stored_baseline": "compared with the stored baseline of commit {commit} measured {created} UTC "
                            "({age_days:age}), {distance} commit(s) before the base {base}; only head was measured "
                            "now, so the figures are unpaired (Mann–Whitney U) and weaker: machine drift since the "
                            "nightly run shows up as change",
    "note.spec_changed": "the spec changed since the stored baseline was measured",
    "note.not_in_stored": "not in the stored baseline (not compared): {names:names}",
    "note.nightly_env": "{left_out} of {runs} nightly runs were measured in another environment ({keys:names}) and are "
                        "left out of the drift check (--allow-env-mismatch keeps them)",
    "note.no_history": "no nightly history for label {label} at or before the base {base} in {store}: drift not checked",
    "note.drift": "the freshly measured base of {name} drifted from its nightly history: {fresh_ms:.4g} ms vs a nightly "
                  "median of {median_ms:.4g} ms over the last {runs} runs ({delta_pct:.1f}% {direction:term}, "
                  "z {z:+.1f}) — the machine or its environment moved since the nightly runs; the paired comparison "
                  "still holds",
    "note.bisect_untestable": "{bench}: {n} commit(s) before {commit} could not be tested (skipped or inconclusive): "
                              "any of them may be the first bad one",
    "note.bisect_quiet": "not changed beyond τ between the ends, not searched: {names:names}",
    "note.bisect_failed": "failed at the ends, not searched: {names:names}",
    "note.bisect_one_commit": "one commit between the nightlies: named without bisecting (the effect is the nightly medians')",
    # the words of the format specs of message fields (words/i18n.py SPECS)
    "spec.mb_step": "MB/step", "spec.step": "step", "spec.cpuset": "{cpus} for {names}",
    "spec.mismatch": "{key}: stored {stored} vs now {now}", "spec.age_unknown": "of unknown age",
    "spec.age_hours": "{:.0f} hours old", "spec.age_days": "{:.0f} days old",
    "spec.probe.base": "base: ", "spec.probe.head": "head: ", "spec.busy_thread": "{n} busy thread",
    "spec.busy_threads": "{n} busy threads", "spec.no_probe": "no probe",
    "spec.cpuwhy.cores": "{n} distinct cores", "spec.cpuwhy.core_one": "a core of its own", "spec.cpuwhy.smt": "threads share cores (SMT): {cores} core(s) free",
    "spec.cpuwhy.node": "NUMA node {node}", "spec.cpuwhy.node_gpu": "NUMA node {node} (the GPU's)",
    "spec.cpuwhy.away": "away from CPU {cpu}, where profopt runs",
    "spec.cpuwhy.with_parent": "with CPU {cpu}, where profopt runs (no other free)",
    "spec.cpuwhy.pool": "of {pool} CPUs ({cores} cores) profopt may use",
}
