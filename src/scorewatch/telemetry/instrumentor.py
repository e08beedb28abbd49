"""`opentelemetry-instrument` support: the scorewatch instrumentor and its launcher option.

    opentelemetry-instrument python app.py              # scorer runs in app.py are traced
    opentelemetry-instrument scorewatch serve --config scorewatch.toml

`ScorewatchInstrumentor` is registered under the `opentelemetry_instrumentor` entry point, like
the contrib instrumentations: auto-instrumentation calls it after setting up the SDK providers,
and it turns on `instrument()` with them (spans, metrics and evaluation events of every scorer
run). `OTEL_PYTHON_DISABLED_INSTRUMENTATIONS=scorewatch` leaves it off. This module needs
`opentelemetry-instrumentation`, which `opentelemetry-instrument` brings.

`OTEL_PYTHON_CONFIG` exists for the launcher's argument parser (entry point group
`opentelemetry_environment_variables`): `opentelemetry-instrument` turns each `OTEL_*` name into an
option of its own and lets argparse accept unambiguous prefixes, so `--config` (scorewatch's
option, after the command) was rejected as an ambiguous prefix of `--configurator` and
`--config_file`. With an exact `--config` option known to the launcher, `--config FILE` after the
command is passed to it untouched. scorewatch reads no such variable.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Final

# The package declares no `__all__` export of it, and its class is untyped.
from opentelemetry.instrumentation.instrumentor import (  # type: ignore[attr-defined]
    BaseInstrumentor,
)

from .setup import instrument, uninstrument

__all__ = ["OTEL_PYTHON_CONFIG", "ScorewatchInstrumentor"]

OTEL_PYTHON_CONFIG: Final = "OTEL_PYTHON_CONFIG"


class ScorewatchInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Instruments scorewatch's scorer runs with the process's (or the given) providers.

    Keyword arguments: `tracer_provider`, `meter_provider`, `logger_provider` (default: the
    global ones) and `capture_content` (default: the environment).
    """

    def instrumentation_dependencies(self) -> Collection[str]:
        return ("scorewatch",)

    def _instrument(self, **kwargs: Any) -> None:
        instrument(
            tracer_provider=kwargs.get("tracer_provider"),
            meter_provider=kwargs.get("meter_provider"),
            logger_provider=kwargs.get("logger_provider"),
            capture_content=kwargs.get("capture_content"),
        )

    def _uninstrument(self, **kwargs: Any) -> None:
        uninstrument()
