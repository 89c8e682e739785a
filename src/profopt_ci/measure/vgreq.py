"""Valgrind client requests from Python, with no compiler: the documented instruction sequence
of valgrind.h, placed in an executable page and called through ctypes.

In: a request code and up to five word-sized arguments. Out: valgrind's answer, or the default
(0) when the process does not run under valgrind, where the sequence is a no-op (rotations that
add up to whole turns, and an `xchg`/`orr` of a register with itself).

Why this way, of the three that work on valgrind 3.19:
- a C extension needs a compiler at install time, or wheels for every platform;
- `--toggle-collect` on a C frame Python calls back through (libc `qsort_r` with a Python
  comparator) works, but only toggles collection: no ZERO_STATS / DUMP_STATS_AT, so N and 2N
  steps could not be told apart in one process;
- the instruction sequence is fixed by valgrind's ABI (valgrind.h, "magic sequence"), a few dozen
  bytes per architecture, and works from a plain `pip install`.
Stdlib only: this module is imported inside the measured worker.

The code goes into a memfd mapped read+execute (never writable and executable at once); on
aarch64 a fresh executable file mapping is also what makes the kernel synchronise the instruction
cache with what was written. Where memfd is refused, an anonymous page is written and then
`mprotect`ed to read+execute.
"""
from __future__ import annotations

import ctypes
import mmap
import os
import platform

RUNNING_ON_VALGRIND = 0x1001
_CT = (ord("C") << 24) | (ord("T") << 16)  # VG_USERREQ_TOOL_BASE('C','T'), callgrind.h
DUMP_STATS = _CT + 0
ZERO_STATS = _CT + 1
TOGGLE_COLLECT = _CT + 2
DUMP_STATS_AT = _CT + 3
START_INSTRUMENTATION = _CT + 4
STOP_INSTRUMENTATION = _CT + 5

# uint64 request(uint64 *args /* rdi | x0 */, uint64 default /* rsi | x1 */)
_X86_64 = bytes.fromhex(
    "4889f8"  # mov rax, rdi        ; valgrind reads the argument block at rax
    "4889f2"  # mov rdx, rsi        ; and answers in rdx (the default stays there natively)
    "48c1c703" "48c1c70d" "48c1c73d" "48c1c733"  # rol rdi, 3 / 13 / 61 / 51: the preamble
    "4887db"  # xchg rbx, rbx       ; "RDX = client_request(RAX)"
    "4889d0"  # mov rax, rdx
    "c3"      # ret
)
_AARCH64_WORDS = (
    0xAA0003E4,  # mov x4, x0          ; the argument block
    0xAA0103E3,  # mov x3, x1          ; the default, and the answer
    0x93CC0D8C, 0x93CC358C, 0x93CCCD8C, 0x93CCF58C,  # ror x12, x12, #3 / 13 / 51 / 61
    0xAA0A014A,  # orr x10, x10, x10   ; "X3 = client_request(X4)"
    0xAA0303E0,  # mov x0, x3
    0xD65F03C0,  # ret
)
_AARCH64 = b"".join(w.to_bytes(4, "little") for w in _AARCH64_WORDS)
CODE = {"x86_64": _X86_64, "amd64": _X86_64, "aarch64": _AARCH64, "arm64": _AARCH64}


class Unsupported(RuntimeError):
    """Client requests cannot be issued on this platform."""


_request = None
_keep: list[object] = []


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return libc


def _map_code(code: bytes) -> int:
    """The address of a read+execute page holding `code`."""
    size = mmap.PAGESIZE
    libc = _libc()
    failed = ctypes.c_void_p(-1).value
    try:
        fd = os.memfd_create("profopt-vgreq")
        try:
            os.write(fd, code.ljust(size, b"\0"))
            addr = libc.mmap(None, size, mmap.PROT_READ | mmap.PROT_EXEC, mmap.MAP_PRIVATE, fd, 0)
        finally:
            os.close(fd)
        if addr not in (None, failed):
            return addr
    except (AttributeError, OSError):
        pass
    page = mmap.mmap(-1, size, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    page.write(code)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(page))
    if libc.mprotect(addr, size, mmap.PROT_READ | mmap.PROT_EXEC) != 0:
        raise Unsupported(f"cannot make a page executable: {os.strerror(ctypes.get_errno())}")
    _keep.append(page)
    return addr


def _fn():
    global _request
    if _request is None:
        machine = platform.machine().lower()
        if os.name != "posix" or platform.system() != "Linux" or machine not in CODE:
            raise Unsupported(f"valgrind client requests need Linux on x86-64 or aarch64, not "
                              f"{platform.system()} {platform.machine()}")
        proto = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64), ctypes.c_uint64)
        _request = proto(_map_code(CODE[machine]))
    return _request


def request(code: int, *args: int, default: int = 0) -> int:
    """One client request; `args` are words (ints or addresses), at most five."""
    block = (ctypes.c_uint64 * 6)(code, *(list(args) + [0] * (5 - len(args))))
    return int(_fn()(block, default))


def running_on_valgrind() -> bool:
    return request(RUNNING_ON_VALGRIND) != 0


def dump_stats_at(label: str) -> None:
    """Write the counts since the last zero to a new dump file whose `desc: Trigger` names `label`."""
    text = ctypes.create_string_buffer(label.encode())
    request(DUMP_STATS_AT, ctypes.addressof(text))
