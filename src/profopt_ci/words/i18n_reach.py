"""What a comparison says of its reach: which benchmarks the change reaches, and why one was or was
not measured (en, zh).

In: nothing (two dicts of message keys to templates). Out: `EN` and `ZH`, merged into `i18n.EN` /
`i18n.ZH`. pipeline/reach_gate.py makes these messages; the report says them in its language.
"""
from __future__ import annotations

EN: dict[str, str] = {
    # why a benchmark was measured or not (an entry's `reach.why`)
    "reach.unchanged": "none of the {units} code units in {files} files it runs changed",
    "reach.unchanged_read": "none of the {units} code units in {files} files it runs, nor the {read} files it reads, "
                            "changed",
    "reach.changed": "the change reaches {n} of its code units or files: {changed:names}",
    "reach.env": "what builds the environment changed: {files:names}",
    "reach.spec": "its definition in {spec} changed: {keys:names}",
    "reach.spec_all": "the setup or environment in {spec} changed: {keys:names}",
    "reach.untracked": "it uses files the setup made ({files:names}), and the change edits the tree",
    "reach.all": "measure: all",
    "reach.aa": "base and head are the same commit: an A/A measures every benchmark",
    "reach.new": "new in this PR",
    "reach.unknown.command": "its reach cannot be recorded: a command that is not one Python process",
    "reach.unknown.process": "its reach cannot be recorded: it starts a process that may run the repository's code "
                             "({what})",
    "reach.unknown.fork": "its reach cannot be recorded: it forks processes",
    "reach.unknown.native": "its reach cannot be recorded: it loads native code built in the repository ({what})",
    "reach.unknown.profiler": "its reach cannot be recorded: it sets a Python profiler of its own",
    "reach.unknown.failed": "its reach cannot be recorded: the record run failed ({what})",
    # the comparison's note, the summary, the terminal
    "note.reach": "this change reaches {measured} of {n} benchmarks; {skipped} not measured: it reaches none of "
                  "their code (measure: changed)",
    "summary.unreached": "this change reaches no benchmark's code ({n} not measured)",
    "reach.title": "Not measured ({n}): the change reaches none of their code",
    "reach.col.name": "benchmark",
    "reach.col.why": "why",
    "reach.nightly": "{value} ({commit})",
    "reach.col.nightly": "step time, newest nightly",
    "reach.label": "Why measured",
    "bottleneck.budget": "the time budget left no room for its profile",
    "next_action.budget": "give the compare more time (time_budget) for a bottleneck note",
    "reason.budget": "step time inconclusive: the time budget was spent after {rounds} rounds",
    "reason.budget_none": "not measured: the time budget was spent before its first round",
    "mde.line": "Could see changes ≥ {mde}% in {metric} (its noise over {n} rounds, and the threshold)",
    "bottleneck.skipped": "its step time and memory held, so no profile was taken (profiles go where figures change)",
    "next_action.skipped": "none: the change did not move it",
    "bottleneck.not_profiled_cls": "not profiled",
    "note.bisect_unreached": "{bench}: {n} commit(s) not measured — their change does not reach its code, so each "
                             "runs as the good end: {commits:names}",
    "hl.unreached": "this change reaches no benchmark's code ({n} not measured)",
    "hl.not_measured": "{n} not measured",
    "count.not_measured": "{n} not measured",
}

ZH: dict[str, str] = {
    "reach.unchanged": "它运行的 {files} 个文件中的 {units} 个代码单元都没有改动",
    "reach.unchanged_read": "它运行的 {files} 个文件中的 {units} 个代码单元、它读取的 {read} 个文件都没有改动",
    "reach.changed": "改动触及它的 {n} 个代码单元或文件：{changed:names}",
    "reach.env": "构建环境的文件改动了：{files:names}",
    "reach.spec": "它在 {spec} 中的定义改动了：{keys:names}",
    "reach.spec_all": "{spec} 中的安装步骤或环境改动了：{keys:names}",
    "reach.untracked": "它使用 setup 生成的文件（{files:names}），而改动修改了代码树",
    "reach.all": "按设置全部测量",
    "reach.aa": "基线与新版是同一个提交：A/A 测量每个基准",
    "reach.new": "本 PR 新增",
    "reach.unknown.command": "无法记录其触及范围：命令不是单个 Python 进程",
    "reach.unknown.process": "无法记录其触及范围：它启动了可能运行仓库代码的进程（{what}）",
    "reach.unknown.fork": "无法记录其触及范围：它会 fork 进程",
    "reach.unknown.native": "无法记录其触及范围：它加载了在仓库中构建的原生代码（{what}）",
    "reach.unknown.profiler": "无法记录其触及范围：它自己设置了 Python 性能分析器",
    "reach.unknown.failed": "无法记录其触及范围：记录运行失败（{what}）",
    "note.reach": "本次改动触及 {n} 个基准中的 {measured} 个；{skipped} 个未测量：改动没有触及它们的代码（只测量改动触及的基准）",
    "summary.unreached": "本次改动没有触及任何基准的代码（{n} 个未测量）",
    "reach.title": "未测量（{n}）：改动没有触及它们的代码",
    "reach.col.name": "基准",
    "reach.col.why": "原因",
    "reach.nightly": "{value}（{commit}）",
    "reach.col.nightly": "步长时间（最新夜间基线）",
    "reach.label": "为何测量",
    "bottleneck.budget": "时间预算没有给它的性能剖析留下时间",
    "next_action.budget": "给比较更多时间（time_budget）以得到瓶颈说明",
    "reason.budget": "单步时间不确定：时间预算在 {rounds} 轮后用完",
    "reason.budget_none": "未测量：时间预算在其第一轮前已用完",
    "mde.line": "可检出{metric}≥ {mde}% 的变化（按 {n} 轮的噪声与阈值）",
    "bottleneck.skipped": "它的步长时间与内存没有变化，因此未采集性能剖析（剖析只用于数字有变化的基准）",
    "next_action.skipped": "无：本次改动没有影响它",
    "bottleneck.not_profiled_cls": "未剖析",
    "note.bisect_unreached": "{bench}：{n} 个提交未测量——它们的改动没有触及其代码，因此与正常端相同：{commits:names}",
    "hl.unreached": "本次改动没有触及任何基准的代码（{n} 个未测量）",
    "hl.not_measured": "{n} 个未测量",
    "count.not_measured": "未测量 {n}",
}
