"""The Grafana dashboards: generated from grafana/generate.py, complete, and valid PromQL."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from binary_support import require_binary
from deploy_support import (
    GRAFANA,
    RULES_FILE,
    dashboard_files,
    dashboards_generator,
    expand_variables,
    load_yaml,
    panel_targets,
    run,
    variable_queries,
)
from scorewatch.server.config.file import load_config
from scorewatch.telemetry import names

pytestmark = pytest.mark.integration

EXPECTED_TITLES = {
    "scorewatch-scores.json": "scorewatch / Scores",
    "scorewatch-judge.json": "scorewatch / Judge usage",
    "scorewatch-live.json": "scorewatch / Live pipeline",
}
SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{")


def _boards() -> dict[str, dict[str, Any]]:
    return {path.name: json.loads(path.read_text("utf-8")) for path in dashboard_files()}


def _known_series() -> set[str]:
    """Every series name a panel may query: exporter series, recording rules, ALERTS."""
    known = {"ALERTS"}
    for name in names.__all__:
        if name.startswith("PROM_"):
            series = getattr(names, name)
            known |= {series, f"{series}_bucket", f"{series}_sum", f"{series}_count"}
    for group in load_yaml(RULES_FILE)["groups"]:
        known |= {rule["record"] for rule in group["rules"] if "record" in rule}
    return known


def test_committed_dashboards_match_the_generator() -> None:
    stale = dashboards_generator().stale_files()
    assert stale == [], f"run python grafana/generate.py: {stale}"


def test_the_three_dashboards_exist_with_unique_uids() -> None:
    boards = _boards()
    assert {name: board["title"] for name, board in boards.items()} == EXPECTED_TITLES
    uids = [board["uid"] for board in boards.values()]
    assert len(set(uids)) == len(uids)
    for board in boards.values():
        assert "scorewatch" in board["tags"]


@pytest.mark.parametrize("file_name", sorted(EXPECTED_TITLES))
def test_dashboard_has_the_four_variables(file_name: str) -> None:
    board = _boards()[file_name]
    variables = {variable["name"]: variable for variable in board["templating"]["list"]}
    assert {"datasource", "scorer", "target", "model"} <= set(variables)
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    for name in ("scorer", "target", "model"):
        variable = variables[name]
        assert variable["type"] == "query"
        assert variable["datasource"]["uid"] == "${datasource}"
        assert variable["includeAll"] and variable["multi"]
        assert variable["allValue"] == ".*"
        assert variable["query"].startswith("label_values(")


@pytest.mark.parametrize("file_name", sorted(EXPECTED_TITLES))
def test_every_panel_has_description_unit_thresholds_and_datasource(file_name: str) -> None:
    board = _boards()[file_name]
    panels = board["panels"]
    assert len(panels) >= 6
    for panel in panels:
        title = panel["title"]
        if panel["type"] == "row":  # a section header: no query, nothing to describe
            assert not panel["collapsed"] and panel["panels"] == [], title
            continue
        assert len(panel.get("description", "")) > 40, title
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, title
        defaults = panel["fieldConfig"]["defaults"]
        assert defaults["thresholds"]["steps"], title
        if panel["type"] != "table":
            assert defaults.get("unit"), f"{title} has no unit"
        assert panel["targets"], title
        for target in panel["targets"]:
            assert target["expr"].strip(), title


def test_dashboard_panels_do_not_overlap() -> None:
    for name, board in _boards().items():
        cells: set[tuple[int, int]] = set()
        for panel in board["panels"]:
            grid = panel["gridPos"]
            assert grid["x"] + grid["w"] <= 24, (name, panel["title"])
            area = {
                (x, y)
                for x in range(grid["x"], grid["x"] + grid["w"])
                for y in range(grid["y"], grid["y"] + grid["h"])
            }
            assert not area & cells, (name, panel["title"])
            cells |= area


def test_issue_panels_are_present() -> None:
    titles = {name: {p["title"] for p in board["panels"]} for name, board in _boards().items()}
    assert {
        "Mean score vs baseline",
        "Score distribution",
        "Pass and fail rate",
        "Failed-run rate",
        "Firing scorewatch alerts",
    } <= titles["scorewatch-scores.json"]
    assert {
        "Judge tokens per second by model and token type",
        "Judge latency p50 / p95",
        "Judge executions and attempts",
        "Failed judge calls by error type",
        "Estimated judge spend per scorer (24h)",
        "Judge vs application tokens",
    } <= titles["scorewatch-judge.json"]
    assert {
        "Live decisions by kind",
        "Queue depth",
        "In flight",
        "Scorer run duration p50 / p95",
        "Step duration p95",
        "Sink errors",
        "Budget: effective sampling rate",
        "Budget: remaining today",
    } <= titles["scorewatch-live.json"]
    heatmap = next(
        p for p in _boards()["scorewatch-scores.json"]["panels"] if p["type"] == "heatmap"
    )
    assert heatmap["targets"][0]["format"] == "heatmap"


def test_the_live_dashboard_shows_every_work_queue_series() -> None:
    board = _boards()["scorewatch-live.json"]
    exprs = " ".join(target["expr"] for _, target in panel_targets(board))
    queue_series = [getattr(names, n) for n in names.__all__ if n.startswith("PROM_QUEUE_")]
    assert len(queue_series) == 6
    for series in queue_series:
        assert f"{series}{{" in exprs, f"no panel shows {series}"
    dead = next(p for p in board["panels"] if p["title"] == "Dead-lettered by reason")
    assert "scorewatch_queue_reason" in dead["targets"][0]["expr"]
    # The backlog thresholds mirror the shipped [queue] max_backlog (the limit is no metric).
    backlog = next(p for p in board["panels"] if p["title"] == "Work queue backlog")
    red = backlog["fieldConfig"]["defaults"]["thresholds"]["steps"][-1]["value"]
    for config in ("scorewatch.scale.toml", "k8s/scale/scorewatch.toml"):
        shipped = load_config(GRAFANA.parent / "deploy" / config).queue.max_backlog
        assert red == shipped == dashboards_generator().QUEUE_MAX_BACKLOG, config


def test_queries_only_use_series_scorewatch_exports_or_records() -> None:
    known = _known_series()
    for name, board in _boards().items():
        exprs = [target["expr"] for _, target in panel_targets(board)]
        exprs += list(variable_queries(board).values())
        for expr in exprs:
            for series in SELECTOR.findall(expr):
                assert series in known, f"{name}: unknown series {series} in {expr}"


def test_the_pass_threshold_values_are_score_bucket_boundaries() -> None:
    board = _boards()["scorewatch-scores.json"]
    variable = next(v for v in board["templating"]["list"] if v["name"] == "pass_threshold")
    boundaries = {repr(bound) for bound in names.SCORE_BUCKETS}
    for option in variable["query"].split(","):
        assert option in boundaries, option


@pytest.mark.needs_binary
def test_every_panel_query_parses_with_promtool(tmp_path: Path) -> None:
    promtool = require_binary("promtool")
    rules = []
    for name, board in _boards().items():
        prefix = "dashboard:" + name.removesuffix(".json").replace("-", "_")
        for index, (panel, target) in enumerate(panel_targets(board)):
            rules.append(
                {
                    "record": f"{prefix}:{index}",
                    "expr": expand_variables(target["expr"]),
                    "labels": {"panel": panel["title"], "ref": target["refId"]},
                }
            )
        for variable, query in variable_queries(board).items():
            selector = re.fullmatch(r"label_values\((.*), *([a-zA-Z_]+)\)", query)
            assert selector, f"{name} variable {variable}: {query}"
            rules.append(
                {
                    "record": f"{prefix}:{variable}",
                    "expr": expand_variables(selector.group(1)),
                }
            )
    rule_file = tmp_path / "panels.yml"
    rule_file.write_text(yaml.safe_dump({"groups": [{"name": "panels", "rules": rules}]}))
    result = run([promtool, "check", "rules", str(rule_file)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(rules)} rules found" in result.stdout


def test_provisioning_points_grafana_at_prometheus_and_the_dashboards() -> None:
    datasources = load_yaml(GRAFANA / "provisioning" / "datasources" / "prometheus.yaml")
    prometheus = next(d for d in datasources["datasources"] if d["type"] == "prometheus")
    assert prometheus["isDefault"] is True
    assert prometheus["url"] == "http://prometheus:9090"
    providers = load_yaml(GRAFANA / "provisioning" / "dashboards" / "scorewatch.yaml")
    provider = providers["providers"][0]
    assert provider["type"] == "file"
    compose = load_yaml(GRAFANA.parent / "deploy" / "compose.yaml")
    mounts = compose["services"]["grafana"]["volumes"]
    assert any(
        m.startswith("../grafana/dashboards:") and m.split(":")[1] == provider["options"]["path"]
        for m in mounts
    ), mounts


def test_score_and_judge_latency_panels_link_exemplars_to_traces() -> None:
    boards = _boards()
    with_exemplars = {
        panel["title"]
        for board in boards.values()
        for panel, target in panel_targets(board)
        if target.get("exemplar") is True
    }
    assert with_exemplars == {"Score distribution", "Judge latency p50 / p95"}
    datasources = load_yaml(GRAFANA / "provisioning" / "datasources" / "prometheus.yaml")
    by_uid = {d["uid"]: d for d in datasources["datasources"]}
    destinations = by_uid["prometheus"]["jsonData"]["exemplarTraceIdDestinations"]
    # The label the exemplars carry (telemetry/prometheus.py), resolved in the trace store.
    assert destinations == [{"name": "trace_id", "datasourceUid": "jaeger"}]
    assert by_uid["jaeger"]["url"] == "http://jaeger:16686"
    compose = load_yaml(GRAFANA.parent / "deploy" / "compose.yaml")
    assert "--enable-feature=exemplar-storage" in compose["services"]["prometheus"]["command"]
    assert "jaeger" in compose["services"]
