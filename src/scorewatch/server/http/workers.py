"""`scorewatch serve --workers N`: N processes serving one port, under one supervisor.

The supervisor binds the listening sockets, starts N worker processes that inherit them (the
kernel spreads new connections over the processes accepting on one socket), and does nothing
else: it serves no request. Each worker is a whole serve of its own (scorers, sinks, intake,
telemetry), so the in-process queue, `max_queue` and `/v1/stats` are per worker; the Redis
queue is shared as before. What must read as one service is summed:

- `/metrics`: the worker answering a scrape merges its siblings' registries, fetched over
  private Unix sockets (`peers.py`), into one exposition (counters and histograms summed,
  exemplars kept);
- `/readyz`: ready only when every worker is; each one is a `worker:<n>` check;
- the final accounting line is the sum of the workers' lines, each also printed.

SIGTERM or SIGINT to the supervisor is forwarded to every worker, which drains as a single
process does; a second signal is forwarded again (the workers stop at once). The workers run
in their own process group, so a terminal's Ctrl-C reaches them once, through the supervisor.
A worker that exits on its own stops the others and the supervisor exits 1; a supervisor that
disappears makes its workers drain and exit (they watch its pipe).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import pickle
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from ..config.file import ServeConfig

__all__ = ["WorkerLink", "supervise", "worker_count", "worker_main"]

logger = logging.getLogger("scorewatch.server")

# A worker that has not started serving by then (imports, scorers, sinks) is reported as such.
_START_TIMEOUT_S = 120.0
_HEADER = struct.Struct("!Q")


def worker_count(config: ServeConfig) -> int:
    """`[server] workers`, or the cores this process may use: the CPUs it may run on, bounded
    by its cgroup's CPU quota (a container limited to 2 CPUs on a 64-core node runs 2)."""
    if config.server.workers is not None:
        return config.server.workers
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    quota = _cgroup_cpu_quota()
    if quota is not None:
        cores = min(cores, math.ceil(quota))
    return max(1, cores)


def _cgroup_cpu_quota(path: Path = Path("/sys/fs/cgroup/cpu.max")) -> float | None:
    """CPUs allowed by the cgroup v2 quota (`max 100000`: none)."""
    try:
        quota, period = path.read_text(encoding="ascii").split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max" or not quota.isdigit() or not period.isdigit() or int(period) == 0:
        return None
    return int(quota) / int(period)


@dataclass(slots=True)
class WorkerLink:
    """What a worker process knows of the others and tells the supervisor."""

    index: int
    count: int
    peer_dir: Path
    socket_fds: list[int]
    report_fd: int

    def peer_path(self, index: int) -> Path:
        return self.peer_dir / f"worker-{index}.sock"

    def sibling_paths(self) -> dict[int, Path]:
        return {i: self.peer_path(i) for i in range(1, self.count + 1) if i != self.index}

    @property
    def label(self) -> str:
        return f"worker {self.index} (pid {os.getpid()})"

    def sockets(self) -> list[socket.socket]:
        return [socket.socket(fileno=fd) for fd in self.socket_fds]

    def bind_peer_socket(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(self.peer_path(self.index)))
        sock.listen(64)
        return sock

    def report(self, event: str, **data: Any) -> None:
        line = json.dumps({"event": event, **data}).encode("utf-8") + b"\n"
        with contextlib.suppress(OSError):  # the supervisor is gone: nobody to tell
            os.write(self.report_fd, line)


def worker_main() -> int:
    """A worker process's entry: its link and configuration arrive on stdin."""
    # The raw descriptor, not sys.stdin: a daemon thread blocked in a buffered read aborts
    # the interpreter's exit.
    stdin = sys.stdin.fileno()
    (size,) = _HEADER.unpack(_read_exactly(stdin, _HEADER.size))
    config, link = pickle.loads(_read_exactly(stdin, size))

    def watch_supervisor() -> None:
        # EOF: the supervisor is gone; drain and exit as on SIGTERM.
        while os.read(stdin, 4096):
            pass
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch_supervisor, name="scorewatch-supervisor", daemon=True).start()
    from ..config.file import ConfigError
    from .serve_process import serve

    try:
        return serve(config, worker=link)
    except ConfigError as error:  # found only when building (a missing environment variable)
        print(f"scorewatch serve: {link.label}: {error.message}", file=sys.stderr, flush=True)
        return 2


def _read_exactly(fd: int, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = os.read(fd, size - len(data))
        if not chunk:
            raise EOFError("the supervisor closed the pipe before the configuration was read")
        data += chunk
    return data


@dataclass(slots=True)
class _Worker:
    index: int
    process: subprocess.Popen[bytes]
    reports: Any  # the read end of its report pipe, a binary file
    buffer: bytes = b""
    listening: bool = False
    stats: dict[str, int] | None = None
    closed: bool = False

    def read(self) -> list[dict[str, Any]]:
        chunk = os.read(self.reports.fileno(), 65536)
        if not chunk:
            self.closed = True
            return []
        self.buffer += chunk
        *lines, self.buffer = self.buffer.split(b"\n")
        return [json.loads(line) for line in lines if line.strip()]


@dataclass(slots=True)
class _Supervisor:
    workers: list[_Worker] = field(default_factory=list)
    signals: int = 0
    failed: bool = False

    def forward(self, sig: int, frame: FrameType | None) -> None:
        self.signals += 1
        if self.signals == 1:
            logger.info("received %s: draining %d workers", signal.Signals(sig).name, len(self))
        self.stop_all()

    def stop_all(self) -> None:
        for worker in self.workers:
            if worker.process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    worker.process.send_signal(signal.SIGTERM)

    def __len__(self) -> int:
        return len(self.workers)

    def pump(self, selector: selectors.BaseSelector, timeout: float) -> None:
        for key, _ in selector.select(timeout):
            worker: _Worker = key.data
            for message in worker.read():
                if message.get("event") == "listening":
                    worker.listening = True
                elif message.get("event") == "stopped":
                    worker.stats = {k: int(v) for k, v in message["stats"].items()}
            if worker.closed:
                selector.unregister(worker.reports)
        for worker in self.workers:
            if worker.process.poll() is not None and not self.failed and self.signals == 0:
                logger.error(
                    "worker %d (pid %d) exited with %s: stopping the others",
                    worker.index,
                    worker.process.pid,
                    worker.process.returncode,
                )
                self.failed = True
                self.stop_all()


def _start_worker(
    index: int, count: int, config: ServeConfig, sockets: list[socket.socket], peer_dir: Path
) -> _Worker:
    read_fd, write_fd = os.pipe()
    link = WorkerLink(index, count, peer_dir, [s.fileno() for s in sockets], write_fd)
    code = "from scorewatch.server.http.workers import worker_main; raise SystemExit(worker_main())"
    process = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        pass_fds=(*link.socket_fds, write_fd),
        process_group=0,
    )
    os.close(write_fd)
    payload = pickle.dumps((config, link))
    assert process.stdin is not None
    process.stdin.write(_HEADER.pack(len(payload)) + payload)
    process.stdin.flush()  # kept open: its end tells the worker the supervisor is gone
    return _Worker(index, process, os.fdopen(read_fd, "rb", buffering=0))


def _sum(parts: list[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for part in parts:
        for key, value in part.items():
            total[key] = total.get(key, 0) + value
    return total


def supervise(
    config: ServeConfig, count: int, sockets: list[socket.socket], urls: list[str], stack: str
) -> int:
    """Run `count` workers on `sockets` (their URLs: the service's, then the traces listener's)
    until they stop; returns the exit code."""
    peer_dir = Path(tempfile.mkdtemp(prefix="scorewatch-serve-"))
    supervisor = _Supervisor()
    previous = {
        sig: signal.signal(sig, supervisor.forward) for sig in (signal.SIGTERM, signal.SIGINT)
    }
    selector = selectors.DefaultSelector()
    try:
        for index in range(1, count + 1):
            worker = _start_worker(index, count, config, sockets, peer_dir)
            supervisor.workers.append(worker)
            selector.register(worker.reports, selectors.EVENT_READ, worker)
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not all(w.listening for w in supervisor.workers):
            if supervisor.failed or supervisor.signals or time.monotonic() > deadline:
                break
            supervisor.pump(selector, 0.1)
        else:
            print(
                f"scorewatch serve: listening on {urls[0]} ({stack})", file=sys.stderr, flush=True
            )
            if len(urls) > 1:
                print(f"scorewatch serve: traces on {urls[1]}/v1/traces", file=sys.stderr)
            print(
                f"scorewatch serve: {count} workers, pids "
                f"{', '.join(str(w.process.pid) for w in supervisor.workers)}",
                file=sys.stderr,
                flush=True,
            )
        if not all(w.listening for w in supervisor.workers) and not supervisor.signals:
            logger.error("not every worker started within %.0fs: stopping", _START_TIMEOUT_S)
            supervisor.failed = True
            supervisor.stop_all()
        while any(w.process.poll() is None or not w.closed for w in supervisor.workers):
            supervisor.pump(selector, 0.2)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for worker in supervisor.workers:
            if worker.process.stdin is not None:
                with contextlib.suppress(OSError):
                    worker.process.stdin.close()
            worker.reports.close()
        selector.close()
        shutil.rmtree(peer_dir, ignore_errors=True)
    parts = [w.stats for w in supervisor.workers if w.stats is not None]
    stats = _sum(parts)
    if parts:
        print(
            f"scorewatch serve: stopped; accounting {json.dumps(stats, sort_keys=True)}",
            file=sys.stderr,
            flush=True,
        )
    codes = {w.process.returncode for w in supervisor.workers}
    if 2 in codes and not any(w.listening for w in supervisor.workers):
        return 2  # the configuration, as a single process reports it
    clean = codes == {0} and all(w.stats is not None for w in supervisor.workers)
    return 0 if clean and not supervisor.failed else 1
