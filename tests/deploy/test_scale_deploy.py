"""The scale-out deploy pieces: Redis, PostgreSQL and workers in compose.yaml, the `scale`
kustomize component of deploy/k8s, and the configs they mount, parse and agree with each other."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from deploy_support import DEPLOY, load_yaml, load_yaml_documents
from scorewatch.server.config.file import load_config
from scorewatch.server.config.scorer_entries import build_scorers

pytestmark = pytest.mark.unit

K8S = DEPLOY / "k8s"
SCALE = K8S / "scale"
SCALE_CONFIGS = [DEPLOY / "scorewatch.scale.toml", SCALE / "scorewatch.toml"]


@pytest.mark.parametrize("path", SCALE_CONFIGS)
def test_scale_configs_use_the_queue_and_postgres_from_the_environment(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = load_config(path)
    assert config.queue.url is None and config.queue.url_env == "SCOREWATCH_QUEUE_URL"
    assert config.sinks.sqlite is False and config.sinks.postgres_env == "SCOREWATCH_POSTGRES_DSN"
    assert "password=" not in path.read_text("utf-8").lower()
    monkeypatch.setenv("SCOREWATCH_QUEUE_URL", "redis://redis:6379/0")
    assert config.queue.resolved_url() == "redis://redis:6379/0"
    assert [s.id for s in build_scorers(config)] == [spec.id for spec in config.scorers]


def _compose_services() -> dict[str, Any]:
    services = load_yaml(DEPLOY / "compose.yaml")["services"]
    assert isinstance(services, dict)
    return services


def test_compose_runs_serve_on_the_queue_with_redis_postgres_and_workers() -> None:
    services = _compose_services()
    assert {"scorewatch", "worker", "redis", "postgres"} <= set(services)
    worker, serve = services["worker"], services["scorewatch"]
    assert worker["command"][0] == "worker" and serve["command"][0] == "serve"
    assert worker["image"] == serve["image"] and "build" in serve  # the image serve builds
    # Scaled independently: the workers have their own replica count, serve has none.
    assert worker["deploy"]["replicas"] >= 2 and "deploy" not in serve
    for name in ("scorewatch", "worker"):
        env = services[name]["environment"]
        assert env["SCOREWATCH_QUEUE_URL"].split("//")[1].split(":")[0] in services
        assert "host=postgres " in env["SCOREWATCH_POSTGRES_DSN"]
        assert "${POSTGRES_PASSWORD" in env["SCOREWATCH_POSTGRES_DSN"]  # never in the file
        (volume,) = services[name]["volumes"]
        source, target = volume.split(":")[:2]
        assert (DEPLOY / source).resolve() == SCALE_CONFIGS[0]
        assert target == "/etc/scorewatch/scorewatch.toml" and target in services[name]["command"]
        # Neither starts before Redis and PostgreSQL answer their health checks.
        for backend in ("redis", "postgres"):
            assert services[name]["depends_on"][backend]["condition"] == "service_healthy"
            assert services[backend]["healthcheck"]["test"]
    assert "--appendonly" in services["redis"]["command"]
    assert services["postgres"]["environment"]["POSTGRES_PASSWORD"].startswith("${")
    for service in services.values():
        for port in service.get("ports", []):
            assert port.startswith("127.0.0.1:")
    assert not DEPLOY.joinpath("compose.scale.yaml").exists()  # folded into compose.yaml


def _component() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    component = load_yaml(SCALE / "kustomization.yaml")
    assert component["kind"] == "Component"
    documents: list[dict[str, Any]] = []
    for name in component["resources"]:
        assert (SCALE / name).is_file(), f"the component lists missing {name}"
        documents += load_yaml_documents(SCALE / name)
    return component, documents


def test_kustomize_base_includes_the_scale_component() -> None:
    base = load_yaml(K8S / "kustomization.yaml")
    assert "scale" in base["components"]
    component, _documents = _component()
    for patch in component["patches"]:
        assert (SCALE / patch["path"]).is_file()
    (generator,) = component["configMapGenerator"]
    assert generator["behavior"] == "replace"
    assert generator["name"] in {g["name"] for g in base["configMapGenerator"]}
    assert all((SCALE / f).is_file() for f in generator["files"])


def _env(container: dict[str, Any]) -> dict[str, str]:
    return {item["name"]: item.get("value", "<secret>") for item in container["env"]}


def test_worker_deployment_scales_independently_and_reaches_redis_and_postgres() -> None:
    _component_doc, documents = _component()
    by_kind_name = {(d["kind"], d["metadata"]["name"]): d for d in documents}
    worker = by_kind_name[("Deployment", "scorewatch-worker")]
    serve = load_yaml(K8S / "deployment.yaml")
    worker_labels = worker["spec"]["selector"]["matchLabels"]
    assert worker_labels != serve["spec"]["selector"]["matchLabels"]
    assert worker_labels.items() <= worker["spec"]["template"]["metadata"]["labels"].items()
    hpa = by_kind_name[("HorizontalPodAutoscaler", "scorewatch-worker")]
    assert hpa["spec"]["scaleTargetRef"]["name"] == "scorewatch-worker"

    (container,) = worker["spec"]["template"]["spec"]["containers"]
    assert container["args"][0] == "worker"
    config_mount = next(m for m in container["volumeMounts"] if m["name"] == "config")
    assert f"{config_mount['mountPath']}/scorewatch.toml" in container["args"]
    config = load_config(SCALE / "scorewatch.toml")
    grace = worker["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace > config.server.shutdown_timeout

    services = {d["metadata"]["name"]: d for d in documents if d["kind"] == "Service"}
    patch = load_yaml(SCALE / "serve-queue-patch.yaml")
    (serve_container,) = patch["spec"]["template"]["spec"]["containers"]
    for env in (_env(container), _env(serve_container)):
        redis_host = env["SCOREWATCH_QUEUE_URL"].split("//")[1].split(":")[0]
        assert redis_host in services
        dsn_host = env["SCOREWATCH_POSTGRES_DSN"].split("host=")[1].split()[0]
        assert dsn_host in services
        assert "password=$(POSTGRES_PASSWORD)" in env["SCOREWATCH_POSTGRES_DSN"]
        names = list(env)
        assert names.index("POSTGRES_PASSWORD") < names.index("SCOREWATCH_POSTGRES_DSN")
    for name in ("scorewatch-redis", "scorewatch-postgres"):
        statefulset = by_kind_name[("StatefulSet", name)]
        selector = services[name]["spec"]["selector"]
        assert selector.items() <= statefulset["spec"]["template"]["metadata"]["labels"].items()
    monitor = by_kind_name[("PodMonitor", "scorewatch-worker")]
    assert monitor["spec"]["selector"]["matchLabels"] == worker_labels
    ports = {p["name"] for p in container["ports"]}
    assert monitor["spec"]["podMetricsEndpoints"][0]["port"] in ports
