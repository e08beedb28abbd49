"""The deploy bundle: compose, Dockerfile, collector, Prometheus, Alertmanager and kustomize files
parse, agree with each other, and reference only files that exist."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from binary_support import require_binary
from deploy_support import DEPLOY, PROMETHEUS_DIR, ROOT, load_yaml, load_yaml_documents, run
from scorewatch.server.config.file import load_config
from scorewatch.server.config.scorer_entries import build_scorers

pytestmark = pytest.mark.integration

K8S = DEPLOY / "k8s"
COMPOSE_SERVICES = {
    "scorewatch",
    "otel-collector",
    "prometheus",
    "alertmanager",
    "grafana",
    "jaeger",
    "worker",
    "redis",
    "postgres",
}


def _compose() -> dict[str, Any]:
    compose = load_yaml(DEPLOY / "compose.yaml")
    assert isinstance(compose, dict)
    return compose


def _host_path(volume: str) -> Path | None:
    source = volume.split(":")[0]
    if not source.startswith("."):
        return None  # a named volume
    return (DEPLOY / source).resolve()


def test_compose_runs_the_whole_stack() -> None:
    services = _compose()["services"]
    assert set(services) == COMPOSE_SERVICES
    local_image = services["scorewatch"]["image"]
    for name, service in services.items():
        if service["image"] != local_image:  # scorewatch's own, built from this checkout
            assert re.search(r":v?\d", service["image"]), f"{name}: pin the image version"
        for port in service.get("ports", []):
            assert port.startswith("127.0.0.1:"), f"{name} publishes {port} beyond localhost"


def test_compose_references_only_files_that_exist() -> None:
    compose = _compose()
    checked = 0
    for name, service in compose["services"].items():
        for volume in service.get("volumes", []):
            path = _host_path(volume)
            if path is None:
                assert volume.split(":")[0] in compose["volumes"], f"{name}: {volume}"
                continue
            assert path.exists(), f"{name}: {volume} -> {path} does not exist"
            checked += 1
    assert checked >= 8
    build = compose["services"]["scorewatch"]["build"]
    context = (DEPLOY / build["context"]).resolve()
    assert context == ROOT
    assert (context / build["dockerfile"]).is_file()


def _mounted_config(service: dict[str, Any]) -> Path:
    """The host file a compose service mounts as its scorewatch.toml."""
    (mount,) = [
        v for v in service["volumes"] if v.split(":")[1] == "/etc/scorewatch/scorewatch.toml"
    ]
    path = _host_path(mount)
    assert path is not None and path.is_file(), mount
    assert service["command"][-1] == "/etc/scorewatch/scorewatch.toml" or (
        "/etc/scorewatch/scorewatch.toml" in service["command"]
    )
    return path


def test_compose_wires_the_services_together() -> None:
    services = _compose()["services"]
    for name in ("scorewatch", "worker"):
        env = services[name]["environment"]
        assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel-collector:4318"
    prometheus = load_yaml(PROMETHEUS_DIR / "prometheus.yml")
    jobs = {job["job_name"]: job for job in prometheus["scrape_configs"]}
    targets = {
        name: job["static_configs"][0]["targets"]
        for name, job in jobs.items()
        if "static_configs" in job
    }
    config = load_config(_mounted_config(services["scorewatch"]))
    listen_port = config.server.listen.rsplit(":", 1)[1]
    assert targets["scorewatch"] == [f"scorewatch:{listen_port}"]
    assert services["scorewatch"]["ports"] == [f"127.0.0.1:{listen_port}:{listen_port}"]
    # Every worker replica is a target of its own: DNS discovery of the service name, on the
    # port the worker serves its metrics on.
    worker_command = services["worker"]["command"]
    worker_port = int(worker_command[worker_command.index("--metrics-listen") + 1].split(":")[1])
    (discovery,) = jobs["scorewatch-worker"]["dns_sd_configs"]
    assert discovery["names"] == ["worker"] and discovery["type"] == "A"
    assert discovery["port"] == worker_port
    collector = load_yaml(DEPLOY / "otel-collector" / "config.yaml")
    exporter_port = collector["exporters"]["prometheus"]["endpoint"].rsplit(":", 1)[1]
    assert targets["otel-collector"] == [f"otel-collector:{exporter_port}"]
    assert prometheus["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"] == [
        "alertmanager:9093"
    ]
    assert collector["exporters"]["otlp/traces"]["endpoint"].split(":")[0] in services
    # Prometheus loads the rule files compose mounts.
    mounts = services["prometheus"]["volumes"]
    assert "./prometheus/rules:/etc/prometheus/rules:ro" in mounts
    assert prometheus["rule_files"] == ["rules/*.yml"]


def test_dockerfile_copies_only_files_that_exist() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text("utf-8")
    copies = re.findall(r"^COPY (?!--from)(.+)$", dockerfile, flags=re.MULTILINE)
    assert copies
    for line in copies:
        *sources, _destination = line.split()
        for source in sources:
            assert (ROOT / source).exists(), f"Dockerfile copies missing {source}"
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["scripts"]
    assert 'ENTRYPOINT ["scorewatch"]' in dockerfile and "scorewatch" in scripts


@pytest.mark.parametrize("path", [DEPLOY / "scorewatch.toml", K8S / "scorewatch.toml"])
def test_shipped_service_configs_are_valid(path: Path) -> None:
    config = load_config(path)
    assert not config.server.listen.startswith("127.")  # reachable from other containers
    assert config.server.auth_token_env == "SCOREWATCH_TOKEN"
    assert config.telemetry.prometheus is True
    assert "api_key" not in path.read_text("utf-8").replace("api_key_env", "")
    # The prebuilt scorers and their options exist: the service would start with this file.
    built = build_scorers(config)
    assert [scorer.id for scorer in built] == [spec.id for spec in config.scorers]


def test_collector_pipelines_use_only_defined_components() -> None:
    collector = load_yaml(DEPLOY / "otel-collector" / "config.yaml")
    pipelines = collector["service"]["pipelines"]
    assert set(pipelines) == {"traces", "traces/scorewatch", "metrics", "logs"}
    for name, pipeline in pipelines.items():
        for kind in ("receivers", "processors", "exporters"):
            for component in pipeline.get(kind, []):
                assert component in collector[kind], f"{name}: undefined {kind[:-1]} {component}"
    assert "otlp" in pipelines["metrics"]["receivers"]
    assert pipelines["metrics"]["exporters"] == ["prometheus"]
    assert pipelines["traces"]["exporters"] == ["otlp/traces"]


def _kustomize_resources() -> dict[str, dict[str, Any]]:
    kustomization = load_yaml(K8S / "kustomization.yaml")
    resources: dict[str, dict[str, Any]] = {}
    for file_name in kustomization["resources"]:
        path = K8S / file_name
        assert path.is_file(), f"kustomization lists missing {file_name}"
        for document in load_yaml_documents(path):
            # The first of a kind: service.yaml lists the main Service before the traces one.
            resources.setdefault(document["kind"], document)
    return resources


def test_kustomization_references_only_files_that_exist() -> None:
    kustomization = load_yaml(K8S / "kustomization.yaml")
    for generator in kustomization["configMapGenerator"]:
        for file_name in generator["files"]:
            assert (K8S / file_name).is_file(), f"configMapGenerator lists missing {file_name}"
    kinds = set(_kustomize_resources())
    assert {
        "Deployment",
        "Service",
        "ServiceMonitor",
        "PrometheusRule",
        "HorizontalPodAutoscaler",
    } <= kinds


def test_kubernetes_objects_point_at_each_other() -> None:
    resources = _kustomize_resources()
    deployment, service = resources["Deployment"], resources["Service"]
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    assert service["spec"]["selector"].items() <= pod_labels.items()

    container = deployment["spec"]["template"]["spec"]["containers"][0]
    port_names = {port["name"]: port["containerPort"] for port in container["ports"]}
    assert service["spec"]["ports"][0]["targetPort"] in port_names
    listen_port = int(load_config(K8S / "scorewatch.toml").server.listen.rsplit(":", 1)[1])
    assert port_names["http"] == listen_port

    monitor = resources["ServiceMonitor"]
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    assert monitor["spec"]["endpoints"][0]["port"] == service["spec"]["ports"][0]["name"]
    assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"

    hpa = resources["HorizontalPodAutoscaler"]
    assert hpa["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    assert hpa["spec"]["minReplicas"] >= 2

    generated = {g["name"] for g in load_yaml(K8S / "kustomization.yaml")["configMapGenerator"]}
    volumes = deployment["spec"]["template"]["spec"]["volumes"]
    assert {v["configMap"]["name"] for v in volumes if "configMap" in v} <= generated
    config_mount = next(m for m in container["volumeMounts"] if m["name"] == "config")
    assert container["args"][-1] == f"{config_mount['mountPath']}/scorewatch.toml"

    grace = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace > load_config(K8S / "scorewatch.toml").server.shutdown_timeout


def test_collector_fans_a_copy_of_agent_traces_out_to_scorewatch() -> None:
    services = _compose()["services"]
    collector = load_yaml(DEPLOY / "otel-collector" / "config.yaml")
    exporter = collector["exporters"]["otlphttp/scorewatch"]
    host, port = exporter["endpoint"].removeprefix("http://").split(":")
    assert host in services
    config = load_config(_mounted_config(services[host]))
    assert config.traces is not None and config.traces.port == int(port)
    # The token the exporter sends is the one the service checks, from the same variable.
    assert config.server.auth_token_env == "SCOREWATCH_TOKEN"
    assert exporter["headers"]["Authorization"] == "Bearer ${env:SCOREWATCH_TOKEN}"
    assert "SCOREWATCH_TOKEN" in services["otel-collector"]["environment"]
    pipelines = collector["service"]["pipelines"]
    fan_out = pipelines["traces/scorewatch"]
    assert fan_out["receivers"] == pipelines["traces"]["receivers"]  # the same agent traces
    assert fan_out["exporters"] == ["otlphttp/scorewatch"]
    # scorewatch's own spans are dropped on the way, or its judge calls would be scored.
    dropping = [p for p in fan_out["processors"] if p.startswith("filter/")]
    (condition,) = [c for p in dropping for c in collector["processors"][p]["traces"]["span"]]
    assert "service.name" in condition and "scorewatch" in condition
    assert config.telemetry.service_name.startswith("scorewatch")
    batch = collector["processors"][fan_out["processors"][-1]]
    assert batch["send_batch_max_size"] * 2048 <= config.server.max_body_bytes


def test_kubernetes_serves_traces_on_the_port_its_service_names() -> None:
    deployment = _kustomize_resources()["Deployment"]
    services = {d["metadata"]["name"]: d for d in load_yaml_documents(K8S / "service.yaml")}
    traces_service = services["scorewatch-traces"]
    (port,) = traces_service["spec"]["ports"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    port_names = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert port_names[port["targetPort"]] == port["port"]
    assert traces_service["spec"]["sessionAffinity"] == "ClientIP"  # a trace stays on one pod
    for path in (K8S / "scorewatch.toml", K8S / "scale" / "scorewatch.toml"):
        traces = load_config(path).traces
        assert traces is not None and traces.port == port["port"], path


@pytest.mark.needs_binary
def test_prometheus_config_passes_promtool() -> None:
    promtool = require_binary("promtool")
    result = run([promtool, "check", "config", str(PROMETHEUS_DIR / "prometheus.yml")])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 21 rules found" in result.stdout  # the rule files it globs were loaded


@pytest.mark.needs_binary
def test_alertmanager_config_passes_amtool() -> None:
    amtool = require_binary("amtool")
    result = run([amtool, "check-config", str(DEPLOY / "alertmanager" / "alertmanager.yml")])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@pytest.mark.needs_binary
def test_alertmanager_routes_the_score_drop_to_the_oncall_receiver() -> None:
    amtool = require_binary("amtool")
    config = str(DEPLOY / "alertmanager" / "alertmanager.yml")
    cases = {
        "alertname=ScorewatchScoreDrop severity=critical": "quality-oncall",
        "alertname=ScorewatchJudgeSpendHigh severity=warning": "llm-budget",
        "alertname=ScorewatchLiveDrops severity=warning": "platform-team",
        "alertname=ScorewatchQueueDeadLetters severity=warning": "platform-team",
        "alertname=ScorewatchQueueBacklogHigh severity=warning": "platform-team",
        "alertname=SomethingElse severity=warning": "quality-team",
    }
    for labels, receiver in cases.items():
        result = run([amtool, "config", "routes", "test", "--config.file", config, *labels.split()])
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stdout.strip() == receiver, (labels, result.stdout)
