"""serve against its floor: each path's cost as a ratio to the same stack doing the least.

    .venv/bin/python benchmarks/bench_floor.py [--repeats 3] [--duration 5]
        [--cases unsampled,unsampled-h11,unsampled-2w,scored] [--baseline OLD/src] [-o result.json]

For every case, in one run and back to back (floor, then serve, then again, `--repeats`
times): the floor app (`floor_apps.py`, same HTTP parser and loop, same worker count) and a
real `python -m scorewatch serve`, each offered the same open-loop load (`openloop.py`), and
the CPU of the server's whole process tree counted per 2xx answer. Two rates per case: a
moderate one (`--rate`, under every server's capacity: CPU per request) and an overload
(`--overload`: accepted per second, the capacity). Medians over the repeats; the ratios are of
medians taken in the same run, so a busier machine moves both sides. `--baseline DIR` adds a
third side, serve run from another source tree (`git archive` of the code before a change,
its `src`), so a change is measured before and after in the same run.

Cases:
- `unsampled`: `POST /v1/scores`, nothing sampled (one scorer, sampling 0), httptools + uvloop,
  one worker;
- `unsampled-h11`: the same on h11 + asyncio (the plain stack, and the floor on it);
- `unsampled-2w`: the same with `--workers 2` (the floor forks 2 processes on its socket);
- `scored`: one model-free scorer (content similarity) on every request, SQLite sink, one
  worker; serve's CPU includes scoring the queue empty after the load;
- `traces`: `POST /v1/traces`, OTLP protobuf batches of 512 spans (whole runs of an agent
  instrumented by the official GenAI instrumentation, 64 variants with distinct trace ids),
  nothing scored; the floor decodes the protobuf. Reported per span as well.
- `traces-scored`: the same payload with a model-free scorer that reads the extracted run
  (tool-call accuracy: did the agent call `lookup_order`) on every agent span, SQLite sink;
  serve's CPU includes extracting and scoring every run, until its queue is empty.

In both trace cases serve's `quiet_period_s` is 0.5 s and `parent_wait_s` 1 s (defaults 5 and
60), and serve's CPU is counted from the load's start until the quiet period has passed and its
CPU stops moving: the runs are extracted (and scored) within the measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _common
from floor_report import markdown, markdown_before_after
from openloop import process_tree_cpu, run_open_loop

BENCH = Path(__file__).resolve().parent

CONFIG = """\
[server]
log_level = "warning"
http = "{http}"
shutdown_timeout = 120

[[scorers]]
id = "similarity"
kind = "{kind}"
sampling = {sampling}
{options}

[live]
max_queue = 100000

[sinks]
sqlite = "scores.db"
{extra}"""

CASES: dict[str, dict[str, Any]] = {
    "unsampled": {"http": "httptools", "workers": 1, "sampling": 0.0},
    "unsampled-h11": {"http": "h11", "workers": 1, "sampling": 0.0},
    "unsampled-2w": {"http": "httptools", "workers": 2, "sampling": 0.0},
    "scored": {"http": "httptools", "workers": 1, "sampling": 1.0},
    "traces": {
        "http": "httptools",
        "workers": 1,
        "sampling": 0.0,
        "app": "traces",
        "rates": (4.0, 60.0),  # batches of 512 spans per second: moderate, overload
    },
    "traces-scored": {
        "http": "httptools",
        "workers": 1,
        "sampling": 1.0,
        "app": "traces",
        "kind": "tool-call-accuracy-code",
        "options": 'options = { expected_tool = "lookup_order" }',
        "rates": (4.0, 60.0),
    },
}
TRACES_TABLE = "\n[traces]\n\n[traces.buffer]\nquiet_period_s = 0.5\nparent_wait_s = 1.0\n"
# Seconds after the load until every run is out of the buffer: quiet period, parent wait,
# assembly interval, with room.
TRACES_SETTLE_S = 2.5
SPANS_PER_BATCH = 512

BODY = json.dumps(
    {
        "input": "What is our refund policy for items bought in a sale?",
        "output": "Sale items can be refunded within 30 days with the receipt.",
        "target": "support-bot",
    }
).encode()


def _traces_bodies(variants: int = 64) -> tuple[list[bytes], int]:
    """Protobuf batches of whole agent runs, about SPANS_PER_BATCH spans each; the variants
    differ in their trace ids only."""
    sys.path.insert(0, str(BENCH.parent / "tests"))
    from traces_support import order_agent_spans, protobuf_request

    spans = order_agent_spans(1)
    runs = -(-SPANS_PER_BATCH // len(spans))
    request = protobuf_request(order_agent_spans(runs))
    count = sum(len(s.spans) for rs in request.resource_spans for s in rs.scope_spans)
    bodies = []
    for variant in range(variants):
        for resource_spans in request.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    span.trace_id = variant.to_bytes(2, "big") + span.trace_id[2:]
        bodies.append(request.SerializeToString())
    return bodies, count


def _wait_url(
    stderr: Path, process: subprocess.Popen[bytes], marker: str, timeout: float = 180.0
) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = stderr.read_text(errors="replace")
        for line in text.splitlines():
            if marker in line:
                return "http://" + line.split("http://", 1)[1].split()[0]
        if process.poll() is not None:
            raise RuntimeError(f"server exited:\n{text}")
        time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"server did not start:\n{stderr.read_text(errors='replace')}")


def spawn_for_profile(
    command: list[str], directory: Path, src: Path, callgrind: Path | None, *extra: str
) -> tuple[subprocess.Popen[bytes], Path]:
    """`command` started in `directory` with scorewatch from `src` (`PYTHONHASHSEED=0`), under
    callgrind writing `callgrind` (all threads apart; `extra` valgrind options) when given: the
    process and the file its stderr goes to (for `_wait_url`). The profile scripts' launch."""
    if callgrind is not None:
        command = [
            "valgrind", "--tool=callgrind", "--separate-threads=yes", *extra,
            f"--callgrind-out-file={callgrind}",
            *command,
        ]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(src.resolve()), PYTHONHASHSEED="0")
    stderr = directory / "serve.stderr"
    with stderr.open("wb") as sink:
        process = subprocess.Popen(
            command, cwd=directory, stdout=subprocess.DEVNULL, stderr=sink, env=env
        )
    return process, stderr


def _start(
    kind: str, case: dict[str, Any], directory: Path, baseline: str | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    stderr = directory / f"{kind}.stderr"
    if kind == "floor":
        loop = "uvloop" if case["http"] == "httptools" else "asyncio"
        command = [
            sys.executable, str(BENCH / "floor_apps.py"), case.get("app", "scores"),
            "--http", case["http"],
            "--loop", loop, "--workers", str(case["workers"]),
        ]  # fmt: skip
        marker = "floor: listening on"
    else:
        extra = TRACES_TABLE if case.get("app") == "traces" else ""
        (directory / "scorewatch.toml").write_text(
            CONFIG.format(
                http=case["http"],
                sampling=case["sampling"],
                kind=case.get("kind", "content-similarity"),
                options=case.get("options", ""),
                extra=extra,
            )
        )
        command = [
            sys.executable, "-m", "scorewatch", "serve", "--config", "scorewatch.toml",
            "--listen", "127.0.0.1:0", "--workers", str(case["workers"]),
        ]  # fmt: skip
        marker = "scorewatch serve: listening on"
    env = dict(os.environ)
    if env.get("PYTHONPATH"):
        # serve runs in a temporary directory: `PYTHONPATH=src` must still name this tree's
        # sources, not fall through to the installed package (another tree).
        env["PYTHONPATH"] = os.pathsep.join(
            str(Path(entry).resolve()) for entry in env["PYTHONPATH"].split(os.pathsep) if entry
        )
    if kind == "baseline":  # serve from another source tree (the code before a change)
        env["PYTHONPATH"] = str(Path(str(baseline)).resolve())
    with stderr.open("wb") as sink:
        process = subprocess.Popen(
            command, cwd=directory, stdout=subprocess.DEVNULL, stderr=sink, env=env
        )
    return process, _wait_url(stderr, process, marker)


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(120)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


def _idle(url: str, pid: int) -> None:
    import httpx

    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        stats = httpx.get(f"{url}/v1/stats", timeout=30).json()
        if stats["queued"] == 0 and stats["in_flight"] == 0:
            return
        time.sleep(0.2)
    raise RuntimeError("serve did not drain")


def _settle(pid: int, result: dict[str, Any], cpu_before: float, started: float) -> None:
    """Wait until the server's CPU stops moving (work it does after answering: the trace
    intake assembles and extracts runs later), then count that CPU in `result` too."""
    deadline = time.monotonic() + 120
    last = process_tree_cpu(pid)
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = process_tree_cpu(pid)
        if now - last < 0.02:
            break
        last = now
    cpu = process_tree_cpu(pid) - cpu_before
    result["server_cpu_s"] = round(cpu, 3)
    result["settled_wall_s"] = round(time.perf_counter() - started, 2)
    if result["accepted_2xx"]:
        result["server_cpu_us_per_2xx"] = round(cpu / result["accepted_2xx"] * 1e6, 1)
    if result["answered"]:
        result["server_cpu_us_per_answer"] = round(cpu / result["answered"] * 1e6, 1)


def _measure(
    kind: str, case: dict[str, Any], args: argparse.Namespace, bodies: list[bytes]
) -> dict[str, Any]:
    traces = case.get("app") == "traces"
    rate, overload_rate = case.get("rates", (args.rate, args.overload))
    content_type = "application/x-protobuf" if traces else "application/json"
    with tempfile.TemporaryDirectory(prefix=f"bench-floor-{kind}-") as folder:
        process, url = _start(kind, case, Path(folder), args.baseline)
        try:
            time.sleep(1.0)  # let start-up work (imports, first connections) settle
            # What the server burns doing nothing (timers, periodic readers), per second.
            idle_before, idle_started = process_tree_cpu(process.pid), time.perf_counter()
            time.sleep(args.idle)
            idle = (process_tree_cpu(process.pid) - idle_before) / (
                time.perf_counter() - idle_started
            )
            target = f"{url}/v1/traces" if traces else f"{url}/v1/scores"
            cpu_before, started = process_tree_cpu(process.pid), time.perf_counter()
            moderate = run_open_loop(
                target,
                bodies,
                rate=rate,
                duration=args.duration,
                pid=process.pid,
                content_type=content_type,
            )
            if kind != "floor" and traces:
                time.sleep(TRACES_SETTLE_S)  # the runs leave the buffer, are extracted
                if case["sampling"] > 0:
                    _idle(url, process.pid)
                _settle(process.pid, moderate, cpu_before, started)
                moderate["includes_scoring"] = case["sampling"] > 0
            elif kind != "floor" and case["sampling"] > 0:
                _idle(url, process.pid)
                cpu = process_tree_cpu(process.pid) - cpu_before
                moderate["server_cpu_us_per_2xx"] = round(
                    cpu / max(1, moderate["accepted_2xx"]) * 1e6, 1
                )
                moderate["server_cpu_s"] = round(cpu, 3)
                moderate["wall_s"] = round(time.perf_counter() - started, 2)
                moderate["includes_scoring"] = True
            elif traces:
                _settle(process.pid, moderate, cpu_before, started)
            overload = None
            if case["sampling"] == 0:
                cpu_before, started = process_tree_cpu(process.pid), time.perf_counter()
                overload = run_open_loop(
                    target,
                    bodies,
                    rate=overload_rate * case["workers"],
                    duration=args.duration,
                    pid=process.pid,
                    content_type=content_type,
                )
                if traces:
                    if kind != "floor":
                        time.sleep(TRACES_SETTLE_S)
                    _settle(process.pid, overload, cpu_before, started)
        finally:
            _stop(process)
    moderate["idle_cores"] = round(idle, 4)
    if moderate["accepted_2xx"]:
        # The same less the idle burn over the run: the cost of the requests themselves.
        net = moderate["server_cpu_s"] - idle * moderate["wall_s"]
        moderate["server_net_cpu_us_per_2xx"] = round(net / moderate["accepted_2xx"] * 1e6, 1)
    return {"moderate": moderate, "overload": overload}


def _median(runs: list[dict[str, Any]], phase: str, key: str) -> float | None:
    values = [r[phase][key] for r in runs if r[phase] is not None and key in r[phase]]
    return round(statistics.median(values), 1) if values else None


def _summarize(
    case: dict[str, Any], runs: dict[str, list[dict[str, Any]]], spans: int
) -> dict[str, Any]:
    """Medians per side and their ratios (also recomputed from a saved report's runs)."""
    for phase in ("moderate", "overload"):
        for run in runs["floor"] + runs["serve"]:
            result = run[phase]
            if result is not None and "answered_per_s" not in result and result["wall_s"]:
                result["answered_per_s"] = round(result["answered"] / result["wall_s"], 1)
    summary: dict[str, Any] = {"case": case}
    if spans > 1:
        summary["spans_per_request"] = spans
    for kind in runs:
        summary[kind] = {
            "cpu_us_per_2xx": _median(runs[kind], "moderate", "server_cpu_us_per_2xx"),
            "net_cpu_us_per_2xx": _median(runs[kind], "moderate", "server_net_cpu_us_per_2xx"),
            "idle_cores": _median(runs[kind], "moderate", "idle_cores"),
            "cpu_us_per_answer_overload": _median(
                runs[kind], "overload", "server_cpu_us_per_answer"
            ),
            "answered_per_s_overload": _median(runs[kind], "overload", "answered_per_s"),
            "p99_ms_moderate": statistics.median(
                r["moderate"]["latency_ms"]["p99"] or 0 for r in runs[kind]
            ),
            "accepted_per_s_overload": _median(runs[kind], "overload", "accepted_per_s"),
            "cores_busy_overload": _median(runs[kind], "overload", "server_cores_busy"),
            "generator_cores_overload": _median(runs[kind], "overload", "generator_cores_busy"),
        }
    for key in ("cpu_us_per_2xx", "net_cpu_us_per_2xx", "cpu_us_per_answer_overload"):
        floor_cpu, serve_cpu = summary["floor"][key], summary["serve"][key]
        if floor_cpu and serve_cpu:
            summary[f"ratio_{key}"] = round(serve_cpu / floor_cpu, 2)
        before = summary.get("baseline", {}).get(key)
        if floor_cpu and before:
            summary[f"baseline_ratio_{key}"] = round(before / floor_cpu, 2)
    floor_cap = summary["floor"]["accepted_per_s_overload"]
    serve_cap = summary["serve"]["accepted_per_s_overload"]
    if floor_cap and serve_cap:
        summary["capacity_ratio"] = round(serve_cap / floor_cap, 2)
    if spans > 1:
        for kind in runs:
            cpu = summary[kind]["cpu_us_per_2xx"]
            summary[kind]["cpu_us_per_span"] = round(cpu / spans, 2) if cpu else None
            capacity = summary[kind]["accepted_per_s_overload"]
            summary[kind]["spans_per_s_overload"] = round(capacity * spans) if capacity else None
    return summary


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--rate", type=float, default=500.0, help="moderate offered rate, /s")
    parser.add_argument(
        "--overload", type=float, default=6000.0, help="overload offered rate per worker, /s"
    )
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--idle", type=float, default=2.0, help="idle seconds measured first")
    parser.add_argument(
        "--baseline",
        default=None,
        help="also run serve from this source directory (PYTHONPATH), e.g. the code before a "
        "change, side by side in the same run",
    )
    parser.add_argument("-o", "--output", default=None)
    parser.add_argument("--markdown", default=None, help="print the table of this result file")
    args = parser.parse_args()
    if args.markdown:
        saved = json.loads(Path(args.markdown).read_text())
        for case in saved["cases"].values():
            runs = case["runs"]
            case.update(_summarize(case["case"], runs, case.get("spans_per_request", 1)))
        with_baseline = all("baseline" in case["runs"] for case in saved["cases"].values())
        print(markdown_before_after(saved) if with_baseline else markdown(saved))
        return

    report: dict[str, Any] = {
        "benchmark": "floor",
        "machine": _common.machine(),
        "parameters": vars(args) | {"output": None},
        "cases": {},
    }
    for name in args.cases.split(","):
        case = CASES[name]
        spans = 1
        bodies = [BODY]
        if case.get("app") == "traces":
            bodies, spans = _traces_bodies()
        kinds = ("floor", "serve", "baseline") if args.baseline else ("floor", "serve")
        runs: dict[str, list[dict[str, Any]]] = {kind: [] for kind in kinds}
        for _ in range(args.repeats):
            for kind in kinds:
                runs[kind].append(_measure(kind, case, args, bodies))
        summary = _summarize(case, runs, spans)
        summary["runs"] = runs
        report["cases"][name] = summary
        print(
            json.dumps({name: {k: v for k, v in summary.items() if k != "runs"}}),
            file=sys.stderr,
            flush=True,
        )
    report["load_after"] = os.getloadavg()
    _common.emit(report, args.output)


if __name__ == "__main__":
    main()
