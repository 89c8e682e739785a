"""What a comparison says of its policy beyond the `--fail-on` rule: the accept label, and a label
event's comparison taken from the cache (en, zh).

In: nothing (two dicts of message keys to templates). Out: `EN` and `ZH`, merged into `i18n.EN` /
`i18n.ZH`. pipeline/compare_refs.py and pipeline/reuse.py make the notes; report/headline.py says
the headline's phrase.
"""
from __future__ import annotations

EN: dict[str, str] = {
    "hl.accepted": "regression accepted (label {label})",
    "hl.accepted_constraint": "broken constraint accepted (label {label})",
    "note.accepted": "the pull request carries the label {label}: {names:names} fail the policy (--fail-on "
                     "{fail_on}) and are accepted; every figure is as measured",
    "note.reused": "the comparison of these two commits measured at {measured} is reused: the pull request's event "
                   "({action}) changes the policy, not the measurement (no new rounds)",
}

ZH: dict[str, str] = {
    "hl.accepted": "已接受回退（标签 {label}）",
    "hl.accepted_constraint": "已接受被破坏的约束（标签 {label}）",
    "note.accepted": "拉取请求带有标签 {label}：{names:names} 未通过策略（--fail-on {fail_on}），已被接受；所有数字均为实测",
    "note.reused": "沿用 {measured} 测得的这两个提交的比较：拉取请求的事件（{action}）只改变策略，不改变测量（没有新的轮次）",
}
