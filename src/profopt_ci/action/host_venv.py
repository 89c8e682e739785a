"""The runner's own profopt: one venv per (action sources, Python), kept in the runner's tool cache.

In: the action's checkout (pyproject.toml, src/), the Python running this file (the `python`
input), the cache folder (`RUNNER_TOOL_CACHE`, else `RUNNER_TEMP`). Out: the venv's `python3` on
stdout; what it did (reused, installed) on stderr; exit 0, or 1 with pip's tail when the install
failed.

Why: `pip install` of profopt and its dependencies was most of every action run (docs/action.md). A
self-hosted runner keeps its tool cache from job to job, so a venv found there under the hash of
what it was installed from is used as it is; a change to the sources or to the Python makes a new
one. An flock per venv lets two runners that share the cache install it once; an install that died
half-way has no ready marker and is redone. At most KEEP venvs stay: older ones are removed once no
run holds them.

action.yml runs this file as a script before profopt is installed: the standard library only.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

KEEP = 3
READY = ".profopt-ready"
SALT = b"profopt-host-venv-v1\0"


def source_files(root: Path, extra: tuple[str, ...] = ()) -> list[Path]:
    """pyproject.toml, `extra` and every file under src/, bytecode and build metadata left out:
    what an install (or an image build, action/image.py) is made from."""
    files = [root / "pyproject.toml", *(root / e for e in extra)]
    src = root / "src"
    if src.is_dir():
        files += sorted(p for p in src.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                        and not p.name.endswith(".pyc") and ".egg-info" not in str(p.relative_to(root)))
    return [p for p in files if p.is_file()]


def source_key(root: Path, python: str = sys.executable, version: str = sys.version) -> str:
    """16 hex digits of the sources' hash, the interpreter's path and its version."""
    h = hashlib.sha256(SALT + os.path.realpath(python).encode() + b"\0" + version.encode() + b"\0")
    for path in source_files(root):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _log(message: str) -> None:
    print(f"profopt: {message}", file=sys.stderr, flush=True)


def _install(venv: Path, action_path: Path) -> None:
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    proc = subprocess.run([str(venv / "bin" / "python3"), "-m", "pip", "install", "--quiet",
                           "--disable-pip-version-check", str(action_path)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"pip install {action_path} exited {proc.returncode}:\n{proc.stdout[-3000:]}")


def _prune(home: Path, keep: Path) -> None:
    """Remove all but the KEEP newest ready venvs, each only while nobody holds its lock."""
    ready = sorted((p for p in home.iterdir() if (p / READY).is_file()), key=lambda p: (p / READY).stat().st_mtime,
                   reverse=True)
    for old in ready[KEEP:]:
        if old == keep:
            continue
        with open(home / f"{old.name}.lock", "a") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # in use by another run
            shutil.rmtree(old, ignore_errors=True)


def ensure(action_path: Path, cache: Path) -> Path:
    """The python3 of a ready venv for `action_path` under `cache`, installed now if need be."""
    home = cache / "profopt-host"
    home.mkdir(parents=True, exist_ok=True)
    key = source_key(action_path)
    venv = home / key
    python = venv / "bin" / "python3"
    with open(home / f"{key}.lock", "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # released when the file closes, or when we die
        if (venv / READY).is_file() and python.is_file():
            os.utime(venv / READY)  # recently used: the last to be pruned
            _log(f"reusing the runner's profopt venv {venv} (sources and Python unchanged)")
        else:
            started = time.monotonic()
            _log(f"installing profopt into {venv}")
            _install(venv, action_path)
            (venv / READY).write_text(key + "\n")
            _log(f"installed in {time.monotonic() - started:.1f} s; later runs on this runner reuse it")
        _prune(home, venv)
    return python


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python3 host_venv.py ACTION_PATH  (cache: $RUNNER_TOOL_CACHE, else $RUNNER_TEMP)",
              file=sys.stderr)
        return 2
    caches = [Path(c) for c in (os.environ.get("RUNNER_TOOL_CACHE"), os.environ.get("RUNNER_TEMP")) if c]
    if not caches:
        print("profopt: neither RUNNER_TOOL_CACHE nor RUNNER_TEMP is set", file=sys.stderr)
        return 2
    error: Exception | None = None
    for cache in caches:
        try:
            print(ensure(Path(args[0]).resolve(), cache))
            return 0
        except OSError as exc:  # a tool cache this user may not write, a full disk: the next place
            error = exc
            _log(f"cannot use {cache}: {exc}")
        except (RuntimeError, subprocess.CalledProcessError) as exc:
            error = exc
            break
    print(f"profopt: cannot install profopt on the runner: {error}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
