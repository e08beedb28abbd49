"""Turning what callers pass to `Scorer.run` into a `ScorerRun`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from pydantic.alias_generators import to_snake

from .result import ScorerRun

__all__ = ["coerce_run"]

_RUN_FIELD_NAMES = frozenset(f.name for f in dataclasses.fields(ScorerRun))


def coerce_run(run: ScorerRun | Mapping[str, Any]) -> tuple[ScorerRun, bool]:
    """A fresh `ScorerRun` (the caller's object is never mutated) and whether to emit the score.

    A mapping may use snake_case or the reference system's camelCase keys. Its `_internal` key is
    framework-only: it is read (`emitObservabilityScore`) and dropped, never reaching the result.
    """
    if isinstance(run, ScorerRun):
        return dataclasses.replace(run), True
    if not isinstance(run, Mapping):
        raise TypeError(f"a scorer run is a ScorerRun or a mapping, got {type(run).__name__}")
    emit = True
    fields: dict[str, Any] = {}
    for key, value in run.items():
        if key == "_internal":
            if isinstance(value, Mapping) and value.get("emitObservabilityScore") is False:
                emit = False
            continue
        name = to_snake(key)
        if name not in _RUN_FIELD_NAMES:
            known = ", ".join(sorted(_RUN_FIELD_NAMES))
            raise TypeError(f"unknown scorer run field {key!r}; known fields: {known}")
        fields[name] = value
    if "output" not in fields:
        fields["output"] = None
    return ScorerRun(**fields), emit
