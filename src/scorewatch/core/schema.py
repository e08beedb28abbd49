"""Output schemas of prompt steps: turning the judge's text into a validated JSON object.

A schema is a pydantic model class or a JSON-schema dict. Validation errors are summarized by
location and kind only: the judge's text (evaluated content) never goes into an error message.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from ..judge.errors import StructuredOutputError
from .answer_json import parse_json_reply

__all__ = [
    "SCORE_SCHEMA",
    "OutputSchema",
    "closed_objects",
    "compile_schema",
    "is_finite_number",
    "parse_json_reply",
    "validate_score",
]

OutputSchema = type[BaseModel] | dict[str, Any]
Validator = Callable[[Any], Any]

SCORE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"score": {"type": "number"}},
    "required": ["score"],
    "additionalProperties": False,
}

_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions")
_SUBSCHEMAS = ("items", "not", "if", "then", "else", "additionalItems")


def closed_objects(schema: Any) -> Any:
    """A copy of `schema` in which every object schema forbids unlisted members
    (`additionalProperties: false`), as the reference's schemas do and OpenAI's strict structured
    outputs require. An object schema that already says what extra members may be is kept."""
    if isinstance(schema, list):
        return [closed_objects(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    closed: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _SUBSCHEMA_MAPS and isinstance(value, dict):
            closed[key] = {name: closed_objects(sub) for name, sub in value.items()}
        elif key in _SUBSCHEMA_LISTS or key in _SUBSCHEMAS:
            closed[key] = closed_objects(value)
        else:
            closed[key] = value
    if (schema.get("type") == "object" or "properties" in schema) and (
        "additionalProperties" not in schema
    ):
        closed["additionalProperties"] = False
    return closed


def is_finite_number(value: Any) -> bool:
    """A real, finite number that is not a bool (numpy scalars included)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer too large for a float
        return False


def validate_score(value: Any) -> int | float:
    if not isinstance(value, dict) or not is_finite_number(value.get("score")):
        raise StructuredOutputError(
            "the judge's answer has no numeric 'score'",
            code="STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED",
        )
    score = value["score"]
    # `{"score": 1}` stays the int 1, as the judge wrote it.
    return int(score) if isinstance(score, numbers.Integral) else float(score)


def compile_schema(schema: Any) -> tuple[dict[str, Any], Validator]:
    """The JSON schema to send and the validator of replies, or ValueError if not a schema."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        model = schema

        def validate_model(value: Any) -> Any:
            # Strictly, on the JSON text, as the reference's schemas check a parsed answer: a
            # string is no number or boolean (`"0.7"`, `"true"` fail, then the fallback call
            # answers); a whole number is an integer whichever way it is written (`1.0`).
            try:
                text = json.dumps(_whole_numbers_as_ints(value))
                validated = model.model_validate_json(text, strict=True)
            except ValidationError as exc:
                raise _schema_error(_pydantic_summary(exc)) from None
            except RecursionError:
                raise _schema_error("<root>: nested too deeply") from None
            return validated.model_dump(mode="json", by_alias=True)

        return closed_objects(model.model_json_schema()), validate_model
    if isinstance(schema, dict):
        from jsonschema import exceptions, validators

        cls = validators.validator_for(schema)
        try:
            cls.check_schema(schema)
        except exceptions.SchemaError as exc:
            raise ValueError(f"not a valid JSON schema: {exc.message}") from None
        checker = cls(schema)

        def validate_dict(value: Any) -> Any:
            errors = sorted(checker.iter_errors(value), key=lambda e: list(e.absolute_path))
            if errors:
                where = "; ".join(
                    f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: fails '{e.validator}'"
                    for e in errors[:5]
                )
                raise _schema_error(where)
            return value

        return closed_objects(schema), validate_dict
    raise ValueError(
        f"expected a pydantic model class or a JSON-schema dict, got {type(schema).__name__}"
    )


def _whole_numbers_as_ints(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _whole_numbers_as_ints(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_whole_numbers_as_ints(item) for item in value]
    return value


def _schema_error(summary: str) -> StructuredOutputError:
    return StructuredOutputError(
        f"the judge's answer does not match the output schema ({summary})",
        code="STRUCTURED_OUTPUT_SCHEMA_VALIDATION_FAILED",
    )


def _pydantic_summary(exc: ValidationError) -> str:
    parts = [
        f"{'.'.join(map(str, err['loc'])) or '<root>'}: {err['type']}"
        for err in exc.errors(include_input=False, include_url=False)[:5]
    ]
    return "; ".join(parts)
