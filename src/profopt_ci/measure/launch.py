"""Run one command and report its own wall time and rusage as JSON: `python -I launch.py OUT [--cpus 0,1] -- ARGV…`.

In: the output path, an optional CPU list and the command's argv. Out: a JSON file with the
exit status, wall ns, CPU seconds and the command's own peak RSS.

Why a launcher: Linux carries a process's resident set at exec into the child's `ru_maxrss`, so a
command forked straight from profopt (tens of MB) would report profopt's memory, not its own. This
file is run by a bare interpreter (`-I`, standard library only, a few MB), so the command's peak RSS
is its own (floored at the launcher's size), and the wall time excludes interpreter start-up.
"""
import json
import os
import sys
import time


def main() -> int:
    out_path, sep, *argv = sys.argv[1:]
    if sep == "--cpus" and len(argv) > 1:  # lockstep: pinned before the fork, so the command inherits it
        os.sched_setaffinity(0, [int(c) for c in argv[0].split(",")])
        sep, argv = argv[1], argv[2:]
    if sep != "--" or not argv:
        print("usage: launch.py OUT -- ARGV...", file=sys.stderr)
        return 2
    start = time.perf_counter_ns()
    pid = os.fork()
    if pid == 0:
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            print(f"cannot run {argv[0]}: {exc}", file=sys.stderr)
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter_ns() - start
    code = os.waitstatus_to_exitcode(status)
    with open(out_path, "w") as fh:
        json.dump({"returncode": code, "wall_ns": wall, "cpu_s": usage.ru_utime + usage.ru_stime,
                   "maxrss_kb": usage.ru_maxrss}, fh)
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())
