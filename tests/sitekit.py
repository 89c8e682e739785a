"""Helpers for the site tests: stores of baseline@1 runs made without measuring (test_store.fake_doc),
and a headless Chromium (Debian's `chromium`, driven by Playwright; never a downloaded browser) that
records every console message, page error and request of the pages it opens."""
from __future__ import annotations

import datetime
import os
import re
import shutil
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest
from msgspec.structs import replace
from test_store import fake_doc

from profopt_ci.store import stores

HOSTILE = 'busy <img src=x onerror="alert(1)"> & "quoted"'
CHROMIUM = os.environ.get("PROFOPT_TEST_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def sha(i: int) -> str:
    return f"{i:04x}" + "5eed" * 9


def night(i: int, values: dict[str, float], *, label: str = "test-cpu", cpu: str = "Test CPU",
          failed: dict[str, str] | None = None) -> dict:
    """One nightly of several benchmarks at commit sha(i), on 2026-11-01 plus i days."""
    doc = None
    day = (datetime.date(2026, 11, 1) + datetime.timedelta(days=i)).isoformat()
    for name, value in values.items():
        one = fake_doc(sha(i), value, label=label, cpu=cpu, name=name, created=f"{day}T03:00:00+00:00")
        if doc is None:
            doc = one
        else:
            doc = replace(doc, benchmarks={**doc.benchmarks, **one.benchmarks})
    assert doc is not None
    return replace(doc, failed=dict(failed or {}))


def step_store(root: Path, n: int = 9, at: int = 5, *, names: tuple[str, ...] = ("busy",), label: str = "test-cpu",
               cpu_from: int | None = None) -> stores.DirStore:
    """n nightlies; every benchmark ~30% slower from nightly `at` on; the CPU model changes at `cpu_from`."""
    target = stores.DirStore(root)
    for i in range(n):
        wiggle = 1 + 0.004 * ((i * 7) % 5 - 2)
        values = {name: (10.0 + k) * (1.3 if i >= at else 1.0) * wiggle for k, name in enumerate(names)}
        cpu = "Other CPU" if cpu_from is not None and i >= cpu_from else "Test CPU"
        stores.save(target, night(i, values, label=label, cpu=cpu))
    return target


class _Policy(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = {k for k, _ in attrs}
        if tag == "script" and "src" not in names:
            self.problems.append("a script without src")
        if tag == "style":
            self.problems.append("a <style> element")
        self.problems += [f"<{tag} {k}=…>" for k in names if k.startswith("on") or k == "style"]
        for k, v in attrs:
            if k in ("src", "href") and v and re.match(r"(?i)\s*(javascript|data|https?):", v) and tag != "a":
                self.problems.append(f"<{tag} {k}={v}> loads from elsewhere")


def policy_problems(html: str) -> list[str]:
    """Inline scripts, style elements or attributes, event-handler attributes, and resources from
    another origin: what the pages' Content-Security-Policy forbids, found by parsing the page."""
    p = _Policy()
    p.feed(html)
    return p.problems


@dataclass
class Visit:
    console: list[tuple[str, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        return [f"{kind}: {text}" for kind, text in self.console if kind in ("error", "warning")] + self.errors

    def foreign(self) -> list[str]:
        return [u for u in self.requests if not u.startswith("file://")]


def watch(page) -> Visit:
    v = Visit()
    page.on("console", lambda m: v.console.append((m.type, m.text)))
    page.on("pageerror", lambda e: v.errors.append(str(e)))
    page.on("request", lambda r: v.requests.append(r.url))
    return v


def launched():
    """A headless Chromium for a module's tests (a generator for a fixture); skipped without one."""
    if CHROMIUM is None:
        if os.environ.get("CI"):   # .ci/run installs it: missing there is a broken CI, not a skip
            pytest.fail("no chromium on CI (.ci/run installs it with apt-get)")
        pytest.skip("no chromium (apt-get install chromium; .ci/run installs it)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the test extras)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()
