"""A bisection's words and the nightly's issue, in English and Chinese.

In: nothing (two dicts of message keys to templates). Out: `EN` and `ZH`, merged into `i18n.EN` /
`i18n.ZH`: `bisect.*` is what report/bisect_md.py says around a bisect@1 document's data (its notes
are messages of the main catalogs), `issue.*` the title, opening and closing comment of the issue
publish/issues.py keeps per nightly change point (made as messages there, said in the nightly's
language). Fields are data (commits, names, figures) and are not translated.
"""
from __future__ import annotations

EN: dict[str, str] = {
    "bisect.title": "profopt bisect", "bisect.first": "First bad commit",
    "bisect.none": "The ends did not differ beyond τ = {tau}%: nothing to search.",
    "bisect.range": "{n} first-parent commit(s) from `{good}` to `{bad}`, metric `{metric}`, τ = {tau}%, "
                    "{probes} probe(s), {secs:.0f} s.",
    "bisect.steps": "Steps larger than τ", "bisect.ends": "The ends", "bisect.probes": "Probes",
    "bisect.notes": "Notes",
    "bisect.col_step": "| benchmark | commit | subject | PR | effect | CI | against |",
    "bisect.col_end": "| benchmark | change | CI | verdict | rounds |",
    "bisect.col_probe": "| # | benchmark | commit | subject | estimate | CI | verdict | class | rounds |",
    "bisect.maybe": "could also be any of: {list} (not testable)",
    "bisect.effect": "{bench}: {delta} (CI {ci}) against `{good}`", "bisect.verdict.regressed": "regressed",
    "bisect.verdict.improved": "improved", "bisect.verdict.unchanged": "unchanged",
    "bisect.verdict.inconclusive": "inconclusive", "bisect.verdict.unstable": "unstable",
    "bisect.verdict.failed": "failed", "bisect.class.bad": "bad", "bisect.class.good": "good",
    "bisect.class.skip": "skipped", "bisect.class.inconclusive": "inconclusive",
    "bisect.class.step-check": "step check",
    "issue.title": "profopt: {bench} {pct:.1f}% {moved:msg} on {label} — {where:msg}",
    "issue.slower": "slower", "issue.faster": "faster",
    "issue.first_bad": "first bad commit {commit}",
    "issue.between": "between {before} and {after}",
    "issue.head": "The nightly `{label}` history of **{bench}** moved {delta:+.1f}% (median {before:.4g} → "
                  "{after:.4g} ms) between the nightlies of `{good}` and `{bad}`.",
    "issue.reverted": "The nightly of `{commit}` measured {value:.4g} ms, back within {tau:g}% of the {before:.4g} ms "
                      "before this change point: reverted. Closing.",
}

ZH: dict[str, str] = {
    "bisect.title": "profopt 二分定位", "bisect.first": "第一个变坏的提交", "bisect.none": "两端的差异未超过 τ = {tau}%：无需查找。",
    "bisect.range": "从 `{good}` 到 `{bad}` 共 {n} 个第一父提交，指标 `{metric}`，τ = {tau}%，探测 {probes} 次，"
                    "用时 {secs:.0f} 秒。",
    "bisect.steps": "超过 τ 的台阶", "bisect.ends": "两端", "bisect.probes": "探测", "bisect.notes": "说明",
    "bisect.col_step": "| 基准 | 提交 | 标题 | PR | 影响 | 置信区间 | 对照 |",
    "bisect.col_end": "| 基准 | 变化 | 置信区间 | 判断 | 轮数 |",
    "bisect.col_probe": "| # | 基准 | 提交 | 标题 | 估计 | 置信区间 | 判断 | 分类 | 轮数 |",
    "bisect.maybe": "也可能是：{list}（无法测试）", "bisect.effect": "{bench}：{delta}（置信区间 {ci}），对照 `{good}`",
    "bisect.verdict.regressed": "变慢", "bisect.verdict.improved": "改善", "bisect.verdict.unchanged": "无变化",
    "bisect.verdict.inconclusive": "无定论", "bisect.verdict.unstable": "不稳定", "bisect.verdict.failed": "失败",
    "bisect.class.bad": "坏", "bisect.class.good": "好", "bisect.class.skip": "跳过",
    "bisect.class.inconclusive": "无定论", "bisect.class.step-check": "台阶检查",
    "issue.title": "profopt：{bench} 在 {label} 上{moved:msg} {pct:.1f}% — {where:msg}",
    "issue.slower": "变慢", "issue.faster": "变快",
    "issue.first_bad": "第一个变坏的提交 {commit}",
    "issue.between": "在 {before} 与 {after} 之间",
    "issue.head": "`{label}` 的每日运行历史中，**{bench}** 在 `{good}` 与 `{bad}` 的每日运行之间变化了 {delta:+.1f}%"
                  "（中位数 {before:.4g} → {after:.4g} ms）。",
    "issue.reverted": "`{commit}` 的每日运行测得 {value:.4g} ms，回到了此变化点之前 {before:.4g} ms 的 {tau:g}% 以内：已恢复。"
                      "关闭此 issue。",
}
