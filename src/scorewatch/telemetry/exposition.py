"""A faster Prometheus text-format (0.0.4) encoder for prometheus-client registries.

prometheus-client's `generate_latest` re-validates and re-escapes every label of every sample;
at 10,000 series that alone costs about as much as collecting the metrics. This encoder writes
the same bytes (a test compares them) but renders each distinct label pair once per scrape. It
handles the names Prometheus calls legacy (all of ours, and all the OpenTelemetry exporter
produces); anything else goes to `generate_latest`.
"""

from __future__ import annotations

import re
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.utils import floatToGoString

__all__ = ["CONTENT_TYPE", "render_text"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_TYPE_NAMES = {"info": "gauge", "stateset": "gauge", "gaugehistogram": "histogram"}
_OPENMETRICS_ONLY = ("_created", "_gsum", "_gcount")


class _NotLegacy(Exception):
    pass


def _help(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n")


def _value(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _number(value: float) -> str:
    return str(floatToGoString(value))  # type: ignore[no-untyped-call]


def render_text(registry: CollectorRegistry) -> bytes:
    families = list(registry.collect())
    try:
        return _render(families)
    except _NotLegacy:
        return generate_latest(registry)


def _render(families: list[Metric]) -> bytes:
    pairs: dict[tuple[str, str], str] = {}
    out: list[str] = []

    def line(name: str, labels: dict[str, str], value: float, timestamp: Any) -> str:
        if not _METRIC_NAME.match(name):
            raise _NotLegacy(name)
        rendered = []
        for pair in sorted(labels.items()):
            text = pairs.get(pair)
            if text is None:
                if not _LABEL_NAME.match(pair[0]):
                    raise _NotLegacy(pair[0])
                text = f'{pair[0]}="{_value(pair[1])}"'
                pairs[pair] = text
            rendered.append(text)
        stamp = "" if timestamp is None else f" {int(float(timestamp) * 1000):d}"
        label_text = "{" + ",".join(rendered) + "}" if rendered else ""
        return f"{name}{label_text} {_number(value)}{stamp}\n"

    for metric in families:
        base: str = metric.name
        kind: str = metric.type
        documentation = _help(metric.documentation)
        exposed = (
            base + "_total" if kind == "counter" else base + "_info" if kind == "info" else base
        )
        kind = _TYPE_NAMES.get(kind, "untyped" if kind == "unknown" else kind)
        if not _METRIC_NAME.match(exposed):
            raise _NotLegacy(exposed)
        out.append(f"# HELP {exposed} {documentation}\n# TYPE {exposed} {kind}\n")
        extra: dict[str, list[str]] = {}
        for sample in metric.samples:
            rendered = line(sample.name, sample.labels, sample.value, sample.timestamp)
            for suffix in _OPENMETRICS_ONLY:
                if sample.name == base + suffix:
                    extra.setdefault(suffix, []).append(rendered)
                    break
            else:
                out.append(rendered)
        for suffix, lines in sorted(extra.items()):
            out.append(f"# HELP {base}{suffix} {documentation}\n# TYPE {base}{suffix} gauge\n")
            out.extend(lines)
    return "".join(out).encode("utf-8")
