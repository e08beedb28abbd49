"""Package attributes imported on first access, so that importing a package stays cheap."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

__all__ = ["lazy_attribute"]


def lazy_attribute(
    namespace: dict[str, Any], lazy: Mapping[str, tuple[str, str | None]], name: str
) -> Any:
    """`name` of the package whose `globals()` is `namespace`, for its module `__getattr__`.

    `lazy` maps a name to (module, attribute), the module relative to the package and the
    attribute None for the module itself. The value is kept in `namespace`, so the import runs
    once; any other name is an AttributeError, as Python expects of `__getattr__`.
    """
    package = namespace["__name__"]
    try:
        module_name, attribute = lazy[name]
    except KeyError:
        raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
    module = importlib.import_module(module_name, package)
    value = module if attribute is None else getattr(module, attribute)
    namespace[name] = value
    return value
