"""serve's HTTP stack and its worker count, as chosen from the configuration and the machine."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from scorewatch.server import ConfigError, ServeConfig
from scorewatch.server.http import stack
from scorewatch.server.http.stack import Stack, choose_stack
from scorewatch.server.http.workers import _cgroup_cpu_quota, worker_count

pytestmark = pytest.mark.unit


def _config(**server: object) -> ServeConfig:
    return ServeConfig.from_mapping(
        {"server": server, "scorers": [{"id": "c", "kind": "completeness"}]}
    )


def test_auto_takes_the_fast_stack_the_default_install_brings() -> None:
    assert choose_stack("auto") == Stack("h11", "uvloop")  # the bounded parser, the fast loop
    assert choose_stack("h11") == Stack("h11", "asyncio")


def test_auto_falls_back_to_the_plain_parts_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stack, "_installed", lambda module: module == "uvloop")
    assert choose_stack("auto") == Stack("h11", "uvloop")
    with pytest.raises(ConfigError, match="httptools' is not installed"):
        choose_stack("httptools")


def test_workers_configured_or_one_per_usable_core() -> None:
    import os

    assert worker_count(_config(workers=3)) == 3
    expected = len(os.sched_getaffinity(0))
    quota = _cgroup_cpu_quota()
    if quota is not None:
        expected = min(expected, math.ceil(quota))
    assert worker_count(_config()) == max(1, expected)
    with pytest.raises(ConfigError, match=r"server\.workers"):
        _config(workers=0)


@pytest.mark.parametrize(
    ("content", "cpus"),
    [("max 100000\n", None), ("150000 100000\n", 1.5), ("200000 100000", 2.0), ("junk", None)],
)
def test_the_cgroup_quota_bounds_the_count(tmp_path: Path, content: str, cpus: float) -> None:
    path = tmp_path / "cpu.max"
    path.write_text(content)
    assert _cgroup_cpu_quota(path) == cpus
    assert _cgroup_cpu_quota(tmp_path / "absent") is None
