"""Turning command-line scorer names into scorers: a prebuilt short name or `module:factory`."""

from __future__ import annotations

from typing import Any

from ..core.scorer import Scorer
from ..errors import ScorewatchError

__all__ = ["import_object", "resolve_scorer"]


def import_object(path: str) -> Any:
    """The object at `package.module:attribute` (the current directory is importable)."""
    from ..server.config.scorer_entries import import_object as import_from_path

    if ":" not in path or path.startswith(":") or path.endswith(":"):
        raise _unknown(f"{path!r} is not an import path of the form 'package.module:attribute'")
    try:
        return import_from_path(path)
    except (ImportError, AttributeError) as exc:
        raise _unknown(f"cannot import {path!r}: {exc}") from exc


def resolve_scorer(name: str, model: str | None, model_options: dict[str, Any]) -> Scorer:
    """A prebuilt scorer by short name (with the judge model), or a zero-argument factory."""
    if ":" in name:
        made = import_object(name)
        scorer = made() if callable(made) and not isinstance(made, Scorer) else made
        if not isinstance(scorer, Scorer):
            raise _unknown(f"{name!r} did not give a Scorer (got {type(scorer).__name__})")
        return scorer
    from ..scorers import registry

    built: Scorer = registry.build_scorer(name, model=model, model_options=model_options or None)
    return built


def _unknown(message: str) -> ScorewatchError:
    # The registry's code; imported here, not at the top, because the registry imports every
    # prebuilt scorer and `scorewatch eval --help` should not.
    from ..scorers.registry import UNKNOWN_SCORER

    return ScorewatchError(message, code=UNKNOWN_SCORER)
