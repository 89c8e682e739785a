"""The suite's own runner in a side's setup venv: what its kind needs and the setup did not install.

In: the suites' kinds, a `Side` whose setup has run in a venv of its own (checkouts.make_venv), the
spec (its `env`, its setup's words), a log. Out: pytest for pytest suites (pytest-benchmark and
pytest-codspeed style), asv_runner for asv, pyperf for pyperf, installed by the venv's own pip —
as asv puts asv_runner into each environment it builds, and tox its test runner — and
`RUNNERS_FILE` in the venv, which the comparison's environment and `validate` read: each runner's
version, whether profopt added it, and what else pip added with it.

pip resolves the runner under the project's own pins: every distribution the setup installed is a
constraint at its installed version (a project pinned to `pytest<8` has its pytest already and
nothing is added; one whose pluggy needs an older pytest gets that one), from the package sources
the setup's commands name (`--index-url`, `--extra-index-url`, `--find-links`, `--no-index`,
`--trusted-host`) and the spec's `env` (`PIP_INDEX_URL`…). A runner that cannot be resolved under
those pins, or found, is an InfraError (exit 3) naming the pins, as a setup that fails is.
"""
from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from profopt_ci.errors import InfraError
from profopt_ci.measure.processes import (
    SETUP_TIMEOUT_S,
    Side,
    child_env,
    command_words,
    own_environment,
    run_child,
    run_setup,
    tail,
)
from profopt_ci.specfile.model import Spec

RUNNERS = {"pytest": "pytest", "asv": "asv_runner", "pyperf": "pyperf"}  # a suite kind → the distribution it runs under
RUNNERS_FILE = "profopt-runners.json"
_SOURCE_FLAGS = ("-i", "--index-url", "--extra-index-url", "-f", "--find-links", "--trusted-host")
_SOURCE_SWITCHES = ("--no-index",)
# what a constraints file accepts: a PEP 440 version (a legacy one would make pip refuse the whole file)
_PEP440 = re.compile(r"^([0-9]+!)?[0-9]+(\.[0-9]+)*((a|b|rc)[0-9]+)?(\.post[0-9]+)?(\.dev[0-9]+)?(\+[a-z0-9]+(\.[a-z0-9]+)*)?$",
                     re.I)
_INSTALLED = ("import json, importlib.metadata as m; "
              "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions() if d.metadata['Name']}))")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def kinds_of(specs: Iterable[Spec | None]) -> list[str]:
    """The suite kinds of these specs (a plan's, and each side's own), each once."""
    return sorted({s.kind for spec in specs if spec is not None for s in spec.suites})


def set_up(spec: Spec, side: Side, log: Callable[[str], None], kinds: Iterable[str]) -> dict:
    """The side's setup, then its suites' runners (`add_runners`)."""
    run_setup(spec, side, log)
    return add_runners(spec, side, log, kinds)


def add_runners(spec: Spec, side: Side, log: Callable[[str], None], kinds: Iterable[str]) -> dict:
    """The runners `kinds` need in the side's venv, added where the setup did not install them;
    the venv's record of them (`read`). A side in profopt's own environment gets nothing."""
    wanted = sorted({RUNNERS[k] for k in kinds if k in RUNNERS})
    if not wanted or not own_environment(side):
        return read(side)
    venv = Path(side.env["VIRTUAL_ENV"])
    before = installed(spec, side)
    record = read(side)
    runners = dict(record.get("runners") or {})
    missing = [w for w in wanted if canonical(w) not in before]
    for name in wanted:
        if name not in missing:
            shown, version = before[canonical(name)]
            runners.setdefault(shown, {"version": version, "added": False})
    added = dict(record.get("added") or {})
    if missing:
        log(f"setup [{side.name}]: the suite's runner: adding {', '.join(missing)} "
            "(pip, under the versions the setup installed)")
        _pip_install(spec, side, missing, before)
        after = installed(spec, side)
        for key, (name, version) in after.items():
            if key not in before:
                added[name] = version
        for name in missing:
            shown, version = after.get(canonical(name), (name, "?"))
            runners[shown] = {"version": version, "added": True}
    record = {"runners": dict(sorted(runners.items())), "added": dict(sorted(added.items()))}
    (venv / RUNNERS_FILE).write_text(json.dumps(record, indent=1))
    return record


def read(side: Side) -> dict:
    """{"runners": {name: {version, added}}, "added": {name: version}} as the venv records them; {}
    for a side in profopt's environment or a venv profopt added nothing to and checked no runner in."""
    venv = side.env.get("VIRTUAL_ENV")
    if not venv:
        return {}
    try:
        data = json.loads((Path(venv) / RUNNERS_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def environment_record(side: Side) -> dict:
    """The comparison's words for a side's environment: `runners` (each suite runner: its version,
    whether profopt added it) and `added` (every distribution profopt installed), where there are any."""
    record = read(side)
    return {k: record[k] for k in ("runners", "added") if isinstance(record.get(k), dict) and record[k]}


def installed(spec: Spec, side: Side) -> dict[str, tuple[str, str]]:
    """{canonical name: (name, version)} of every distribution in the side's venv (`-I`: what is
    installed, not what the checkout or PYTHONPATH would shadow it with)."""
    res = run_child([side.python, "-I", "-c", _INSTALLED], cwd=side.root, env=child_env(spec, None, side), timeout_s=120)
    if res.returncode != 0 or res.timed_out:
        raise InfraError(f"setup failed on {side.name}: cannot list what its venv holds ({side.python}):\n{tail(res.stderr)}")
    return {canonical(name): (name, version) for name, version in json.loads(res.stdout).items()}


def sources(setup: Iterable[str]) -> list[str]:
    """The pip options of the setup's commands that say where packages come from, in order, once each."""
    out: list[str] = []
    for command in setup:
        words = command_words(command)
        for i, word in enumerate(words):
            flag, eq, _ = word.partition("=")
            if word in _SOURCE_SWITCHES or (eq and flag in _SOURCE_FLAGS):
                part = [word]
            elif word in _SOURCE_FLAGS and i + 1 < len(words):
                part = [word, words[i + 1]]
            else:
                continue
            if not _has(out, part):
                out += part
    return out


def _has(words: list[str], part: list[str]) -> bool:
    return any(words[i:i + len(part)] == part for i in range(len(words)))


def constraints(before: dict[str, tuple[str, str]]) -> str:
    """Every installed distribution at its version, as a constraints file."""
    return "".join(f"{name}=={version}\n" for name, version in sorted(before.values()) if _PEP440.match(version))


def _pip_install(spec: Spec, side: Side, names: list[str], before: dict[str, tuple[str, str]]) -> None:
    with tempfile.NamedTemporaryFile("w", prefix="profopt-pins-", suffix=".txt") as pins:
        pins.write(constraints(before))
        pins.flush()
        where = sources(spec.setup)
        argv = [side.python, "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
                *where, "-c", pins.name, *names]
        res = run_child(argv, cwd=side.root, env=child_env(spec, None, side), timeout_s=SETUP_TIMEOUT_S)
    if res.timed_out or res.returncode != 0:
        raise InfraError(failure(side.name, names, res.stdout + "\n" + res.stderr, where, res.timed_out))


def failure(side: str, names: list[str], output: str, where: list[str], timed_out: bool = False) -> str:
    """Why pip could not add the runner: the conflicting pins as pip said them, or what it could not find."""
    what = f"setup failed on {side}: the suite's runner {', '.join(names)} cannot be added to its venv"
    if timed_out:
        return f"{what}: pip timed out\n{tail(output)}"
    caused = _conflict(output)
    if caused:
        lines = "\n".join(f"    {ln}" for ln in caused)
        return (f"{what} under the project's pins (what the setup installed stays at its version):\n{lines}\n"
                f"Install a version of {' and '.join(names)} that fits them in `setup` "
                "(e.g. `pip install 'pytest<8'`), or change the pin")
    found = re.search(r"No matching distribution found for (\S+)", output)
    if found:
        looked = " ".join(where) or "pip's default index"
        return (f"{what}: pip found no distribution of {found[1]} in the package sources the setup uses "
                f"({looked}); install it in `setup`\n{tail(output, 6)}")
    return f"{what}:\n{tail(output, 12)}"


def _conflict(output: str) -> list[str]:
    """pip's 'The conflict is caused by:' lines, its own constraint wording said as the setup's pin."""
    lines = output.splitlines()
    try:
        start = next(i for i, ln in enumerate(lines) if "The conflict is caused by" in ln) + 1
    except StopIteration:
        return []
    out = []
    for ln in lines[start:]:
        if not ln.strip():
            if out:
                break
            continue
        if ln.strip().startswith(("To fix this", "ERROR")):
            break
        text = ln.strip()
        text = re.sub(r"^The user requested \(constraint\) (.+)$", r"\1 (installed by the setup)", text)
        out.append(text)
    return out
