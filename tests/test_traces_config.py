"""The `[traces]` table of `scorewatch.toml`: selection, scorers, buffer bounds, listener."""

from __future__ import annotations

import tomllib

import pytest

from scorewatch.server.config import ConfigError, ServeConfig
from scorewatch.server.engine import InProcessIntake
from scorewatch.server.trace_intake import TracesIntake, build_traces_intake

pytestmark = pytest.mark.unit

BASE = """
[[scorers]]
id = "length"
kind = "completeness"

[[scorers]]
id = "other"
kind = "completeness"
"""


def _config(extra: str) -> ServeConfig:
    return ServeConfig.from_mapping(tomllib.loads(BASE + extra))


def test_the_traces_table_reads_selectors_scorers_and_bounds() -> None:
    config = _config(
        """
        [traces]
        listen = "127.0.0.1:4318"
        scorers = ["length"]

        [[traces.select]]
        operation = ["invoke_agent"]
        service = ["shop"]

        [traces.buffer]
        max_traces = 100
        quiet_period_s = 2
        parent_wait_s = 10
        max_age_s = 30
        """
    )
    traces = config.traces
    assert traces is not None
    assert (traces.host, traces.port) == ("127.0.0.1", 4318)
    assert traces.scorers == ["length"]
    assert traces.select[0].operation == ["invoke_agent"]
    assert traces.buffer.max_traces == 100 and traces.buffer.max_age_s == 30
    assert _config("").traces is None  # no table: no trace intake


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ('[traces]\nscorers = ["nope"]', "traces.scorers names unknown scorer ids 'nope'"),
        ('[traces]\nlisten = "4318"', "traces.listen: expected HOST:PORT"),
        ("[traces.buffer]\nmax_age_s = 10\nquiet_period_s = 5\nparent_wait_s = 5",
         "traces.buffer: max_age_s (10) must be greater than"),
        ('[[traces.select]]\noperations = ["chat"]', "traces.select[0].operations: unknown key"),
        ("[traces]\nmax_decoded_bytes = 10", "traces.max_decoded_bytes"),
    ],
)  # fmt: skip
def test_a_bad_traces_table_is_refused_by_key(extra: str, problem: str) -> None:
    with pytest.raises(ConfigError) as raised:
        _config(extra)
    assert any(problem in line for line in raised.value.problems), raised.value.problems


def test_a_public_traces_listener_needs_the_token() -> None:
    config = _config('[traces]\nlisten = "0.0.0.0:4318"')
    inner = InProcessIntake({}, sinks=[], max_concurrency=1, max_queue=1)
    with pytest.raises(ConfigError, match="without an auth token"):
        build_traces_intake(config, inner, None)
    assert isinstance(build_traces_intake(config, inner, "token"), TracesIntake)
    assert build_traces_intake(_config(""), inner, None) is inner
