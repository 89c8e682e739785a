"""What a benchmark's process runs and reads, recorded inside that process (its reach).

In: the repository's checkout and the side's venv (their paths), started before the benchmark's
module is imported. Out (`Recorder.stop`): a plain dict — every code object that started in a file
under them (file, first line, name), the modules imported from them, the files opened for reading
and the directories listed by the step's code, the directories imports search there and the module
names looked up, and `unknown` where the process did something whose reach cannot be recorded: it
started a Python process, a shell, or a program given a path in the checkout, forked, loaded native
code from the checkout, or set a profiler of its own.

How: an audit hook (`open`, `os.listdir`, `os.scandir`, `import`, process starts, `ctypes.dlopen`)
and, for code, `sys.monitoring` where the interpreter has it (each code object reported once, then
disabled) or `sys.setprofile` / `threading.setprofile` (3.10, 3.11). Opens by the import system and
by source readers (linecache, pytest's assert rewriting) of code files are not data: the code's own
units say what ran of it. Standard library only: this runs in the side's own venv.
"""
from __future__ import annotations

import importlib.machinery
import os
import sys
import threading
import types

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "fish", "csh", "tcsh", "busybox"})
CODE_SUFFIXES = (".py", ".pyc", ".pyw", *importlib.machinery.EXTENSION_SUFFIXES)
_NATIVE = tuple(importlib.machinery.EXTENSION_SUFFIXES)
# frames whose reading of a code file is importing or quoting it, not reading data
_CODE_READERS = ("<frozen importlib", "importlib/", "linecache.py", "tokenize.py", "_pytest/assertion/rewrite.py",
                 "zipimport.py", "inspect.py")
# pytest lists each directory down to the test it was given, and takes only its own files there
# (conftest.py, __init__.py, its ini files): the other names do not change what it runs
_COLLECTORS = ("_pytest/main.py", "_pytest/python.py", "_pytest/pathlib.py", "_pytest/nodes.py")
_WATCHED = frozenset({"open", "os.listdir", "os.scandir", "import", "subprocess.Popen", "os.system", "os.exec",
                      "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "ctypes.dlopen", "sqlite3.connect"})
_OWN = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # profopt_ci itself is never the step's
_hooked: list[Recorder] = []  # an audit hook cannot be removed: one per process, forwarding to the live recorder


class Recorder:
    def __init__(self, repo: str, venv: str | None = None) -> None:
        self.repo = os.path.realpath(repo)
        self.venv = os.path.realpath(venv) if venv else None
        self.codes: dict[int, object] = {}  # id → code object (kept alive, so an id is never reused)
        self.opened: set[str] = set()
        self.listed: set[str] = set()
        self.walked: set[str] = set()  # listed by pytest's collection, which reads only its own files there
        self.looked_up: set[str] = set(sys.modules)  # imported before the record: a new process looks them up too
        self.tools: set[str] = set()
        self.unknown: str | None = None
        self._paths: dict[str, str | None] = {}
        self._monitor: int | None = None
        self.active = False

    # ---- what lies under the checkout (or the side's venv) -----------------------------------------
    def inside(self, path: str) -> str | None:
        """The real path when it lies in the checkout or the venv (not profopt's own package), else None."""
        got = self._paths.get(path, "")
        if got != "":
            return got
        if not path or path.startswith("<"):  # <frozen …>, <string>: not a file
            self._paths[path] = None
            return None
        real = os.path.realpath(path)
        keep = real if (_under(real, self.repo) or (self.venv and _under(real, self.venv))) \
            and not _under(real, _OWN) else None
        self._paths[path] = keep
        return keep

    def in_repo(self, path: str) -> bool:
        return _under(os.path.realpath(path), self.repo)

    # ---- recording -----------------------------------------------------------------------------
    def start(self) -> None:
        if not _hooked:
            sys.addaudithook(_audit)
        _hooked[:] = [self]
        mon = getattr(sys, "monitoring", None)
        if mon is not None:
            for tool in range(5, 0, -1):  # a free tool id (0 is the debugger's, 2 the profiler's: keep theirs)
                if tool != 2 and mon.get_tool(tool) is None:
                    mon.use_tool_id(tool, "profopt reach")
                    mon.register_callback(tool, mon.events.PY_START, self._started)
                    mon.set_events(tool, mon.events.PY_START)
                    self._monitor = tool
                    break
        if self._monitor is None:
            sys.setprofile(self._profile)
            threading.setprofile(self._profile)
        self.active = True

    def _started(self, code, offset):
        self.codes[id(code)] = code
        return sys.monitoring.DISABLE

    def _profile(self, frame, event, arg) -> None:
        if event == "call":
            code = frame.f_code
            if id(code) not in self.codes:
                self.codes[id(code)] = code

    def stop(self) -> dict:
        """The record: paths are absolute (the parent makes them relative to the checkout)."""
        self.active = False
        if self._monitor is not None:
            mon = sys.monitoring
            mon.set_events(self._monitor, 0)
            mon.register_callback(self._monitor, mon.events.PY_START, None)
            mon.free_tool_id(self._monitor)
        else:
            if sys.getprofile() != self._profile and self.unknown is None:  # a bound method: equal, not identical
                self.unknown = "profiler"
            sys.setprofile(None)
            threading.setprofile(None)
        code: dict[str, set[tuple[int, str]]] = {}
        for c in list(self.codes.values()):
            path = self.inside(c.co_filename)
            if path is not None:
                code.setdefault(path, set()).add((c.co_firstlineno, c.co_name))
        modules, import_dirs = self._modules()
        self.looked_up.update(sys.modules)
        self._still_open()
        return {
            "code": {p: sorted(v) for p, v in sorted(code.items())},
            "modules": sorted(modules),
            "opened": sorted(self.opened),
            "listed": sorted(self.listed),
            "walked": sorted(self.walked - self.listed),
            "import_dirs": dict(sorted(import_dirs.items())),
            "looked_up": sorted(self.looked_up),
            "tools": sorted(self.tools),
            "unknown": self.unknown,
        }

    def _modules(self) -> tuple[set[str], dict[str, str]]:
        """The modules imported from the checkout or venv, and where imports search in the checkout:
        each sys.path entry there (its modules are top-level names) and each package directory there
        (its modules are `package.name`). A native extension built in the checkout: unknown."""
        modules: set[str] = set()
        dirs: dict[str, str] = {}
        for entry in sys.path:
            real = os.path.realpath(entry or ".")
            if _under(real, self.repo) and os.path.isdir(real):
                dirs.setdefault(real, "")
        for name, mod in list(sys.modules.items()):
            try:  # a module object may be anything (torch._classes answers every attribute)
                path = getattr(mod, "__file__", None)
                found = getattr(mod, "__path__", None)
                paths = list(found) if isinstance(found, (list, tuple)) or type(found).__name__ == "_NamespacePath" \
                    else []
            except Exception:  # noqa: S112 — what a broken module says is not the step's code
                continue
            if isinstance(path, str) and isinstance(mod, types.ModuleType):
                real = self.inside(path)
                if real is not None and os.path.isfile(real):
                    modules.add(real)
                    if real.endswith(_NATIVE) and _under(real, self.repo):
                        self.flag(f"native:{os.path.relpath(real, self.repo)}")
            for d in paths:
                if isinstance(d, str) and _under(os.path.realpath(d), self.repo):
                    dirs[os.path.realpath(d)] = f"{name}."
        return modules, dirs

    def _still_open(self) -> None:
        """Files a native library opened without Python's `open` are seen while they are still open
        or mapped (an HDF5 file, a memory-mapped array)."""
        try:
            fds = os.listdir("/proc/self/fd")
        except OSError:
            return
        for fd in fds:
            try:
                target = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:
                continue
            if target.startswith("/") and not target.endswith(CODE_SUFFIXES):
                real = self.inside(target)
                if real is not None and os.path.isfile(real):
                    self.opened.add(real)
        try:
            with open("/proc/self/maps", encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    parts = line.split(None, 5)
                    if len(parts) == 6 and parts[5].startswith("/") and not parts[5].rstrip().endswith(CODE_SUFFIXES):
                        real = self.inside(parts[5].rstrip())
                        if real is not None:
                            self.opened.add(real)
        except OSError:
            pass

    def flag(self, why: str) -> None:
        """The reach cannot be known (the first cause is kept)."""
        if self.unknown is None:
            self.unknown = why

    # ---- the audit events ----------------------------------------------------------------------
    def audit(self, event: str, args: tuple) -> None:
        if event == "open":
            self._open(args)
        elif event in ("os.listdir", "os.scandir"):
            path = args[0] if args else None
            if isinstance(path, int):
                return
            real = self.inside(_text(path) or ".")
            if real is not None and not _from(_CODE_READERS, 8):
                (self.walked if _from(_COLLECTORS, 6) else self.listed).add(real)
        elif event == "import":
            if args and isinstance(args[0], str):
                self.looked_up.add(args[0])
        elif event == "subprocess.Popen":
            executable, argv, cwd = args[0], args[1], args[2]
            self._process(executable, argv, cwd)
        elif event in ("os.posix_spawn", "os.spawn"):
            path, argv = (args[0], args[1]) if event == "os.posix_spawn" else (args[1], args[2])
            self._process(path, argv, None)
        elif event in ("os.system", "os.exec"):
            self.flag("process:" + ("sh" if event == "os.system" else os.path.basename(_text(args[0]) or "?")))
        elif event in ("os.fork", "os.forkpty"):
            self.flag("fork")
        elif event == "ctypes.dlopen":
            name = _text(args[0]) if args else None
            if name and os.sep in name and self.in_repo(name):
                self.flag(f"native:{os.path.relpath(os.path.realpath(name), self.repo)}")
        elif event == "sqlite3.connect":
            name = _text(args[0]) if args else None
            if name and name != ":memory:":
                real = self.inside(name)
                if real is not None:
                    self.opened.add(real)

    def _open(self, args: tuple) -> None:
        path = _text(args[0]) if args else None
        if path is None:
            return
        mode, flags = (args[1] if len(args) > 1 else None), (args[2] if len(args) > 2 else 0)
        if isinstance(mode, str):
            reading = "r" in mode or "+" in mode
        else:
            reading = isinstance(flags, int) and (flags & os.O_ACCMODE) != os.O_WRONLY
        if not reading:
            return
        real = self.inside(path)
        if real is None or os.path.isdir(real):
            return
        if real.endswith(CODE_SUFFIXES) and _from(_CODE_READERS, 12):
            return
        self.opened.add(real)

    def _process(self, executable, argv, cwd) -> None:
        """A process the step starts: a Python process, a shell, or a program that is given a path in
        the checkout (or runs from it) may run the checkout's code unseen; a system tool (ldconfig
        for ctypes.util.find_library, uname) does not."""
        args = [argv] if isinstance(argv, (str, bytes)) else list(argv or ())
        program = _text(executable) or (_text(args[0]) if args else "") or "?"
        name = os.path.basename(program)
        where = _text(cwd) or os.getcwd()
        mine = os.path.basename(sys.executable)
        if name.startswith("python") or name == mine or name in SHELLS:
            self.flag(f"process:{name}")
            return
        for a in [program, *(_text(x) for x in args[1:])]:
            if not a:
                continue
            full = a if os.path.isabs(a) else os.path.join(where, a)
            if (os.path.isabs(a) or os.path.exists(full)) and self.in_repo(full):
                self.flag(f"process:{name}")
                return
        self.tools.add(name)


def _audit(event: str, args: tuple) -> None:
    if event not in _WATCHED or not _hooked:
        return
    rec = _hooked[0]
    if rec.active:
        rec.active = False  # what the hook itself calls (realpath, isdir) is not the step's
        try:
            rec.audit(event, args)
        except Exception:  # noqa: S110 — a record must never break the step it watches
            pass
        finally:
            rec.active = True


_HERE = __file__


def _from(markers: tuple[str, ...], depth: int) -> bool:
    """Whether one of the `depth` frames above the audited call is in a file matching `markers`."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == _HERE:  # the hook's own frames
        frame = frame.f_back
    for _ in range(depth):
        if frame is None:
            return False
        name = frame.f_code.co_filename
        if any(m in name for m in markers):
            return True
        frame = frame.f_back
    return False


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _text(value) -> str | None:
    if value is None or isinstance(value, int):
        return None
    try:
        return os.fsdecode(os.fspath(value))
    except TypeError:
        return None


def run_steps(step, *, required: int, at_least: int, min_ms: float, max_ms: float) -> int:
    """The record's steps, each called as the timed loop calls it (a prepared step gets its untimed
    setup): `required` of them always (a quality pass's), and besides at least `at_least` steps and
    `min_ms`, unless `max_ms` passed first (a slow step)."""
    import time

    from profopt_ci.harness.timing import _time_loops

    start, n = time.perf_counter(), 0
    while True:
        _time_loops(step, 1, None)
        n += 1
        spent = (time.perf_counter() - start) * 1000
        if n >= required and ((n >= at_least and spent >= min_ms) or spent >= max_ms):
            return n
