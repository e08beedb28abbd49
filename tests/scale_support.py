"""Shared pieces of the scale-out tests: the real Redis and PostgreSQL databases the environment
names (service_databases.py; skipped locally when unreachable, a failure under CI=true), per-run
stream keys and schemas that are cleaned up afterwards, custom scorers, and `scorewatch worker`
processes."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

import pytest

from binary_support import IN_CI
from service_databases import (
    PG_DATABASE,
    PG_DSN,
    PG_HOST,
    PG_PORT,
    REDIS_HOST,
    REDIS_PORT,
    REDIS_URL,
    ensure_pg_database,
    pg_dsn,
    redis_url,
)

__all__ = [
    "PG_DATABASE",
    "PG_DSN",
    "PG_HOST",
    "PG_PORT",
    "REDIS_HOST",
    "REDIS_PORT",
    "REDIS_URL",
    "SCORER_MODULE",
    "WorkerProcess",
    "pg_dsn",
    "redis_url",
    "require_postgres",
    "require_redis",
    "require_service",
    "scale_config",
    "unique_prefix",
    "write_module",
]

_CONSUMING = re.compile(r"scorewatch worker: consuming ")
_STOPPED = re.compile(r"scorewatch worker: stopped; accounting (\{.*\})")

# Custom scorers the configs name by import path (`sw_scale_scorers:<factory>`).
SCORER_MODULE = textwrap.dedent(
    """
    import asyncio
    import os

    import scorewatch as sw


    def make_length_scorer():
        scorer = sw.create_scorer(id="length", description="Output length, capped at 100")
        return scorer.generate_score(lambda ctx: min(1.0, len(str(ctx.run.output)) / 100))


    def make_slow_scorer():
        delay = float(os.environ.get("SW_SLOW_SCORER_S", "0.2"))

        async def slow(ctx):
            await asyncio.sleep(delay)
            return min(1.0, len(str(ctx.run.output)) / 100)

        return sw.create_scorer(id="slow", description="Sleeps, then scores").generate_score(slow)


    def make_poison_scorer():
        def explode(ctx):
            if ctx.run.output == "poison":
                raise RuntimeError("this item always fails")
            return 1.0

        return sw.create_scorer(id="picky", description="Fails on poison").generate_score(explode)
    """
)


def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def require_service(name: str, host: str, port: int) -> None:
    if _reachable(host, port):
        return
    message = f"{name} is not reachable on {host}:{port} (.ci/run starts it)"
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


def require_redis() -> None:
    """The test Redis (`SCOREWATCH_TEST_REDIS_URL`) answers, or skip (fail under CI)."""
    require_service("Redis", REDIS_HOST, REDIS_PORT)


def require_postgres() -> None:
    """The test PostgreSQL answers and has its database (`SCOREWATCH_TEST_PG_DSN`, created
    when missing), or skip (fail under CI)."""
    require_service("PostgreSQL", PG_HOST, PG_PORT)
    ensure_pg_database()


def unique_prefix() -> str:
    return f"swtest-{uuid.uuid4().hex[:12]}"


def write_module(directory: Path) -> None:
    (directory / "sw_scale_scorers.py").write_text(SCORER_MODULE, encoding="utf-8")


def scale_config(
    directory: Path,
    *,
    stream: str,
    schema: str,
    factories: Mapping[str, str],
    visibility_timeout: float = 1.0,
    max_deliveries: int = 3,
    max_backlog: int = 100_000,
    max_concurrency: int = 8,
) -> Path:
    """`scorewatch.toml` for serve and workers: the queue, PostgreSQL as the only sink."""
    directory.mkdir(parents=True, exist_ok=True)
    write_module(directory)
    scorers = "".join(
        f'[[scorers]]\nid = "{scorer_id}"\nfactory = "sw_scale_scorers:{factory}"\n\n'
        for scorer_id, factory in factories.items()
    )
    body = (
        f"{scorers}"
        f"[live]\nmax_concurrency = {max_concurrency}\n\n"
        f'[sinks]\nsqlite = false\npostgres = "{PG_DSN}"\npostgres_schema = "{schema}"\n\n'
        f'[queue]\nstream = "{stream}"\ngroup = "{stream}-workers"\n'
        f"visibility_timeout = {visibility_timeout}\nclaim_interval = 0.25\n"
        f"stats_interval = 0.25\nmax_deliveries = {max_deliveries}\n"
        f"max_backlog = {max_backlog}\n\n"
        "[telemetry]\nprometheus = false\notlp = false\n"
    )
    path = directory / "scorewatch.toml"
    path.write_text(body, encoding="utf-8")
    return path


class WorkerProcess:
    """`python -m scorewatch worker --config PATH --queue URL`, stderr in a file."""

    def __init__(
        self,
        config: Path,
        *,
        name: str,
        queue: str = REDIS_URL,
        env: Mapping[str, str] | None = None,
        extra_args: tuple[str, ...] = (),
    ) -> None:
        self.stderr_path = config.parent / f"worker-{name}.stderr"
        environment = dict(os.environ)
        environment["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
        environment.update(env or {})
        args = [
            sys.executable, "-m", "scorewatch", "worker", "--config", str(config),
            "--queue", queue, "--consumer", name, *extra_args,
        ]  # fmt: skip
        self._stderr = self.stderr_path.open("wb")
        self.process = subprocess.Popen(
            args, cwd=config.parent, env=environment, stdout=subprocess.DEVNULL, stderr=self._stderr
        )

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def wait_consuming(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if _CONSUMING.search(self.stderr()):
                return
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"worker exited with {self.process.returncode}:\n{self.stderr()}"
                )
            time.sleep(0.05)
        raise RuntimeError(f"worker did not start within {timeout}s:\n{self.stderr()}")

    def terminate(self, timeout: float = 60.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        finally:
            self._stderr.close()

    def kill9(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
        self._stderr.close()

    def final_accounting(self) -> dict[str, int]:
        import json

        found = _STOPPED.search(self.stderr())
        assert found, f"no final accounting line in:\n{self.stderr()}"
        accounting: dict[str, int] = json.loads(found.group(1))
        return accounting
