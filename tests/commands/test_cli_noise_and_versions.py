"""`scorewatch eval --repeat` measures a judge of known noise; `report --compare` and
`eval --baseline` refuse to compare two versions of a scorer unless told to."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_support import scorewatch, write_jsonl
from noise_support import items_of_quality

pytestmark = pytest.mark.e2e

NOISY = "tests.cli_scorers:noisy_scorer"
LENGTH = "tests.cli_scorers:length_scorer"
SIGMA = 0.1


def test_eval_repeat_reports_the_judges_noise_within_its_sampling_error(tmp_path: Path) -> None:
    items, repeats = 40, 5
    data = write_jsonl(tmp_path / "data.jsonl", items_of_quality(items, seed=3))
    out = tmp_path / "results.jsonl"
    done = scorewatch(
        "eval", str(data), "--scorer", NOISY, "--scorer", LENGTH, "--repeat", str(repeats),
        "--out", str(out), "--format", "json",
        env={"SCOREWATCH_TEST_NOISE": str(SIGMA), "SCOREWATCH_TEST_NOISE_SEED": "11"},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(done.stdout)
    noise = summary["noise"]["noisy"]
    assert (noise["items"], noise["repeats"], noise["runs"]) == (items, repeats, items * repeats)
    # The pooled sd has items x (repeats - 1) = 160 degrees of freedom: its standard error is
    # about sigma / sqrt(2 x 160) = 0.0056. Four of those either way.
    assert abs(noise["within_item_sd"] - SIGMA) < 4 * SIGMA / (2 * items * (repeats - 1)) ** 0.5
    # The items' true qualities are uniform on 0.3..0.8 (sd 0.144), plus sigma^2/5 of noise.
    assert 0.10 < noise["between_item_sd"] < 0.19
    # The model-free scorer ran once per item and has no noise to report.
    assert "length" not in summary["noise"]
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert sum(r["scorer_id"] == "noisy" for r in records) == items * repeats
    assert sum(r["scorer_id"] == "length" for r in records) == items
    assert {r["repeat"] for r in records if r["scorer_id"] == "noisy"} == set(range(repeats))
    assert len({r["scorer_version"] for r in records if r["scorer_id"] == "noisy"}) == 1

    table = scorewatch(
        "eval", str(data), "--scorer", NOISY, "--repeat", "2",
        env={"SCOREWATCH_TEST_NOISE": str(SIGMA)},
    )  # fmt: skip
    assert "judge noise (2 judgements per item):" in table.stdout
    header = table.stdout.split("judge noise (2 judgements per item):\n")[1].splitlines()[0]
    assert header.split() == ["scorer", "items", "runs", "mean", "judge", "noise", "(sd)", "item",
                              "spread", "(sd)"]  # fmt: skip


def _run(tmp_path: Path, name: str, scorer: str = LENGTH) -> Path:
    rows = [{"input": f"q{i}", "output": "a long enough answer" * (i % 2)} for i in range(6)]
    out = tmp_path / f"{name}.jsonl"
    done = scorewatch(
        "eval", str(write_jsonl(tmp_path / "data.jsonl", rows)), "--scorer", scorer,
        "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def _with_version(path: Path, version: str) -> Path:
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    changed = path.with_name(f"{path.stem}-{version}.jsonl")
    return write_jsonl(changed, [{**r, "scorer_version": version} for r in records])


def test_report_compare_refuses_two_versions_of_a_scorer(tmp_path: Path) -> None:
    candidate = _run(tmp_path, "candidate")
    (version,) = {json.loads(line)["scorer_version"] for line in candidate.read_text().splitlines()}
    baseline = _with_version(candidate, "0123456789ab")
    refused = scorewatch("report", "--compare", str(baseline), str(candidate))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert (
        f"scorer 'length' changed version: 0123456789ab (baseline) -> {version}" in refused.stderr
    )
    assert "--allow-scorer-change" in refused.stderr
    allowed = scorewatch(
        "report", "--compare", str(baseline), str(candidate), "--allow-scorer-change"
    )
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "scorer changed: scorer 'length' changed version: 0123456789ab" in allowed.stdout
    as_json = scorewatch(
        "report", "--compare", str(baseline), str(candidate), "--allow-scorer-change",
        "--format", "json",
    )  # fmt: skip
    assert json.loads(as_json.stdout)["changed_scorers"] == [
        {
            "scorer_id": "length",
            "baseline_versions": ["0123456789ab"],
            "candidate_versions": [version],
        }
    ]
    # The same version on both sides compares as usual.
    assert scorewatch("report", "--compare", str(candidate), str(candidate)).returncode == 0


def test_eval_baseline_refuses_another_version_before_scoring(tmp_path: Path) -> None:
    baseline = _with_version(_run(tmp_path, "main"), "0123456789ab")
    data = write_jsonl(tmp_path / "new.jsonl", [{"input": "q0", "output": "x"}])
    out = tmp_path / "never.jsonl"
    refused = scorewatch(
        "eval", str(data), "--scorer", LENGTH, "--baseline", str(baseline), "--out", str(out)
    )
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "scorer 'length' changed version: 0123456789ab (baseline)" in refused.stderr
    assert not out.exists()  # refused before a single run
    allowed = scorewatch(
        "eval", str(data), "--scorer", LENGTH, "--baseline", str(baseline),
        "--allow-scorer-change",
    )  # fmt: skip
    assert "scorer changed: scorer 'length'" in allowed.stdout
