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

__all__ = [
    "SCORE_SCHEMA",
    "OutputSchema",
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
}


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
            try:
                return model.model_validate(value).model_dump(mode="json", by_alias=True)
            except ValidationError as exc:
                raise _schema_error(_pydantic_summary(exc)) from None

        return model.model_json_schema(), validate_model
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

        return schema, validate_dict
    raise ValueError(
        f"expected a pydantic model class or a JSON-schema dict, got {type(schema).__name__}"
    )


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


class _NotJsonNumber(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    # Python's json accepts NaN and Infinity; JSON (and the reference system's JSON.parse) does not,
    # and a record holding them would not serialize as JSON.
    raise _NotJsonNumber(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotJsonNumber("a number is out of the float range")
    return value


def parse_json_reply(text: str, finish_reason: str | None) -> Any:
    """The JSON object in a judge reply; tolerates a markdown fence around it."""
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        if body.rstrip().endswith("```"):
            body = body.rstrip()[:-3]
    truncated = finish_reason == "length"
    try:
        value = json.loads(body, parse_constant=_reject_constant, parse_float=_finite_float)
    except _NotJsonNumber as exc:
        raise StructuredOutputError(
            f"the judge's answer is not valid JSON ({exc})",
            code="STRUCTURED_OUTPUT_JSON_PARSE_FAILED",
        ) from None
    except json.JSONDecodeError as exc:
        if truncated:
            raise StructuredOutputError(
                "the judge's answer was cut off (finish_reason=length) before the JSON ended",
                code="STRUCTURED_OUTPUT_TRUNCATED",
                finish_reason="length",
            ) from None
        raise StructuredOutputError(
            f"the judge's answer is not valid JSON ({exc.msg} at line {exc.lineno} "
            f"column {exc.colno})",
            code="STRUCTURED_OUTPUT_JSON_PARSE_FAILED",
        ) from None
    if value is None:
        raise StructuredOutputError(
            "the judge's answer is JSON null, not an object",
            code="STRUCTURED_OUTPUT_OBJECT_UNDEFINED",
        )
    return value
