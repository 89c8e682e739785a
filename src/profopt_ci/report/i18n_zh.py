"""Chinese for the English notes the producers still write: comparison notes, by pattern.

    note("interrupted: partial results") -> "已中断：部分结果"

Text in, text out; an unknown string comes back as it is (English beats a wrong guess). The
bottleneck note's evidence and next actions are messages (report/i18n.message) said by the
catalogs; the notes of compare, diff, baseline, history, instructions, the CPU sets and the runner
probe are next, and then this module goes. Until then tests/test_i18n_coverage.py collects every
note template from the producers' source and fails when a zh render of one leaves English in it.

Groups are formatted with a spec that says how to say them: `{0}` as it is (figures, op names,
refs), `{0:t}` term by term (sides, scopes, op categories, metric keys), `{0:u}` with per-step units
in Chinese, `{0:m}` an environment mismatch list, `{0:a}` a baseline's age.
"""
from __future__ import annotations

import re

from profopt_ci.report.messages_zh import TERMS_ZH

TERMS = TERMS_ZH
_UNITS = ((" MB/step", " MB/步"), ("/step", "/步"), ("of unknown age", "时长未知"))


def _terms(text: str) -> str:
    """A whole known term, or a `name share, name share` list with each leading name translated."""
    if text in TERMS:
        return TERMS[text]
    parts = []
    for part in text.split(", "):
        head, sep, rest = part.partition(" ")
        parts.append(TERMS.get(head, head) + sep + rest)
    return "，".join(parts)


def _units(text: str) -> str:
    for en, zh in _UNITS:
        text = text.replace(en, zh)
    return text


def _mismatch(text: str) -> str:
    return text.replace(": stored ", "：存储时 ").replace(" vs now ", "，现在 ").replace("; ", "；")


def _cpus(text: str) -> str:
    """'base: 2 busy threads, torch 2; head: 1 busy thread' (measure/cpus.describe, per side)."""
    text = re.sub(r"(\d+) busy threads?", r"\1 个忙碌线程", text)
    for en, zh in (("base: ", "基线："), ("head: ", "新版："), ("no probe", "未探测"), ("; ", "；"), (", ", "，")):
        text = text.replace(en, zh)
    return text


def _age(text: str) -> str:
    m = re.fullmatch(r"(\S+) (hours|days) old", text)
    return f"{m.group(1)} {'小时' if m.group(2) == 'hours' else '天'}前" if m else _units(text)


class _Group(str):
    _SPECS = {"t": _terms, "u": _units, "m": _mismatch, "a": _age, "c": _cpus,
              "s": lambda text: {"slower": "慢", "faster": "快"}.get(text, text)}

    def __format__(self, spec: str) -> str:
        return self._SPECS[spec](str(self)) if spec else str(self)


def _by_pattern(table: list[tuple[str, str]], text: str) -> str:
    for pattern, template in table:
        m = re.fullmatch(pattern, text)
        if m:
            return template.format(*(_Group(g or "") for g in m.groups()))
    return text


def note(text: str) -> str:
    return _by_pattern(NOTES, text)


# Notes from compare / baseline / history / instructions, and the lockstep work's likely ones.
NOTES: list[tuple[str, str]] = [
    (r"base and head are the same commit: this is an A/A run(.*)", "基线与新版是同一个提交：这是 A/A 运行，只测量噪声{0}"),
    (r"new in this PR: measured on head only: (.*)", "本 PR 新增：只在新版上测量：{0}"),
    # suites (profopt_ci.suites.expand, pipeline/guards.py, pipeline/compare_refs.py)
    (r"suites: (.*) — (\d+) benchmark\(s\) collected; the head's suite ran against each side's code "
     r"\(benchmarks_from: head\)", "套件：{0}——收集到 {1} 个基准；新版的套件在两侧各自的代码上运行（benchmarks_from: head）"),
    (r"suites: (.*) — (\d+) benchmark\(s\) collected; each side ran its own suite \(benchmarks_from: each\)",
     "套件：{0}——收集到 {1} 个基准；两侧各自运行自己的套件（benchmarks_from: each）"),
    (r"(.*): (\d+) other test\(s\) use neither the benchmark fixture nor the marker",
     "{0}：另有 {1} 个测试既未使用 benchmark 夹具，也没有 benchmark 标记"),
    (r"(.*): new in this PR — the base cannot run it: (.*)", "{0}：本 PR 新增——基线无法运行它：{1}"),
    (r"(.*): new in this PR — the base cannot collect it: (.*)", "{0}：本 PR 新增——基线无法收集它：{1}"),
    (r"(.*): new in this PR — the base's suite has no such benchmark", "{0}：本 PR 新增——基线的套件中没有这个基准"),
    (r"the base cannot run it: (.*)", "基线无法运行它：{0}"),
    (r"the base cannot collect it: (.*)", "基线无法收集它：{0}"),
    (r"the base's suite has no such benchmark", "基线的套件中没有这个基准"),
    (r"callables: the head's (\d+) definition\(s\) ran against each side's code \(benchmarks_from: head\); (.*) "
     r"copied from head", "可调用基准：新版的 {0} 个定义在两侧各自的代码上运行（benchmarks_from: head）；{1} 从新版复制"),
    (r"callables: the head's (\d+) definition\(s\) ran against each side's code \(benchmarks_from: head\)",
     "可调用基准：新版的 {0} 个定义在两侧各自的代码上运行（benchmarks_from: head）"),
    (r"base has no (\S+) \(this pull request adds it\): the head's benchmarks ran on the base's code "
     r"\(benchmarks_from: head\); its other benchmarks are new in this PR, measured on head only",
     "基线没有 {0}（本 PR 新增了它）：新版的基准在基线的代码上运行（benchmarks_from: head）；其余基准是本 PR 新增的，只在新版上测量"),
    (r"base has no (\S+) \(this pull request adds it\): the head's suites ran on the base's code; its other "
     r"benchmarks are new in this PR, measured on head only",
     "基线没有 {0}（本 PR 新增了它）：新版的套件在基线的代码上运行；其余基准是本 PR 新增的，只在新版上测量"),
    (r"base has no (\S+) \(this pull request adds it\): every benchmark is new in this PR, measured on head only",
     "基线没有 {0}（本 PR 新增了它）：所有基准都是本 PR 新增的，只在新版上测量"),
    (r"A/A: this measures noise only \(base and head are the same commit\)", "A/A：这只测量噪声（基线与新版是同一个提交）"),
    (r"A/A: this measures noise only(.*)", "A/A：这只测量噪声{0}"),
    (r"not only the code differs between base and head: (.*) \(see differences\)", "基线与新版之间不仅代码不同：{0:t}（见差异）"),
    (r"stopped at max_rounds=(\d+) while still inconclusive", "已达到 max_rounds={0}，仍不确定"),
    (r"interrupted: partial results", "已中断：部分结果"),
    (r"(.*): not confirmed — first run (\w+) ([^,]*), second run (\w+) (.*): inconclusive",
     "{0}：未得到确认——第一次运行{1:t} {2}，第二次独立运行{3:t} {4}：无定论"),
    (r"new in head, not compared \(the base's spec has no such benchmark\): (.*)", "仅新版有、未比较（基线的规格中没有）：{0}"),
    (r"only in one of the files \(not compared\): (.*)", "只在其中一个文件中（未比较）：{0}"),
    (r"hardware labels differ: (.*) vs (.*)", "硬件标签不同：{0} 与 {1}"),
    (r"the specs differ between the two results", "两份结果的规格不同"),
    (r"pairing was impossible: the two results were measured separately, not in interleaved rounds, so the "
     r"figures are unpaired \(Mann–Whitney U\) and weaker: machine drift between the runs shows up as change",
     "无法配对：两份结果是分别测得的，而非交替轮次，因此数据为非配对（Mann–Whitney U），结论较弱：两次运行之间的机器漂移会显示为变化"),
    (r"head is the working tree with uncommitted changes", "新版是含未提交改动的工作区"),
    (r"(\S+) failed on (\S+); its figures are missing", "{0:t}在 {1} 上失败；缺少其数据"),
    (r"the stored baseline was measured in a different environment \((.*)\); compared anyway "
     r"\(--allow-env-mismatch\): differences may be the machine's, not the code's",
     "存储的基线是在不同环境中测得的（{0:m}）；仍然比较了（--allow-env-mismatch）：差异可能来自机器而非代码"),
    (r"compared with the stored baseline of commit (\S+) measured (.*) UTC \((.*)\), (\d+) commit\(s\) before "
     r"the base (\S+); only head was measured now, so the figures are unpaired \(Mann–Whitney U\) and weaker: "
     r"machine drift since the nightly run shows up as change",
     "与提交 {0} 的存储基线比较（测于 {1} UTC，{2:a}），它在基线 {4} 之前 {3} 个提交；本次只测了新版，"
     "因此数据为非配对（Mann–Whitney U），结论较弱：自每日运行以来的机器漂移会显示为变化"),
    (r"the spec changed since the stored baseline was measured", "自存储基线测得以来规格已改变"),
    (r"not in the stored baseline \(not compared\): (.*)", "存储的基线中没有（未比较）：{0}"),
    (r"(\d+) of (\d+) nightly runs were measured in another environment \((.*)\) and are left out of the drift "
     r"check \(--allow-env-mismatch keeps them\)",
     "{1} 次每日运行中有 {0} 次是在其他环境中测得的（{2:t}），未纳入漂移检查（--allow-env-mismatch 会保留它们）"),
    (r"no nightly history for label (.*) at or before the base (\S+) in (.*): drift not checked",
     "在 {2} 中没有标签 {0} 在基线 {1} 及之前的每日历史：未检查漂移"),
    (r"the freshly measured base of (.*) drifted from its nightly history: (\S+) ms vs a nightly median of (\S+) "
     r"ms over the last (\d+) runs \((\S+)% (\S+), z (\S+)\) — the machine or its environment moved "
     r"since the nightly runs; the paired comparison still holds",
     "{0} 本次测得的基线偏离了每日历史：{1} ms，而最近 {3} 次每日运行的中位数为 {2} ms（{5:t} {4}%，z {6}）"
     "——机器或其环境自每日运行以来发生了变化；配对比较仍然成立"),
    (r"instructions: counts of executed instructions \(Ir\) under valgrind's callgrind — instructions, not time; "
     r"cache effects simulated only with cache_sim \(est_cycles is an estimate\); threads serialized; under "
     r"valgrind, torch uses AVX2 kernels rather than AVX-512",
     "指令数：valgrind callgrind 下执行的指令数（Ir）——是指令而非时间；只有开启 cache_sim 才模拟缓存效应"
     "（est_cycles 是估计值）；线程被串行化；在 valgrind 下 torch 使用 AVX2 内核而非 AVX-512"),
    (r"the Ir diff names C functions \(the interpreter's, builtins', extensions'\); Python functions show only as "
     r"interpreter frames there — the time-based hot-op diff names them",
     "Ir 对比列出的是 C 函数（解释器、内建函数、扩展的）；Python 函数在其中只显示为解释器帧——基于时间的热点算子对比会列出它们"),
    (r"this runner ran (\d+)% (slower|faster) than its usual \(probe (\S+) ms vs a median of (\S+) ms over the "
     r"last (\d+) runs of label (.*)\): absolute times are off, ratios may shift by a few %",
     "本次运行的机器比平时{1:s} {0}%（探测 {2} ms，而标签 {5} 最近 {4} 次运行的中位数为 {3} ms）："
     "绝对时间不准，比值也可能偏移几个百分点"),
    # how the pairing ran (pipeline/compare_refs.py), said once per comparison
    (r"pairing lockstep — base and head share one CPU set, sized to the step's own threads; live workers driven "
     r"value by value \(~(\S+) ms values, ~(\S+) ms of pairs a round\); commands: whole processes alternated "
     r"base/head, 3 pairs a round",
     "锁步配对——基线与新版共用一组 CPU，按单步自身的线程数确定；常驻工作进程逐值驱动（每个值约 {0} ms，每轮约 {1} ms 的取值对）；"
     "命令：基线/新版整进程交替运行，每轮 3 对"),
    (r"pairing lockstep — base and head share one CPU set, sized to the step's own threads; live workers driven "
     r"value by value \(~(\S+) ms values, ~(\S+) ms of pairs a round\)",
     "锁步配对——基线与新版共用一组 CPU，按单步自身的线程数确定；常驻工作进程逐值驱动（每个值约 {0} ms，每轮约 {1} ms 的取值对）"),
    (r"pairing lockstep — base and head share one CPU set, sized to the step's own threads; commands: whole "
     r"processes alternated base/head, 3 pairs a round",
     "锁步配对——基线与新版共用一组 CPU，按单步自身的线程数确定；命令：基线/新版整进程交替运行，每轮 3 对"),
    (r"pairing rounds \((.*)\) — one fresh process per side per round, (\d+) values of ≥ (\S+) ms each",
     "轮次配对（{0}）——每轮每侧一个新进程，每个进程 {1} 个值，每个 ≥ {2} ms"),
    (r"CPU set: (\S+) for every benchmark \(base and head on the same CPUs, never at once\)",
     "CPU 组：所有基准均为 {0}（基线与新版在同一组 CPU 上，从不同时运行）"),
    (r"CPU sets: (.*)", "CPU 组：{0}"),
    (r"(\S+): the step uses (\d+) CPUs \((.*)\) but (profopt may use|the cpuset asked for) (\d+) \((\S+)\): "
     r"pinned there, so its step time is longer than with its own threads and the change can differ from what "
     r"its users see",
     "{0}：单步使用 {1} 个 CPU（{2:c}），但{3:t} {4} 个（{5}）：只能绑定在这些 CPU 上，因此单步时间比使用自身线程数时更长，"
     "变化也可能与用户实际看到的不同"),
    # lockstep pairing (issue 10), by the wording its issue proposes
    (r"(\d+) of (\d+) rounds were outliers", "{1} 轮中 {0} 轮离群"),
    (r"(\d+) of (\d+) rounds were outliers: (.*)", "{1} 轮中 {0} 轮离群：{2}"),
]
