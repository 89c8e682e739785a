"""One GitHub issue per nightly change point: opened, updated, never duplicated, closed when reverted.

In: a GitHub client, the repository, the bisect@1 documents `baseline refresh --bisect` wrote (each
with its `change_point`), the latest nightly value of each benchmark of the label, τ, and the
login whose issues are ours. Out: what was done to which issue (created · updated · left closed ·
closed), and the issues on GitHub. The title, the opening line and the closing comment are
messages (`issue.*`, words/i18n_bisect.py) said in the nightly's language, as the bisection below them.

An issue is keyed, as the sticky comment is (publish/comment.py), by a hidden first line —
`<!-- profopt:change-point LABEL/BENCHMARK/FROM..TO -->` — and by its author: a later nightly that
finds the same change point updates that issue; one closed earlier stays closed. The second hidden
line carries the levels either side of the step, so a later nightly can tell that the change was
reverted: its newest value within τ of the level before the step, and nearer it than the level
after. The issue is then closed with a comment saying so.
"""
from __future__ import annotations

import json
import math
import re
from typing import Any

from profopt_ci.publish.rest import GitHubClient
from profopt_ci.report.bisect_md import render_bisect
from profopt_ci.report.format import md_inline
from profopt_ci.words.i18n import message, say

PREFIX = "<!-- profopt:change-point "
_DATA = re.compile(r"^<!-- profopt:data (\{.*\}) -->$", re.M)
_KEY_CHARS = re.compile(r"[^A-Za-z0-9._-]")
BODY_LIMIT = 60_000


def key_of(cp: dict) -> str:
    part = lambda s: _KEY_CHARS.sub("_", str(s))[:100]  # noqa: E731 — names are repository text
    return f"{part(cp['label'])}/{part(cp['benchmark'])}/{part(cp['from_commit'])[:12]}..{part(cp['to_commit'])[:12]}"


def marker(cp: dict) -> str:
    return f"{PREFIX}{key_of(cp)} -->"


def title_of(doc: dict) -> dict:
    """The issue's title, as a message."""
    cp, first = doc["change_point"], doc["first_bad"]
    where = (message("issue.first_bad", commit=first["commit"][:12]) if first
             else message("issue.between", before=cp["from_commit"][:12], after=cp["to_commit"][:12]))
    return message("issue.title", bench=cp["benchmark"][:80], pct=abs(cp["delta_pct"]), label=cp["label"][:60],
                   moved=message("issue.slower" if cp["delta_pct"] > 0 else "issue.faster"), where=where)


def head_of(doc: dict) -> dict:
    """The issue body's opening line, as a message: how the nightly history moved."""
    cp = doc["change_point"]
    return message("issue.head", label=cp["label"], bench=md_inline(cp["benchmark"]), delta=cp["delta_pct"],
                   before=cp["before"], after=cp["after"], good=cp["from_commit"][:12], bad=cp["to_commit"][:12])


def body_of(doc: dict, lang: str = "en") -> str:
    cp = doc["change_point"]
    data = {k: cp[k] for k in ("label", "benchmark", "before", "after")}
    data["threshold_pct"] = doc["threshold_pct"]
    text = (f"{marker(cp)}\n<!-- profopt:data {json.dumps(data, sort_keys=True)} -->\n{say(lang, head_of(doc))}\n\n"
            f"{render_bisect(doc, lang)}")
    return text[:BODY_LIMIT]


def _ours(issue: dict, author: str) -> bool:
    login = str((issue.get("user") or {}).get("login") or "")
    return login.lower() == author.lower() and (issue.get("body") or "").startswith(PREFIX)


def _key(issue: dict) -> str:
    first = (issue.get("body") or "").split("\n", 1)[0]
    return first[len(PREFIX):].removesuffix(" -->")


def _data(issue: dict) -> dict | None:
    m = _DATA.search(issue.get("body") or "")
    try:
        data = json.loads(m.group(1)) if m else None
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def reverted(latest: float, before: float, after: float, tau_pct: float) -> bool:
    """The newest nightly is back at the level before the step: within τ of it, and nearer it than after."""
    if not all(isinstance(v, (int, float)) and v > 0 for v in (latest, before, after)):
        return False
    near_before = abs(math.log(latest / before))
    return near_before < math.log1p(tau_pct / 100) and near_before < abs(math.log(latest / after))


def sync(client: GitHubClient, repo: str, docs: list[dict], *, label: str, latest: dict[str, tuple[float, str]],
         author: str, lang: str = "en") -> list[dict[str, Any]]:
    """Open or update the issue of each change point in `docs`; close ours of `label` that the
    newest nightly shows reverted (`latest`: benchmark → (value, commit)). What was done, per issue."""
    done: list[dict[str, Any]] = []
    ours = sorted((i for i in client.list_issues(repo) if _ours(i, author)), key=lambda i: int(i["number"]))
    by_key: dict[str, dict] = {}
    for issue in ours:
        by_key.setdefault(_key(issue), issue)  # the oldest one of a key is the one
    for doc in docs:
        key = key_of(doc["change_point"])
        issue = by_key.get(key)
        if issue is None:
            fresh = [i for i in client.list_issues(repo) if _ours(i, author) and _key(i) == key]  # a racing nightly
            issue = min(fresh, key=lambda i: int(i["number"])) if fresh else None
        if issue is None:
            issue = client.create_issue(repo, say(lang, title_of(doc)), body_of(doc, lang))
            by_key[key] = issue
            done.append({"action": "created", "number": issue["number"], "key": key})
        elif issue.get("state") == "closed":
            done.append({"action": "left closed", "number": issue["number"], "key": key})
        else:
            by_key[key] = client.update_issue(repo, issue["number"], title=say(lang, title_of(doc)), body=body_of(doc, lang))
            done.append({"action": "updated", "number": issue["number"], "key": key})
    for key, issue in by_key.items():
        done += _close_if_reverted(client, repo, key, issue, label, latest, lang)
    return done


def _close_if_reverted(client: GitHubClient, repo: str, key: str, issue: dict, label: str,
                       latest: dict[str, tuple[float, str]], lang: str) -> list[dict[str, Any]]:
    data = _data(issue)
    if issue.get("state") != "open" or data is None or data.get("label") != label:
        return []
    now = latest.get(str(data.get("benchmark")))
    if now is None or not reverted(now[0], data.get("before"), data.get("after"), float(data.get("threshold_pct") or 3.0)):
        return []
    said = message("issue.reverted", commit=now[1][:12], value=now[0], tau=float(data.get("threshold_pct") or 3.0),
                   before=data["before"])
    client.create_issue_comment(repo, issue["number"], say(lang, said))
    client.update_issue(repo, issue["number"], state="closed", state_reason="completed")
    return [{"action": "closed", "number": issue["number"], "key": key}]
