"""The one redaction walk: `storable(privacy=...)`, the record's content columns and `kept()`,
the `[privacy]` table of scorewatch.toml and `LiveScoring(privacy=...)`."""

from __future__ import annotations

import math
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType

import pytest
from pydantic import ValidationError

import scorewatch as sw
from scorewatch.core.call import AgentCall
from scorewatch.live import LiveScoring
from scorewatch.privacy import PrivacyPolicy
from scorewatch.server.config.file import ConfigError, load_config
from scorewatch.sinks.record import ScoreRecord
from scorewatch.sinks.storable import REDACTED, redacts_any, storable

pytestmark = pytest.mark.unit

POLICY = PrivacyPolicy(redact=["all"])


def test_the_walk_redacts_texts_and_keys_and_still_cleans() -> None:
    run = POLICY.start()
    value = {
        "ada@example.com": ["call +44 20 7946 0958", 1, None, math.nan],
        "api_key": "sk-proj-abcdefghijklmnopqrstuv",
        "nested": {"deep": ("ada@example.com\x00",)},
    }
    assert storable(value, redact=True, privacy=run) == {
        "<EMAIL_1>": ["call <PHONE_1>", 1, None, "NaN"],
        "api_key": REDACTED,
        "nested": {"deep": ["<EMAIL_1>\ufffd"]},
    }
    # Without a redactor the walk is what it was.
    assert storable(value)["ada@example.com"][0] == "call +44 20 7946 0958"


def test_the_texts_of_any_mapping_or_sequence_are_scanned_in_their_order() -> None:
    """A row's texts are collected in order (keys and values in turn, nested ones where they
    are), so markers are numbered in that order: plain dictionaries and lists, and any other
    mapping, tuple or text type, numbers among them."""

    class Address(StrEnum):
        B = "b@example.com"

    run = POLICY.start()
    value = {
        "a@example.com": 1.5,
        "n": MappingProxyType({"c@example.com": [Address.B, ("d@example.com", 2.0), None]}),
        "e@example.com": [1, "f@example.com"],
    }
    assert redacts_any(run, [value])
    assert [address for _, address in run.markers] == [f"{x}@example.com" for x in "acbdef"]
    assert list(run.markers.values()) == [f"<EMAIL_{n}>" for n in range(1, 7)]


def _record(redaction: object) -> ScoreRecord:
    scorer = sw.create_scorer(id="s", description="d").generate_score(lambda ctx: 1.0)
    call = AgentCall(
        input="from ada@example.com",
        output="sent to 203.0.113.42",
        target="bot",
        trace_id="0af7651916cd43dd8448eb211c80319c",
        span_id="b7ad6b7169203331",
        run_id="4155550132",
        ground_truth="ada@example.com",
        metadata={"note": "ada@example.com"},
    )
    return ScoreRecord.failure(
        "4155550132-run",
        scorer,
        call,
        ValueError("judge quoted ada@example.com"),
        redaction=redaction,  # type: ignore[arg-type]
    )


def test_a_record_redacts_its_content_columns_only() -> None:
    row = _record(POLICY.start()).to_row()
    assert row["input"] == "from <EMAIL_1>" and row["output"] == "sent to <IP_1>"
    assert row["error"] == "judge quoted <EMAIL_1>"
    assert row["metadata"]["groundTruth"] == "<EMAIL_1>"
    assert row["metadata"]["note"] == "<EMAIL_1>"
    # Ids, the target and the trace are not content: a digit run shaped like a phone number
    # in an id stays.
    assert row["id"] == row["runId"] == "4155550132-run"
    assert row["metadata"]["agentRunId"] == "4155550132"
    assert row["traceId"] == "0af7651916cd43dd8448eb211c80319c" and row["entityId"] == "bot"
    assert list(row) == list(_record(None).to_row())  # the same columns, in the same order


def test_a_pattern_matching_part_of_a_column_name_redacts_content_only() -> None:
    """The columns' names are the row's, not content: a custom pattern matching part of one
    (`put` in `input`, `output`) redacts the values only (the row failed with a KeyError)."""
    policy = PrivacyPolicy(redact=["email"], patterns={"WORD": "put"})
    row = _record(policy.start()).to_row()
    assert list(row) == list(_record(None).to_row())
    assert row["input"] == "from <EMAIL_1>" and row["output"] == "sent to 203.0.113.42"


def test_kept_shows_a_value_as_the_record_keeps_it() -> None:
    assert _record(POLICY.start()).kept("mail ada@example.com") == "mail <EMAIL_1>"
    assert _record(None).kept("mail ada@example.com") == "mail ada@example.com"
    assert _record(None).kept(None) is None


def test_live_scoring_takes_a_policy_or_its_options() -> None:
    scorer = sw.create_scorer(id="s", description="d").generate_score(lambda ctx: 1.0)
    live = LiveScoring({"s": scorer}, drain_on_exit=False, privacy={"redact": ["email"]})
    live.close()
    with pytest.raises(ValidationError, match="redact"):
        LiveScoring({"s": scorer}, drain_on_exit=False, privacy={"redact": ["emails"]})


def test_the_privacy_table_of_scorewatch_toml(tmp_path: Path) -> None:
    base = '[[scorers]]\nid = "c"\nkind = "completeness"\n\n'
    path = tmp_path / "scorewatch.toml"
    path.write_text(
        base + "[privacy]\nredact = [\"all\"]\npatterns = { TICKET = 'T-\\d+' }\n", "utf-8"
    )
    config = load_config(path)
    assert config.privacy.enabled and "card" in config.privacy.redact
    assert not load_config(_write(path, base)).privacy.enabled
    with pytest.raises(ConfigError) as raised:
        load_config(_write(path, base + '[privacy]\nredact = ["names"]\n'))
    assert any("privacy" in problem for problem in raised.value.problems), raised.value.problems


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


_NUMBERED_ROW = """
import json
import scorewatch as sw
from scorewatch.core.call import AgentCall
from scorewatch.privacy import PrivacyPolicy
from scorewatch.sinks.record import ScoreRecord

scorer = sw.create_scorer(id="s", description="d").generate_score(lambda ctx: 1.0)
call = AgentCall(input="a@example.com", output="b@example.com")
record = ScoreRecord.failure(
    "run", scorer, call, ValueError("c@example.com"),
    redaction=PrivacyPolicy(redact=["email"]).start(),
)
row = record.to_row()
print(json.dumps([row["input"], row["output"], row["error"]]))
"""


@pytest.mark.parametrize("seeds", [("0", "1", "2", "3", "4", "5")])
def test_a_rows_markers_are_numbered_alike_in_every_process(seeds: tuple[str, ...]) -> None:
    """Markers are numbered in the order a row's texts are read; its content columns are read
    in the row's order, not a set's (whose order of text follows the hash seed), so the same
    run stores the same markers in every process."""
    import json
    import os
    import subprocess
    import sys

    rows = set()
    for seed in seeds:
        env = dict(os.environ, PYTHONHASHSEED=seed)
        done = subprocess.run(
            [sys.executable, "-c", _NUMBERED_ROW], env=env, capture_output=True, text=True,
            check=True, timeout=120,
        )  # fmt: skip
        rows.add(done.stdout)
    assert len(rows) == 1, rows
    assert sorted(json.loads(rows.pop())) == ["<EMAIL_1>", "<EMAIL_2>", "<EMAIL_3>"]
