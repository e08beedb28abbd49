"""The package's one version string: pyproject.toml reads it at build time (hatch), the CLI,
the server and the telemetry instrumentation scope import it from here."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
