"""Tests and benchmarks touch only the Redis and PostgreSQL databases their environment names
(tests/service_databases.py): never Redis database 0 or PostgreSQL's `test`, which belong to
others on a shared machine."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from binary_support import IN_CI, require_binary
from scale_support import PG_PORT, require_postgres, require_redis
from service_databases import DEFAULT_PG_DSN, DEFAULT_REDIS_URL

pytestmark = pytest.mark.e2e

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
GUARD = TESTS / "isolated_services.py"
# Scale tests that reach both services: the work queue end to end, and PostgreSQL on its own.
CONNECTION = frozenset({"AUTH", "CLIENT", "ECHO", "HELLO", "PING", "QUIT", "RESET", "SELECT"})
SCALE_TESTS = ("tests/server/test_scale_queue.py", "tests/sinks/test_not_scorable_downstream.py")


def _isolation_or_skip() -> str:
    """`unshare --net` works here (root on Linux), else skip (fail under CI)."""
    unshare = shutil.which("unshare")
    works = unshare is not None and os.geteuid() == 0
    if works:
        probe = subprocess.run(
            [str(unshare), "--net", "true"], capture_output=True, timeout=30, check=False
        )
        works = probe.returncode == 0
    if not works:
        message = "needs `unshare --net` (root) for a network namespace of its own"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    assert unshare is not None
    return unshare


def test_the_default_databases_are_scorewatchs_own() -> None:
    assert DEFAULT_REDIS_URL.rsplit("/", 1)[1] not in ("", "0")
    assert "dbname=scorewatch_test " in DEFAULT_PG_DSN


def test_no_test_or_benchmark_names_a_database_of_its_own() -> None:
    """Addresses of the real services come from service_databases.py, nowhere else."""
    ports, database = "(6379|5432)", "dbname=" + "test"  # spelled so as not to match itself
    named = re.compile(rf"(127\.0\.0\.1|localhost):{ports}\b|{database}\b")
    offenders = [
        f"{path.relative_to(REPO)}:{number}"
        for folder in ("tests", "benchmarks")
        for path in sorted((REPO / folder).rglob("*.py"))
        if path.name != "service_databases.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if named.search(line)
    ]
    assert offenders == []


def test_scale_tests_use_only_the_databases_the_environment_names(tmp_path: Path) -> None:
    unshare = _isolation_or_skip()
    require_binary("redis-server")
    require_redis()
    require_postgres()  # the test database exists before the proxy refuses every other one
    socket_dir = os.environ.get("SCOREWATCH_TEST_PG_SOCKET_DIR", "/var/run/postgresql")
    assert Path(socket_dir, f".s.PGSQL.{PG_PORT}").exists(), "PostgreSQL's Unix socket"
    report = tmp_path / "report.json"
    pytest_command = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
        "-o", "addopts=", *SCALE_TESTS,
    ]  # fmt: skip
    completed = subprocess.run(
        [unshare, "--net", sys.executable, str(GUARD), str(report), "--", *pytest_command],
        cwd=REPO,
        env={**os.environ, "CI": "true"},  # a service that cannot be reached fails, not skips
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = completed.stdout[-4000:] + completed.stderr[-4000:]
    assert completed.returncode == 0 and report.exists(), output
    outcome = json.loads(report.read_text(encoding="utf-8"))
    assert outcome["exit_code"] == 0, output
    assert outcome["traps"] == {"redis:6379": 0, "postgres:5432": 0}, outcome
    # A connection starts in database 0 (PING, HELLO) before it selects its own.
    touched = {db for db, command, _ in outcome["redis_commands"] if command not in CONNECTION}
    assert touched == {outcome["redis_db"]}, outcome
    assert outcome["postgres_refused"] == {}, outcome
    assert set(outcome["postgres_served"]) == {outcome["postgres_database"]}, outcome
