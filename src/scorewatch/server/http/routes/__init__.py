"""The service's endpoints, one module per concern."""

from __future__ import annotations

from . import probes, scorers, scores

__all__ = ["probes", "scorers", "scores"]
