"""Message catalogs for the report: English (default) and Chinese.

Chinese follows the tutorial's table (指标 / 变化 / 判断) and uses one word per verdict:
改善 improved · 退化 regressed · 无变化 unchanged · 不确定 inconclusive · 不稳定 unstable.
Strings are plain text; the renderer escapes what fills their `{placeholders}`.
"""
from __future__ import annotations

LANGS = ("en", "zh")

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
    "metric.instructions": "instructions per step (Ir)",
    "metric.est_cycles": "est. cycles per step",
    # instrument: instructions (report_instr.py); instr.what and instr.functions are also the
    # English notes instructions.py writes into the JSON
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
    "col.base_median": "base median",
    "col.head_median": "head median",
    "col.estimate": "change (estimate)",
    "col.self_ms": "self ms per profiled step",
    "table.legend": "Base and head are medians over the rounds; change and CI are the estimate the verdict uses "
                    "({how}), so the change can differ from head ÷ base of the medians. Memory is judged on "
                    "medians against its tolerance (memory_tolerance in the spec).",
    "how.paired": "paired, from the per-round head/base ratios",
    "how.unpaired": "unpaired, from all head/base pairs of values",
    "tolerance": "tolerance ±{mb} MB",
    "goal.unclear": "not established at this noise (estimate {achieved}%, {ci} {lo} to {hi}); more rounds narrow "
                    "the CI: raise max_rounds in the spec or pass --max-rounds",
    "bottleneck.none": "no single bottleneck",
    "bottleneck.not_analysed": "not analysed",
    "hot.profiled_step": "{side} profiled step {profiled} ms (unprofiled {plain} ms): the profiler slows Python "
                         "code, so compare the ops with each other, not with the step time",
    "rule.equal": "equal",
    "rule.rel_tol": "rel_tol",
    "rule.abs_tol": "abs_tol",
    "con.identical": "identical on both sides",
    "con.differs": "differs: base {base} vs head {head}",
    "con.not_recorded": "{metric} was not recorded on {sides}",
    "reason.keep": "{improved} improved; nothing regressed; constraints hold",
    "reason.broken": "constraint broken: {what}",
    "reason.regressed": "{regressed} regressed",
    "reason.trade-off": "{improved} improved but {regressed} regressed",
    "reason.inconclusive": "step time inconclusive: the change is within the noise at these rounds",
    "reason.unstable": "step time unstable: the machine was too noisy",
    "reason.no-change": "every metric unchanged within its threshold",
    "reason.no_rounds": "no paired rounds were measured",
    "and": " and ",
    "term.files": "Files",
    "term.details": "Details: {path}",
    "sep": ", ",
    "colon": ":",
    "sep2": "; ",
}

ZH: dict[str, str] = {
    "decision.keep": "保留",
    "decision.reject": "拒绝",
    "decision.trade-off": "权衡",
    "decision.no-change": "无变化",
    "decision.inconclusive": "不确定",
    "decision.failed": "失败",
    "verdict.improved": "改善",
    "verdict.regressed": "退化",
    "verdict.unchanged": "无变化",
    "verdict.inconclusive": "不确定",
    "verdict.unstable": "不稳定",
    "col.metric": "指标",
    "col.base": "基线",
    "col.head": "新版",
    "col.change": "变化",
    "col.ci": "{conf} 置信区间",
    "col.verdict": "判断",
    "col.constraint": "约束",
    "col.result": "结果",
    "col.key": "项",
    "col.phase": "阶段",
    "col.op": "算子",
    "col.delta_ms": "Δ 毫秒",
    "col.benchmark": "基准",
    "col.rounds": "轮数",
    "col.outliers": "离群轮数",
    "col.base_spread": "基线中位数（最小–最大）",
    "col.head_spread": "新版中位数（最小–最大）",
    "col.cv": "变异系数",
    "col.p": "p 值",
    "col.p_adj": "校正后 p 值",
    "metric.step_time_ms": "单步时间 (ms)",
    "metric.throughput": "吞吐量 ({unit}/s)",
    "metric.peak_memory_mb": "峰值内存 (MB)",
    "metric.cpu_time_ms": "CPU 时间 (ms)",
    "metric.cuda_max_allocated_mb": "CUDA 峰值分配 (MB)",
    "metric.cuda_max_reserved_mb": "CUDA 峰值预留 (MB)",
    "metric.instructions": "每步指令数 (Ir)",
    "metric.est_cycles": "每步估计周期数",
    "instr.what": "指令数：valgrind 的 callgrind 统计的已执行指令数（Ir）——是指令数，不是时间；只有开启 cache_sim "
                  "时才模拟缓存效应（est_cycles 是估计值）；线程被串行执行；在 valgrind 下，torch 使用 AVX2 内核而非 "
                  "AVX-512",
    "instr.functions": "Ir 差异列出的是 C 函数（解释器、内置函数、扩展模块的）；Python 函数在其中只显示为解释器帧——"
                       "基于时间的热点算子差异会列出它们",
    "instr.cell": "（各次运行的范围 ±{floor}%）",
    "col.runs_range": "运行范围 ± 噪声下限",
    "col.ci_or_runs": "{conf} 置信区间（指令数：运行范围 ± 噪声下限）",
    "meta.instr": "指令数 τ ±{t}%，每侧 {runs} 次 valgrind 运行",
    "hl.metric_runs": "{name} {metric} {pct}（各次运行 {lo} 至 {hi}，已含 ±{floor}% 噪声下限）",
    "hl.inconclusive_runs": "{name} {metric} 在每侧 {runs} 次 valgrind 运行后仍不确定（各次运行 {lo} 至 {hi}，"
                            "已含 ±{floor}% 噪声下限）",
    "word.memory": "内存",
    "word.step_time": "单步时间",
    "meta.benchmarks": "{n} 个基准",
    "meta.benchmark": "1 个基准",
    "count.improved": "改善 {n}",
    "count.regressed": "退化 {n}",
    "count.constraint_failures": "违反约束 {n}",
    "count.inconclusive": "不确定 {n}",
    "count.failed": "失败 {n}",
    "meta.paired": "配对，{rounds} 轮",
    "meta.unpaired": "非配对",
    "meta.threshold": "阈值 ±{t}%",
    "meta.confidence": "置信度 {conf}",
    "meta.sides": "基线 {base} → 新版 {head}",
    "unpaired_note": "非配对比较（两份已存结果）：无法按轮配对，结论比配对比较弱。",
    "differences": "代码之外的改动",
    "scope.params": "参数",
    "scope.env": "环境变量",
    "scope.fingerprint": "硬件",
    "scope.hardware": "硬件",
    "constraints": "约束",
    "constraint.ok": "满足",
    "constraint.broken": "违反",
    "goal": "目标",
    "goal.decrease": "{metric} 降低 ≥ {target}%",
    "goal.increase": "{metric} 提高 ≥ {target}%",
    "goal.met": "已达成（{achieved}%）",
    "goal.missed": "未达成（{achieved}%）",
    "bottleneck": "瓶颈判断",
    "evidence": "证据",
    "next_action": "下一步",
    "side.base": "基线",
    "side.head": "新版",
    "failed_side": "{side}失败（{status}）",
    "failed_plain": "{side}失败",
    "error_capped": "末尾 {shown} 字符，共 {total} 字符",
    "unchanged_group": "无变化（{n}）",
    "section.noise": "轮次与噪声",
    "section.hot-ops": "热点算子对比",
    "section.phases": "阶段分解",
    "section.environments": "运行环境",
    "section.unchanged": "无变化基准的表格",
    "section.chart": "图表",
    "section.tail": "最后 {n} 个基准的章节",
    "details.environments": "运行环境",
    "details.phases": "阶段分解",
    "details.hot-ops": "热点算子对比",
    "details.noise": "轮次与噪声",
    "section.history": "每日基线历史",
    "details.history": "每日基线历史",
    "history.title": "{name}：每日单步时间 (ms)",
    "history.y": "ms",
    "history.head_label": "新版",
    "history.caption": "最近 {n} 次每日运行（{first} … {last}）：最新 {latest} ms，本次新版 {head} ms",
    "history.step": "{delta} 的阶跃出现在 {start} 与 {end} 之间（{date}）",
    "history.no_steps": "每日序列中没有阶跃",
    "history.drifted": "本次测得的基线（{fresh} ms）偏离了每日历史（中位数 {median} ms，{delta}，最近 {n} 次）",
    "history.no_drift": "本次测得的基线（{fresh} ms）在每日历史范围内（中位数 {median} ms，{delta}，最近 {n} 次）",
    "col.commit": "提交",
    "col.date": "日期",
    "col.value": "单步时间 (ms)",
    "env.differs": "不同",
    "env.ref": "引用",
    "env.commit": "提交",
    "env.var": "环境变量 {name}",
    "no_profile": "未采集性能剖析：{reason}",
    "trace": "trace 文件：{path}",
    "chart.title": "{what}（基线 = 100）",
    "chart.y": "相对基线 %",
    "chart.legend": "柱：基线（= 100）；线：按判断所用估计的新版（即变化列）；其上下两条线：{conf} 置信区间。",
    "chart.shown": "显示 {n} 个基准中变化最大的 {shown} 个。",
    "shrunk": "✂️ 为适应 PR 评论长度已精简，省略了：{parts}。",
    "full_report": "完整报告：{hint}",
    "plots": "每轮单步时间（点）与变化及其置信区间（柱）",
    "plot.overview": "各基准单步时间的变化及其置信区间",
    "hl.faster": "{name} 快 {pct}（{ci} {lo}–{hi}%）",
    "hl.slower": "{name} 慢 {pct}（{ci} {lo}–{hi}%）",
    "hl.metric": "{name} {metric} {pct}（{ci} {lo} 至 {hi}）",
    "hl.memory_unchanged": "内存无变化",
    "hl.memory": "峰值内存 {pct}",
    "hl.rel_tol": "{metric} 在 {limit}% 以内",
    "hl.abs_tol": "{metric} 在 ±{limit} 以内",
    "hl.equal": "{metric} 一致",
    "hl.broken": "{name}：{metric} 约束被违反（{detail}）",
    "hl.tradeoff": "{gain}，但{loss}",
    "hl.inconclusive": "{name} {metric} 在 {rounds} 轮后仍不确定（{ci} {lo} 至 {hi}）",
    "hl.unstable": "{name} {metric} 噪声过大，无法判断（{rounds} 轮中 {outliers} 轮离群）",
    "hl.no_change": "{n} 个基准均无超过 ±{t}% 的变化",
    "hl.failed": "{side}在 {name} 上失败：{cause}",
    "hl.more": "另有 {n} 个基准",
    "hl.more1": "另有 1 个基准",
    "hl.none": "没有可比较的基准",
    "col.base_median": "基线中位数",
    "col.head_median": "新版中位数",
    "col.estimate": "变化（估计）",
    "col.self_ms": "每个剖析步的自身毫秒",
    "table.legend": "基线与新版为各轮的中位数；变化与置信区间是判断所用的估计（{how}），因此变化可能与两个中位数之比不同。"
                    "内存按中位数与其容差（规格中的 memory_tolerance）比较。",
    "how.paired": "配对，来自每轮的新版/基线之比",
    "how.unpaired": "非配对，来自所有新版/基线取值对",
    "tolerance": "容差 ±{mb} MB",
    "goal.unclear": "在当前噪声下无法确定（估计 {achieved}%，{ci} {lo} 至 {hi}）；更多轮次可收窄置信区间："
                    "调高规格中的 max_rounds 或传入 --max-rounds",
    "bottleneck.none": "没有单一瓶颈",
    "bottleneck.not_analysed": "未分析",
    "hot.profiled_step": "{side}剖析时单步 {profiled} ms（未剖析 {plain} ms）：剖析器会拖慢 Python 代码，"
                         "请在算子之间比较，而不是与单步时间比较",
    "rule.equal": "完全相同",
    "rule.rel_tol": "相对容差",
    "rule.abs_tol": "绝对容差",
    "con.identical": "两侧完全一致",
    "con.differs": "不同：基线 {base}，新版 {head}",
    "con.not_recorded": "{sides}未记录 {metric}",
    "reason.keep": "{improved}改善；没有退化；约束均满足",
    "reason.broken": "约束被违反：{what}",
    "reason.regressed": "{regressed}退化",
    "reason.trade-off": "{improved}改善，但{regressed}退化",
    "reason.inconclusive": "单步时间不确定：在当前轮数下变化处于噪声之内",
    "reason.unstable": "单步时间不稳定：机器噪声过大",
    "reason.no-change": "所有指标均在阈值内无变化",
    "reason.no_rounds": "没有测得配对轮次",
    "and": "和",
    "term.files": "文件",
    "term.details": "详情：{path}",
    "sep": "，",
    "colon": "：",
    "sep2": "；",
}

CATALOGS: dict[str, dict[str, str]] = {"en": EN, "zh": ZH}

# Bottleneck classes come from the analyzer as ids; unknown ones are shown as they are.
CLASSES: dict[str, dict[str, str]] = {
    "en": {
        "compute": "compute", "memory_capacity": "memory capacity",
        "memory_bandwidth": "memory bandwidth", "communication": "communication",
        "launch_overhead": "scheduling / launch overhead", "scheduling": "scheduling / launch overhead",
        "framework_overhead": "framework / interpreter overhead", "data_loading": "data loading / IO",
        "io": "data loading / IO", "host_device_sync": "host-device sync", "sync": "host-device sync",
        "transfer": "host-device transfer", "launch_framework_overhead": "launch / framework overhead",
        "interpreter_overhead": "interpreter overhead in Python code", "unknown": "unknown",
    },
    "zh": {
        "compute": "计算", "memory_capacity": "内存容量", "memory_bandwidth": "内存带宽",
        "communication": "通信", "launch_overhead": "调度 / 启动开销", "scheduling": "调度 / 启动开销",
        "framework_overhead": "框架 / 解释器开销", "data_loading": "数据加载 / IO", "io": "数据加载 / IO",
        "host_device_sync": "主机-设备同步", "sync": "主机-设备同步", "transfer": "主机-设备传输",
        "launch_framework_overhead": "启动 / 框架开销", "interpreter_overhead": "Python 代码的解释器开销",
        "unknown": "未知",
    },
}


# Next actions come from the analyzer in English, one per rule; the zh report says them in Chinese.
# `_no_clear` / `_no_profile` are analyze.py's two answers when no rule fired.
ACTIONS_ZH: dict[str, str] = {
    "near capacity": "激活检查点、混合精度（bf16/fp16）、更小的微批次配合梯度累积",
    "memory regression": "查看上面分配最多的算子；为变长输入预分配缓冲区、尽早释放引用，"
                         "并设置 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True 以减少碎片",
    "KV-cache growth": "量化 KV 缓存或使用分页缓存；限制上下文长度或批大小",
    "host-device sync": "从循环中移除 .item()、print、.cpu() 和依赖张量的分支；"
                        "用 torch.cuda.set_sync_debug_mode('warn') 找到它们",
    "data loading": "DataLoader(num_workers>0, pin_memory=True, persistent_workers=True, prefetch_factor)；"
                    "整批读取，而不是逐个样本拼接",
    "host-to-device transfer": "pin_memory=True 并使用 .to(device, non_blocking=True)；直接在设备上创建张量",
    "communication": "让集合通信与计算重叠（DDP 桶大小/顺序）、梯度累积时使用 no_sync()、梯度压缩钩子",
    "GPU launch overhead": "torch.compile、CUDA graphs（mode='reduce-overhead'）、更大的批",
    "optimizer launch overhead": "使用 foreach=True 或 fused=True 的 torch.optim（所有参数一个内核）",
    "framework overhead": "更少、更大的算子：用 torch.compile 融合小算子，用整张量运算代替遍历张量的 Python 循环，"
                          "每步更大的批",
    "interpreter overhead": "向量化热点循环（numpy / 整数组运算）、缓存重复计算，或移到编译代码中（numba、Cython、C 扩展）",
    "decode bandwidth": "量化权重与 KV 缓存（int8/int4），每个解码步批处理更多请求",
    "memory bandwidth": "融合逐元素算子（torch.compile）、降低精度（bf16/fp16）、channels_last、去掉拷贝",
    "compute": "AMP/bf16 autocast（GPU 上 TF32）、维度取 8 的倍数、SDPA/flash attention；在 CPU 上检查线程设置",
    "fallback: GEMM largest": "AMP/bf16 autocast（GPU 上 TF32）、维度取 8 的倍数、SDPA/flash attention；在 CPU 上检查线程设置",
    "_no_clear": "没有单一资源占主导：优化下面最热的算子或函数，或用更大的输入剖析，让某一项开销凸显出来",
    "_no_profile": "设置 profile: torch 或 cprofile（Python 可调用对象或命令）以获得瓶颈判断",
}

# Notes come from compare in English; the known ones, as (pattern, zh template with the groups).
NOTES_ZH: list[tuple[str, str]] = [
    (r"base and head are the same commit: this is an A/A run(.*)", "基线与新版是同一个提交：这是 A/A 运行，只测量噪声{0}"),
    (r"A/A: this measures noise only(.*)", "A/A：这只测量噪声{0}"),
    (r"not only the code differs between base and head: (.*) \(see differences\)", "基线与新版之间不仅代码不同：{0}（见差异）"),
    (r"stopped at max_rounds=(\d+) while still inconclusive", "已达到 max_rounds={0}，仍不确定"),
    (r"interrupted: partial results", "已中断：部分结果"),
    (r"new in head, not compared \(the base's spec has no such benchmark\): (.*)", "仅新版有、未比较（基线的规格中没有）：{0}"),
    (r"only in one of the files \(not compared\): (.*)", "只在其中一个文件中（未比较）：{0}"),
    (r"hardware labels differ: (.*) vs (.*)", "硬件标签不同：{0} 与 {1}"),
    (r"the specs differ between the two results", "两份结果的规格不同"),
    (r"pairing was impossible: the two results were measured separately, not in interleaved rounds, so the "
     r"figures are unpaired \(Mann–Whitney U\) and weaker: machine drift between the runs shows up as change",
     "无法配对：两份结果是分别测得的，而非交替轮次，因此数据为非配对（Mann–Whitney U），结论较弱：两次运行之间的机器漂移会显示为变化"),
    (r"head is the working tree with uncommitted changes", "新版是含未提交改动的工作区"),
    (r"(\S+) failed on (\S+); its figures are missing", "{0}在 {1} 上失败；缺少其数据"),
]


# The analyzer's evidence, for the rules a CPU run meets most; figures and op names are kept.
EVIDENCE_ZH: list[tuple[str, str]] = [
    (r"python share (\S+)", "Python 占比 {0}"),
    (r"hottest: (.*)", "最热：{0}"),
    (r"native time by category: (.*)", "原生时间按类别：{0}"),
    (r"GEMM is the largest share of native time \((.*)\)", "GEMM 是原生时间中最大的一类（{0}）"),
    (r"GEMM/conv/attention (\S+) of native time", "GEMM/卷积/注意力占原生时间的 {0}"),
    (r"(\S+) of profiled self time in pure-Python functions", "剖析的自身时间中 {0} 在纯 Python 函数内"),
    (r"(\S+) Python lines executed per ms of step", "每毫秒单步执行 {0} 行 Python"),
    (r"(\S+) of the step is overhead: (\S+) outside native ops \(Python and glue\) \+ (\S+) in ops under 10 µs",
     "单步中 {0} 是开销：{1} 在原生算子之外（Python 与胶水代码）+ {2} 在 10 µs 以下的算子中"),
    (r"(\S+) ops per step, (\S+) of them under 10 µs", "每步 {0} 个算子，其中 {1} 在 10 µs 以下"),
    (r"memory-bound ops (\S+) of native time \((.*)\)", "访存密集算子占原生时间的 {0}（{1}）"),
    (r"arithmetic intensity (\S+) FLOP/byte vs ridge (\S+)", "算术强度 {0} FLOP/字节，拐点 {1}"),
    (r"data loading (\S+) of the step \((.*) of (.*)\) > (\S+)", "数据加载占单步的 {0}（{2} 中的 {1}）> {3}"),
    (r"peak RSS (\S+) MB of (\S+) MB RAM \((\S+)\)", "峰值 RSS {0} MB / 内存 {1} MB（{2}）"),
    (r"(\S+) (\S+) → (\S+) MB \((\S+) vs base\)", "{0} {1} → {2} MB（相对基线 {3}）"),
]


def evidence(lang: str, text: str) -> str:
    """One line of the analyzer's evidence in `lang`: a known pattern translated, else as it is."""
    return _by_pattern(EVIDENCE_ZH, text) if lang == "zh" else text


def _by_pattern(table: list[tuple[str, str]], text: str) -> str:
    import re

    sides = {"base": ZH["side.base"], "head": ZH["side.head"]}
    for pattern, template in table:
        m = re.fullmatch(pattern, text)
        if m:
            return template.format(*(sides.get(g, g) for g in m.groups()))
    return text


def note(lang: str, text: str) -> str:
    """A comparison note in `lang`: a known English note translated, anything else as it is."""
    return _by_pattern(NOTES_ZH, text) if lang == "zh" else text


def next_action(lang: str, rule: str | None, text: str, no_clear: str, no_profile: str) -> str:
    """The analyzer's next action in `lang`, by the rule that named it."""
    if lang != "zh":
        return text
    key = rule or ("_no_profile" if text == no_profile else "_no_clear" if text == no_clear else None)
    return ACTIONS_ZH.get(key or "", text)


def t(lang: str, key: str, **fields: object) -> str:
    """The message `key` in `lang` (English when missing), with `fields` filled in."""
    text = CATALOGS.get(lang, EN).get(key) or EN.get(key, key)
    return text.format(**fields) if fields else text


def word(lang: str, kind: str, value: object) -> str:
    """A decision / verdict / side word; a value the catalog does not know is shown as it is."""
    key = f"{kind}.{value}"
    return t(lang, key) if key in EN else str(value)


def bottleneck_class(lang: str, cls: str | None) -> str:
    key = (cls or "unknown").strip().lower().replace("-", "_").replace(" ", "_").replace("/", "_")
    return CLASSES.get(lang, CLASSES["en"]).get(key, cls or "unknown")
