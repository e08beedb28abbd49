"""Turning command-line scorer names into scorers: a prebuilt short name or `module:factory`."""

from __future__ import annotations

from typing import Any

from ..core.scorer import Scorer
from ..errors import ScorewatchError

__all__ = ["UNKNOWN_SCORER", "import_object", "resolve_scorer"]

UNKNOWN_SCORER = "SCOREWATCH_UNKNOWN_SCORER"


def import_object(path: str) -> Any:
    """The object at `package.module:attribute` (the current directory is importable)."""
    from ..server.scorers import import_object as import_from_path

    if ":" not in path or path.startswith(":") or path.endswith(":"):
        raise ScorewatchError(
            f"{path!r} is not an import path of the form 'package.module:attribute'",
            code=UNKNOWN_SCORER,
        )
    try:
        return import_from_path(path)
    except (ImportError, AttributeError) as exc:
        raise ScorewatchError(f"cannot import {path!r}: {exc}", code=UNKNOWN_SCORER) from exc


def resolve_scorer(name: str, model: str | None, model_options: dict[str, Any]) -> Scorer:
    """A prebuilt scorer by short name (with the judge model), or a zero-argument factory."""
    if ":" in name:
        made = import_object(name)
        scorer = made() if callable(made) and not isinstance(made, Scorer) else made
        if not isinstance(scorer, Scorer):
            raise ScorewatchError(
                f"{name!r} did not give a Scorer (got {type(scorer).__name__})",
                code=UNKNOWN_SCORER,
            )
        return scorer
    from ..scorers import registry

    built: Scorer = registry.build_scorer(name, model=model, model_options=model_options or None)
    return built
