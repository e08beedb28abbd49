"""The shipped Prometheus rules: generated, valid, documented, and unit-tested with promtool."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml

from conftest import require_binary
from deploy_support import (
    DEPLOY,
    RULE_TESTS_DIR,
    RULES_FILE,
    RUNBOOKS,
    SHORT_RULES_FILE,
    load_yaml,
    rules_generator,
    run,
)

ALERTS = [
    "ScorewatchScoreDrop",
    "ScorewatchJudgeErrorsHigh",
    "ScorewatchEvaluationsStalled",
    "ScorewatchLiveDrops",
    "ScorewatchJudgeSpendHigh",
]
RULE_TEST_FILES = sorted(RULE_TESTS_DIR.glob("*_test.yml"))


def test_committed_rule_files_match_the_generator() -> None:
    stale = rules_generator().stale_files()
    assert stale == [], f"run python deploy/prometheus/generate_rules.py: {stale}"


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
    assert "SUCCESS: 12 rules found" in result.stdout


@pytest.mark.parametrize("test_file", RULE_TEST_FILES, ids=lambda p: p.name)
@pytest.mark.needs_binary
def test_promtool_rule_unit_tests_pass(test_file: Path) -> None:
    promtool = require_binary("promtool")
    result = run([promtool, "test", "rules", str(test_file)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def _run_score_drop_test_against(settings: object, test_name: str, tmp_path: Path) -> str:
    """Run one test of score_drop_test.yml against rules generated from other settings."""
    generator = rules_generator()
    rules_dir = tmp_path / "rules"
    rules_dir.mkdir()
    document = {"groups": generator.rule_groups(settings)}
    (rules_dir / "scorewatch.rules.yml").write_text(generator.dump_yaml(document))
    tests_dir = tmp_path / "tests"
    tests_dir.mkdir()
    suite = load_yaml(RULE_TESTS_DIR / "score_drop_test.yml")
    suite["tests"] = [test for test in suite["tests"] if test["name"] == test_name]
    assert len(suite["tests"]) == 1
    (tests_dir / "score_drop_test.yml").write_text(yaml.safe_dump(suite))
    result = run([require_binary("promtool"), "test", "rules", "score_drop_test.yml"], tests_dir)
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
