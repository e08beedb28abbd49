"""Turning what callers pass to `Scorer.run` into a `ScorerRun`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from random import getrandbits
from typing import Any

from pydantic.alias_generators import to_snake

from ..errors import ScorewatchError
from .errors import INVALID_RUN
from .result import ScorerRun

__all__ = ["check_run", "coerce_run", "new_run_id"]

_RUN_FIELD_NAMES = frozenset(f.name for f in dataclasses.fields(ScorerRun))
_STRING_FIELDS = (
    "run_id",
    "score_source",
    "target",
    "target_scope",
    "target_entity_type",
    "target_trace_id",
    "target_span_id",
    "score_trace_id",
)
_MAPPING_FIELDS = ("target_metadata", "target_correlation_context")


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


_UUID4_MASK = ~((0xF << 76) | (0x3 << 62))
_UUID4_BITS = (0x4 << 76) | (0x2 << 62)


def new_run_id() -> str:
    """A random version-4 UUID string, like `str(uuid.uuid4())` at a fraction of the cost.

    A run id must be unique, not secret: the interpreter's generator (seeded from the OS, and
    reseeded in a forked child) avoids a system call per run, which `uuid4()` makes.
    """
    text = "%032x" % ((getrandbits(128) & _UUID4_MASK) | _UUID4_BITS)
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def check_run(run: ScorerRun, scorer_id: str) -> None:
    """Reject typed run fields of the wrong type, which would make a result that cannot be loaded
    back from its own JSON. `input`, `output` and the other free-form fields are not checked."""
    if (
        run.target is None
        and run.target_trace_id is None
        and run.target_span_id is None
        and run.score_source is None
        and run.target_metadata is None
        and run.target_scope is None
        and run.target_entity_type is None
        and run.target_correlation_context is None
        and run.request_context_keys is None
        and (run.run_id is None or type(run.run_id) is str)
        and run.score_trace_id is None
    ):
        return  # nothing typed to check: the common direct call
    for name in _STRING_FIELDS:
        value = getattr(run, name)
        if value is not None and not isinstance(value, str):
            raise _invalid_run(scorer_id, name, "a string", value)
    for name in _MAPPING_FIELDS:
        value = getattr(run, name)
        if value is not None and not (
            isinstance(value, dict) and all(isinstance(key, str) for key in value)
        ):
            raise _invalid_run(scorer_id, name, "a dict with string keys", value)
    keys = run.request_context_keys
    if keys is not None and not (
        isinstance(keys, list) and all(isinstance(key, str) for key in keys)
    ):
        raise _invalid_run(scorer_id, "request_context_keys", "a list of strings", keys)


def _invalid_run(scorer_id: str, name: str, expected: str, value: Any) -> ScorewatchError:
    return ScorewatchError(
        f"scorer {scorer_id!r}: run field {name!r} must be {expected}, got {type(value).__name__}",
        code=INVALID_RUN,
        details={"scorerId": scorer_id, "field": name},
    )
