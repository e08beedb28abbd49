"""`scorewatch demo --prometheus`: a throw-away Prometheus on loopback with the short-window rules.

It scrapes the demo's `/metrics` every second, evaluates the shipped short-window rule variant
(shipped in the package, generated with the production rules by
deploy/prometheus/generate_rules.py: windows of seconds instead of hours, so a score drop alerts
within the demo's minute), and is polled for the alerts that fire. Alertmanager is not needed to
see alert states: Prometheus's own `/api/v1/alerts` reports them.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["DemoPrometheus", "find_short_rules"]


def find_short_rules() -> Path | None:
    """The short-window rules file shipped in the package (`demo/data/short-window.rules.yml`,
    written by deploy/prometheus/generate_rules.py); None if an installation lost it."""
    path = Path(__file__).resolve().parent / "data" / "short-window.rules.yml"
    return path if path.is_file() else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _get_json(url: str, timeout: float = 2.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read())


class DemoPrometheus:
    """One Prometheus process, started by `start()` and stopped (by its pid) by `stop()`."""

    def __init__(self, binary: str, metrics_address: str, rules: Path | None) -> None:
        self.binary = binary
        self.metrics_address = metrics_address
        self.rules = rules
        self.port = _free_port()
        self._workdir = Path(tempfile.mkdtemp(prefix="scorewatch-demo-prometheus-"))
        self._process: subprocess.Popen[bytes] | None = None
        self.fired: dict[str, set[str]] = {}
        """Alert name -> the `gen_ai_evaluation_name` labels (scorers) it fired for."""

    @classmethod
    def locate(cls, metrics_address: str) -> DemoPrometheus | None:
        binary = shutil.which("prometheus")
        if binary is None:
            return None
        return cls(binary, metrics_address, find_short_rules())

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _config(self) -> str:
        rule_files = f'rule_files: ["{self.rules}"]\n' if self.rules is not None else ""
        return (
            "global:\n"
            "  scrape_interval: 1s\n"
            "  evaluation_interval: 1s\n"
            f"{rule_files}"
            "scrape_configs:\n"
            "  - job_name: scorewatch-demo\n"
            "    static_configs:\n"
            f'      - targets: ["{self.metrics_address}"]\n'
        )

    def start(self, ready_timeout_s: float = 15.0) -> None:
        config = self._workdir / "prometheus.yml"
        config.write_text(self._config(), encoding="utf-8")
        log = (self._workdir / "prometheus.log").open("wb")
        self._process = subprocess.Popen(
            [
                self.binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={self._workdir / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=warn",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        log.close()
        deadline = time.monotonic() + ready_timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"prometheus exited with code {self._process.returncode}; see "
                    f"{self._workdir / 'prometheus.log'}"
                )
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{self.url}/-/ready", timeout=1),
            ):
                return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"prometheus was not ready within {ready_timeout_s:.0f}s")

    def poll_alerts(self) -> list[str]:
        """Record every alert firing now; returns those not seen firing before ("name (scorer)")."""
        try:
            alerts = _get_json(f"{self.url}/api/v1/alerts")["data"]["alerts"]
        except (OSError, ValueError, KeyError, TypeError):
            return []
        new: list[str] = []
        for alert in alerts:
            if alert.get("state") != "firing":
                continue
            labels = alert.get("labels", {})
            name = str(labels.get("alertname", "?"))
            scope = labels.get("gen_ai_evaluation_name")
            found = self.fired.setdefault(name, set())
            key = str(scope) if scope else ""
            if key not in found:
                found.add(key)
                new.append(f"{name} ({key})" if key else name)
        return new

    async def watch_alerts(
        self,
        stop: asyncio.Event,
        on_fired: Callable[[str], object] | None = None,
        every_s: float = 1.0,
    ) -> None:
        while not stop.is_set():
            for alert in await asyncio.to_thread(self.poll_alerts):
                if on_fired is not None:
                    on_fired(alert)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=every_s)

    def fired_summary(self) -> list[str]:
        return [
            f"{name} ({', '.join(sorted(scope for scope in scopes if scope))})"
            if any(scopes)
            else name
            for name, scopes in sorted(self.fired.items())
        ]

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        shutil.rmtree(self._workdir, ignore_errors=True)
