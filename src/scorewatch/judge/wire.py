"""Base class for models that cross the wire in the reference system's camelCase JSON.

Python code reads snake_case attributes; `model_dump(mode="json", by_alias=True)` gives the
reference system's field names, and validation accepts either spelling. Fields whose value is
None are left out of the dump, because the reference system omits undefined keys.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer
from pydantic.alias_generators import to_camel

__all__ = ["WireModel"]


class WireModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
        ser_json_inf_nan="strings",
        # Validators and serializers are built on first use, not at import: building them for
        # every model costs `import scorewatch` tens of milliseconds.
        defer_build=True,
    )

    @model_serializer(mode="wrap")
    def _omit_none(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {key: value for key, value in data.items() if value is not None}
