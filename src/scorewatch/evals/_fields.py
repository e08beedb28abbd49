"""The plain JSON form of the evaluation reports' flat dataclasses: each field by its own name."""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["field_values"]


def field_values(report: DataclassInstance) -> dict[str, Any]:
    """Every field of `report` under its name, values as they are (unlike `dataclasses.asdict`,
    which deep-copies them: an item's `input` may be anything the caller gave)."""
    return {field.name: getattr(report, field.name) for field in fields(report)}
