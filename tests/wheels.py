"""Real wheels for a side's setup venv, made without a network: pure-Python distributions already
installed in profopt's own environment packed back into wheels (pytest and what it requires), and a
tiny pytest plugin of the test's own. The setup then runs a real `pip install --no-index
--find-links DIR …`, offline and in seconds."""
from __future__ import annotations

import base64
import hashlib
import zipfile
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _write_wheel(dest: Path, dist: str, version: str, files: dict[str, bytes], info: dict[str, bytes]) -> Path:
    stem = f"{canonicalize_name(dist).replace('-', '_')}-{version}"
    info_dir = f"{stem}.dist-info"
    info = {**info, "WHEEL": b"Wheel-Version: 1.0\nGenerator: profopt-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    entries = {**files, **{f"{info_dir}/{k}": v for k, v in info.items()}}
    record = [_record_line(k, v) for k, v in entries.items()] + [f"{info_dir}/RECORD,,"]
    path = dest / f"{stem}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
        zf.writestr(f"{info_dir}/RECORD", "\n".join(record) + "\n")
    return path


def installed_wheel(dist_name: str, dest: Path) -> Path:
    """The installed distribution `dist_name` (pure Python) packed as a wheel in `dest`."""
    dist = metadata.distribution(dist_name)
    base = Path(dist.locate_file(""))
    files, info = {}, {}
    for f in dist.files or ():
        rel = str(f)
        if rel.startswith("..") or "__pycache__" in rel or rel.endswith(".pyc"):
            continue
        src = base / rel
        if not src.is_file():
            continue
        top = rel.split("/")[0]
        if top.endswith(".dist-info"):
            if rel.split("/")[-1] in ("METADATA", "entry_points.txt", "top_level.txt") and rel.count("/") == 1:
                info[rel.split("/")[-1]] = src.read_bytes()
            continue
        files[rel] = src.read_bytes()
    return _write_wheel(dest, dist.metadata["Name"], dist.version, files, info)


def with_requirements(dist_name: str, dest: Path) -> list[Path]:
    """Wheels of `dist_name` and of every distribution it requires (markers as this interpreter reads them)."""
    done: dict[str, Path] = {}
    todo = [dist_name]
    while todo:
        name = canonicalize_name(todo.pop())
        if name in done:
            continue
        done[name] = installed_wheel(name, dest)
        for text in metadata.requires(name) or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return list(done.values())


def plugin_wheel(dest: Path, name: str, module: str, source: str, version: str = "0.1") -> Path:
    """A pytest plugin distribution: one module, registered under the `pytest11` entry point."""
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    entry = f"[pytest11]\n{module} = {module}\n".encode()
    return _write_wheel(dest, name, version, {f"{module}.py": source.encode()},
                        {"METADATA": meta, "entry_points.txt": entry, "top_level.txt": f"{module}\n".encode()})


def module_wheel(dest: Path, name: str, module: str, source: str, version: str = "0.1") -> Path:
    """A plain one-module distribution (no entry points)."""
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    return _write_wheel(dest, name, version, {f"{module}.py": source.encode()},
                        {"METADATA": meta, "top_level.txt": f"{module}\n".encode()})
