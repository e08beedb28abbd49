"""The shipped Prometheus rules: generated, valid, documented, and unit-tested with promtool."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from binary_support import require_binary
from deploy_support import (
    DEPLOY,
    PROMETHEUS_DIR,
    RULE_TESTS_DIR,
    RULES_FILE,
    RUNBOOKS,
    SHORT_RULES_FILE,
    load_script,
    load_yaml,
    rules_generator,
    run,
)
from scorewatch.server.config.file import load_config

pytestmark = pytest.mark.integration

ALERTS = [
    "ScorewatchScoreDrop",
    "ScorewatchJudgeErrorsHigh",
    "ScorewatchEvaluationsStalled",
    "ScorewatchLiveDrops",
    "ScorewatchJudgeSpendHigh",
    "ScorewatchBudgetBinding",
    "ScorewatchQueueDeadLetters",
    "ScorewatchQueueBacklogHigh",
    "ScorewatchJudgeAgreementLow",
]
RULE_TEST_FILES = sorted(RULE_TESTS_DIR.glob("*_test.yml"))


def test_committed_rule_files_match_the_generator() -> None:
    stale = rules_generator().stale_files()
    assert stale == [], f"run python deploy/prometheus/generate_rules.py: {stale}"


def test_committed_noise_tests_match_their_generator() -> None:
    generator = load_script(PROMETHEUS_DIR / "generate_noise_tests.py", "sw_noise_tests")
    stale = generator.regenerate.stale_files(generator.generated_files())
    assert stale == [], f"run python deploy/prometheus/generate_noise_tests.py: {stale}"


def test_prometheus_rule_for_kubernetes_holds_the_same_groups() -> None:
    resource = load_yaml(DEPLOY / "k8s" / "prometheusrule.yaml")
    assert resource["kind"] == "PrometheusRule"
    assert resource["spec"]["groups"] == load_yaml(RULES_FILE)["groups"]


def test_every_spec_alert_is_shipped_with_its_metadata() -> None:
    rules = [rule for group in load_yaml(RULES_FILE)["groups"] for rule in group["rules"]]
    alerts = {rule["alert"]: rule for rule in rules if "alert" in rule}
    assert sorted(alerts) == sorted(ALERTS)
    for name, rule in alerts.items():
        assert rule["labels"]["severity"] in {"critical", "warning", "info"}, name
        annotations = rule["annotations"]
        assert annotations["summary"] and annotations["description"], name
        assert annotations["runbook_url"].endswith(f"/docs/runbooks/{name}.md"), name
        runbook = RUNBOOKS / f"{name}.md"
        assert runbook.is_file(), f"missing runbook {runbook}"
        assert name in runbook.read_text(encoding="utf-8")


def test_short_variant_differs_only_in_windows_and_thresholds() -> None:
    production = load_yaml(RULES_FILE)["groups"]
    short = load_yaml(SHORT_RULES_FILE)["groups"]
    assert [len(g["rules"]) for g in production] == [len(g["rules"]) for g in short]
    for prod_group, short_group in zip(production, short, strict=True):
        for prod_rule, short_rule in zip(prod_group["rules"], short_group["rules"], strict=True):
            assert prod_rule.get("record") == short_rule.get("record")
            assert prod_rule.get("alert") == short_rule.get("alert")
    short_drop = next(
        r for g in short for r in g["rules"] if r.get("alert") == "ScorewatchScoreDrop"
    )
    assert "[10s]" in load_yaml(SHORT_RULES_FILE)["groups"][0]["rules"][0]["expr"]
    assert short_drop["for"] == "3s"


@pytest.mark.needs_binary
def test_rule_files_pass_promtool_check() -> None:
    promtool = require_binary("promtool")
    result = run([promtool, "check", "rules", str(RULES_FILE), str(SHORT_RULES_FILE)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 21 rules found" in result.stdout


@pytest.mark.parametrize("test_file", RULE_TEST_FILES, ids=lambda p: p.name)
@pytest.mark.needs_binary
def test_promtool_rule_unit_tests_pass(test_file: Path) -> None:
    promtool = require_binary("promtool")
    result = run([promtool, "test", "rules", str(test_file)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def _run_score_drop_test_against(
    settings: object, test_name: str, tmp_path: Path, suite_file: str = "score_drop_test.yml"
) -> str:
    """Run one test of `suite_file` against rules generated from other settings."""
    generator = rules_generator()
    rules_dir = tmp_path / "rules"
    rules_dir.mkdir()
    document = {"groups": generator.rule_groups(settings)}
    (rules_dir / "scorewatch.rules.yml").write_text(generator.dump_yaml(document))
    tests_dir = tmp_path / "tests"
    tests_dir.mkdir()
    suite = load_yaml(RULE_TESTS_DIR / suite_file)
    suite["tests"] = [test for test in suite["tests"] if test["name"] == test_name]
    assert len(suite["tests"]) == 1
    (tests_dir / suite_file).write_text(yaml.safe_dump(suite))
    result = run([require_binary("promtool"), "test", "rules", suite_file], tests_dir)
    assert result.returncode != 0, "the score-drop tests should catch the weakened rule"
    return result.stdout + result.stderr


@pytest.mark.needs_binary
def test_score_drop_tests_catch_a_rule_without_the_relative_margin(tmp_path: Path) -> None:
    production = rules_generator().PRODUCTION
    weakened = dataclasses.replace(production, relative_margin=0.0)
    name = "quiet on a relative-only or an absolute-only drop"
    output = _run_score_drop_test_against(weakened, name, tmp_path)
    assert "absolute-only" in output


@pytest.mark.needs_binary
def test_score_drop_tests_catch_a_rule_without_the_volume_minimum(tmp_path: Path) -> None:
    production = rules_generator().PRODUCTION
    weakened = dataclasses.replace(production, min_evaluations=1)
    output = _run_score_drop_test_against(weakened, "quiet with too few evaluations", tmp_path)
    assert "sparse-agent" in output


@pytest.mark.needs_binary
def test_score_drop_tests_catch_a_rule_without_the_long_window(tmp_path: Path) -> None:
    production = rules_generator().PRODUCTION
    weakened = dataclasses.replace(production, score_long_window="1h")
    output = _run_score_drop_test_against(weakened, "quiet on noise and a one-hour dip", tmp_path)
    assert "quiet on noise" in output


@pytest.mark.needs_binary
def test_noise_tests_catch_a_rule_without_the_noise_band(tmp_path: Path) -> None:
    production = rules_generator().PRODUCTION
    weakened = dataclasses.replace(production, noise_multiple=0.0)
    name = "a drop within the judge's noise stays quiet"
    output = _run_score_drop_test_against(weakened, name, tmp_path, "noise_test.yml")
    assert "coin-agent" in output


@pytest.mark.needs_binary
def test_noise_tests_catch_a_rule_that_ignores_the_scorer_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    generator = rules_generator()
    monkeypatch.setattr(generator, "SCORE_KEY", "gen_ai_evaluation_name, scorewatch_target")
    name = "a scorer version change raises no drop alert"
    output = _run_score_drop_test_against(generator.PRODUCTION, name, tmp_path, "noise_test.yml")
    assert "support-agent" in output


def test_the_backlog_alert_mirrors_the_shipped_queue_limit() -> None:
    """`[queue] max_backlog` is not exported as a metric: the rule carries it, and must agree
    with the configs that ship it."""
    generator = rules_generator()
    for config in (DEPLOY / "scorewatch.scale.toml", DEPLOY / "k8s" / "scale" / "scorewatch.toml"):
        assert load_config(config).queue.max_backlog == generator.PRODUCTION.queue_max_backlog
    rule = next(
        r
        for g in load_yaml(RULES_FILE)["groups"]
        for r in g["rules"]
        if r.get("alert") == "ScorewatchQueueBacklogHigh"
    )
    threshold = generator.PRODUCTION.queue_backlog_fraction * generator.PRODUCTION.queue_max_backlog
    assert rule["expr"].endswith(f"> {threshold:g}") and rule["for"] == "10m"


def _run_queue_tests_with_expr(alert: str, expr: str, tmp_path: Path) -> str:
    """Run queue_test.yml against the production rules with one alert's expression replaced."""
    groups = load_yaml(RULES_FILE)["groups"]
    for group in groups:
        for rule in group["rules"]:
            if rule.get("alert") == alert:
                rule["expr"] = expr
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "scorewatch.rules.yml").write_text(yaml.safe_dump({"groups": groups}))
    (tmp_path / "tests").mkdir()
    suite = (RULE_TESTS_DIR / "queue_test.yml").read_text("utf-8")
    (tmp_path / "tests" / "queue_test.yml").write_text(suite)
    result = run(
        [require_binary("promtool"), "test", "rules", "queue_test.yml"], tmp_path / "tests"
    )
    assert result.returncode != 0, "the queue tests should catch the weakened rule"
    return result.stdout + result.stderr


@pytest.mark.needs_binary
def test_queue_tests_catch_a_dead_letter_rule_blind_to_a_first_dead_letter(
    tmp_path: Path,
) -> None:
    naive = (
        "sum by (scorewatch_queue_stream, scorewatch_queue_reason) "
        "(increase(scorewatch_queue_dead_lettered_total[15m])) > 0"
    )
    output = _run_queue_tests_with_expr("ScorewatchQueueDeadLetters", naive, tmp_path)
    assert "time: 21m" in output  # worker-1's first dead letter went unnoticed


@pytest.mark.needs_binary
def test_queue_tests_catch_a_dead_letter_rule_that_counts_old_dead_letters(
    tmp_path: Path,
) -> None:
    unguarded = (
        "sum by (scorewatch_queue_stream, scorewatch_queue_reason) (\n"
        "  (scorewatch_queue_dead_lettered_total unless "
        "scorewatch_queue_dead_lettered_total offset 15m)\n"
        "  or increase(scorewatch_queue_dead_lettered_total[15m])\n"
        ") > 0"
    )
    output = _run_queue_tests_with_expr("ScorewatchQueueDeadLetters", unguarded, tmp_path)
    assert "time: 10m" in output  # a fresh Prometheus took worker-2's old ones for news
