"""A real Prometheus for tests: started on a free port, used only once it says it is ready.

Prometheus opens its web port before it has loaded its storage and answers 503 until then, so
waiting for the port alone is a race that shows up under load; `/-/ready` is the signal.
"""

from __future__ import annotations

import socket
import subprocess
import textwrap
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

__all__ = ["free_port", "query", "running_prometheus", "wait_ready"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(
    base: str, process: subprocess.Popen[bytes], log: Path | None = None, timeout: float = 60.0
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            output = log.read_text(errors="replace") if log is not None else ""
            raise AssertionError(f"Prometheus exited with {process.returncode}:\n{output[-2000:]}")
        try:
            if httpx.get(f"{base}/-/ready", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"Prometheus at {base} was not ready within {timeout:.0f}s")
        time.sleep(0.1)


@contextmanager
def running_prometheus(
    binary: str,
    directory: Path,
    targets: Sequence[str],
    *,
    job: str = "scorewatch",
    extra_args: Sequence[str] = (),
    rule_files: Sequence[Path] = (),
) -> Iterator[str]:
    """A ready Prometheus scraping `targets` (host:port) every second, evaluating the rules of
    `rule_files`; yields its base URL."""
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / "prometheus.yml"
    listed = ", ".join(f'"{target}"' for target in targets)
    rules = ", ".join(f'"{path}"' for path in rule_files)
    config.write_text(
        textwrap.dedent(
            f"""
            global:
              scrape_interval: 1s
              evaluation_interval: 1s
            rule_files: [{rules}]
            scrape_configs:
              - job_name: {job}
                static_configs:
                  - targets: [{listed}]
            """
        )
    )
    port = free_port()
    log = directory / "prometheus.log"
    output = log.open("wb")
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={directory / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
            *extra_args,
        ],
        stdout=output,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_ready(base, process, log)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        output.close()


def query(base: str, expression: str) -> list[dict[str, Any]]:
    response = httpx.get(f"{base}/api/v1/query", params={"query": expression}, timeout=10)
    response.raise_for_status()
    body = response.json()
    assert body["status"] == "success", body
    result: list[dict[str, Any]] = body["data"]["result"]
    return result
