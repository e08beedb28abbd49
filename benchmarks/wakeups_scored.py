"""serve's scored case, counted in wake-ups: context switches and syscalls per scored request.

    .venv/bin/python benchmarks/wakeups_scored.py [--rate 500] [--duration 6]
        [--baseline OLD/src] [--strace] [--floor] [--repeats 3]

Starts a real `scorewatch serve` with `bench_floor.py`'s `scored` configuration (one
content-similarity scorer sampling every call, SQLite sink, httptools + uvloop, one worker),
offers it the open-loop load of `openloop.py` (after a warm-up second, not counted), waits until
its queue is empty, and reports, per 2xx answer, each thread's CPU and its voluntary and
involuntary context switches (from /proc/PID/task, so they need no tracer), and with `--strace`
(strace attached to the whole process for the load) the syscalls per 2xx by name. Context
switches and syscalls are counts: they move less with the machine's load than CPU does (though
a busy machine batches requests into fewer wake-ups: compare interleaved rounds, `--repeats`,
medians printed last). `--baseline DIR` measures serve from another source tree too, in the
same run; `--floor`, the floor app (`floor_apps.py`) under the same load. The HTTP loop is the
main thread; the scoring loop is told by its CPU (Python 3.11 does not name threads for the
kernel): the busiest of the others.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _common  # noqa: F401  (sets the environment before scorewatch is imported)
from bench_floor import BODY, CASES, _idle, _start, _stop
from openloop import run_open_loop


def _threads(pid: int) -> dict[int, tuple[float, int, int]]:
    """CPU seconds, voluntary and involuntary context switches of each thread of `pid`."""
    import os

    tick = os.sysconf("SC_CLK_TCK")
    seen: dict[int, tuple[float, int, int]] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            status = dict(line.split(":", 1) for line in (task / "status").read_text().splitlines())
        except OSError:
            continue
        seen[int(task.name)] = (
            (int(fields[11]) + int(fields[12])) / tick,
            int(status["voluntary_ctxt_switches"]),
            int(status["nonvoluntary_ctxt_switches"]),
        )
    return seen


def _strace_counts(path: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in path.read_text().splitlines():
        parts = line.split()
        # % time, seconds, usecs/call, calls, [errors], syscall
        if len(parts) >= 5 and parts[0][0].isdigit() and not line.startswith("100.00"):
            counts[parts[-1]] = int(parts[3])
    return counts


def measure(kind: str, args: argparse.Namespace) -> dict[str, Any]:
    case = CASES["scored"]
    with tempfile.TemporaryDirectory(prefix=f"wakeups-{kind}-") as folder:
        process, url = _start(kind, case, Path(folder), args.baseline)
        try:
            time.sleep(1.0)
            # Warm-up: the first requests import, compile and open what later ones reuse.
            run_open_loop(f"{url}/v1/scores", [BODY], rate=args.rate, duration=1.0)
            if kind != "floor":
                _idle(url, process.pid)
            before = _threads(process.pid)
            tracer = None
            trace_file = Path(folder) / "strace.txt"
            if args.strace:
                tracer = subprocess.Popen(
                    ["strace", "-f", "-c", "-o", str(trace_file), "-p", str(process.pid)],
                    stderr=subprocess.DEVNULL,
                )
                time.sleep(0.5)
            load = run_open_loop(f"{url}/v1/scores", [BODY], rate=args.rate, duration=args.duration)
            if kind != "floor":
                _idle(url, process.pid)
            if tracer is not None:
                tracer.send_signal(2)
                tracer.wait(30)
            after = _threads(process.pid)
        finally:
            _stop(process)
        accepted = max(1, load["accepted_2xx"])
        threads = []
        for tid, (cpu, vol, invol) in after.items():
            cpu0, vol0, invol0 = before.get(tid, (0.0, 0, 0))
            if cpu - cpu0 > 0 or vol - vol0 or invol - invol0:
                threads.append(
                    {
                        "tid": tid,
                        "cpu_us": round((cpu - cpu0) / accepted * 1e6, 1),
                        "voluntary": round((vol - vol0) / accepted, 3),
                        "involuntary": round((invol - invol0) / accepted, 3),
                    }
                )
        # The HTTP loop (the main thread) first, then the others by CPU: the scoring loop.
        threads.sort(key=lambda t: (t["tid"] != process.pid, -t["cpu_us"]))
        result: dict[str, Any] = {
            "kind": kind,
            "accepted_2xx": load["accepted_2xx"],
            "switches_per_2xx": round(sum(t["voluntary"] + t["involuntary"] for t in threads), 3),
            "threads": threads,
        }
        if tracer is not None:
            counts = _strace_counts(trace_file)
            result["syscalls_per_2xx"] = round(sum(counts.values()) / accepted, 2)
            result["syscalls"] = {
                name: round(n / accepted, 3)
                for name, n in sorted(counts.items(), key=lambda kv: -kv[1])
                if n / accepted >= 0.01
            }
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=500.0)
    parser.add_argument("--duration", type=float, default=6.0)
    parser.add_argument("--baseline", default=None, help="another tree's src, measured too")
    parser.add_argument("--strace", action="store_true", help="count syscalls (strace -f -c)")
    parser.add_argument("--floor", action="store_true", help="the floor app measured too")
    parser.add_argument("--repeats", type=int, default=1, help="rounds, the sides interleaved")
    args = parser.parse_args()
    kinds = ["serve"] + (["baseline"] if args.baseline else []) + (["floor"] if args.floor else [])
    runs: dict[str, list[dict[str, Any]]] = {kind: [] for kind in kinds}
    for _ in range(args.repeats):
        for kind in kinds:
            result = measure(kind, args)
            runs[kind].append(result)
            print(json.dumps(result), file=sys.stderr)
    print(json.dumps({kind: _medians(results) for kind, results in runs.items()}, indent=1))


def _medians(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Per 2xx, the medians over the rounds: switches of the HTTP loop, of the scoring loop and
    of all threads, syscalls by name."""
    summary: dict[str, Any] = {
        "switches": statistics.median(r["switches_per_2xx"] for r in results)
    }
    for rank, name in enumerate(("http", "scoring")):
        for key in ("cpu_us", "voluntary", "involuntary"):
            values = [r["threads"][rank][key] for r in results if len(r["threads"]) > rank]
            if values:
                summary[f"{name}_{key}"] = statistics.median(values)
    if "syscalls" in results[0]:
        summary["syscalls"] = statistics.median(r["syscalls_per_2xx"] for r in results)
        names = {name for r in results for name in r["syscalls"]}
        by_name = {
            name: statistics.median(r["syscalls"].get(name, 0.0) for r in results) for name in names
        }
        summary["by_syscall"] = dict(sorted(by_name.items(), key=lambda kv: -kv[1]))
    return summary


if __name__ == "__main__":
    main()
