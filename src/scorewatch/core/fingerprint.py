"""A scorer's version fingerprint: a short hash of everything that decides its scores.

Two definitions that score alike get the same fingerprint in every process and on every machine;
a change to any input gives a new one. The inputs, as `describe_scorer` lays them out:

- the scorer's id and its declared `version` (if any);
- each step's name and kind, and what it runs: a function step's function; a prompt step's
  prompt builder (`create_prompt`), the JSON schema its answer must fit, and its judge: the
  model (id, provider, request options that change answers such as `temperature` or `seed`)
  and the instructions and JSON-prompt placement;
- `prepare_run`, which shapes what every step sees;
- the scorewatch version, when any of those functions is scorewatch's own (a prebuilt scorer).

A function is described by its source text (a lambda by its own text, not the line around it),
the values it closes over and its default arguments (a prebuilt scorer's options live there), and
the module-level constants and functions of its own package that it reads by name (a prompt
template kept in a module constant). Without source (a function typed into an interactive
session) its bytecode stands in, which is stable for one Python version. What is NOT covered: an
object's state other than plain data, dataclasses and pydantic models (other objects count by
their type), module attributes read through a module (`templates.PROMPT`), and code of other
packages than the function's own. The name, description, scale, direction and categories are
not inputs: they label scores, they do not decide them (a rubric-label scorer's categories are
its choices, which its steps close over, so they count there). Nor are keys, endpoints,
timeouts and retries, wherever they appear (mapping keys such as `api_key`, `api_base`,
`timeout`): a key rotation or a new proxy is the same scorer.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import hashlib
import inspect
import json
import linecache
import math
import re
import types
from collections.abc import Mapping
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel

from .._version import __version__

if TYPE_CHECKING:
    from .scorer import ResolvedJudge, Scorer, Step

__all__ = ["FINGERPRINT_LENGTH", "answer_options", "describe_scorer", "fingerprint_of"]

FINGERPRINT_LENGTH: Final = 12
"""Hex digits of the SHA-256 digest kept: 48 bits, plenty for the versions of one scorer."""

# Request options that reach the provider but do not change what the judge answers: where and
# how to connect, how long to wait, how often to retry. Secret-looking keys are never hashed.
_TRANSPORT_OPTIONS: Final = frozenset(
    {
        "api_base",
        "base_url",
        "api_version",
        "timeout",
        "stream_timeout",
        "max_retries",
        "num_retries",
        "retry_policy",
        "transport",
        "stream",
        "headers",
        "extra_headers",
        "organization",
        "project",
        "proxy",
        "aws_region_name",
        "vertex_location",
        "vertex_project",
    }
)
_SECRET_WORD: Final = re.compile(
    r"(^|_)(key|api_?key|secret|token|password|passwd|credentials?|auth\w*)($|_)"
)
_MAX_DEPTH: Final = 8


def fingerprint_of(description: Any) -> str:
    """The first `FINGERPRINT_LENGTH` hex digits of the SHA-256 of `description`'s canonical
    JSON (sorted keys, no whitespace)."""
    text = json.dumps(description, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:FINGERPRINT_LENGTH]


def describe_scorer(scorer: Scorer) -> dict[str, Any]:
    """The fingerprint's inputs as plain JSON data (see the module docstring)."""
    walk = _Walk()
    description: dict[str, Any] = {
        "id": scorer.id,
        "version": scorer.declared_version,
        "steps": [_describe_step(step, walk) for step in scorer.steps],
        "prepare_run": walk.value(scorer.prepare_run, 0),
    }
    if walk.own_code:
        description["scorewatch"] = __version__
    return description


def _describe_step(step: Step, walk: _Walk) -> dict[str, Any]:
    described: dict[str, Any] = {"name": step.name, "kind": step.type}
    if step.function is not None:
        described["function"] = walk.value(step.function, 0)
    prompt = step.prompt
    if prompt is not None:
        described["prompt"] = walk.value(prompt.create_prompt, 0)
        described["schema"] = walk.value(step.schema, 0)
        described["judge"] = _describe_judge(step.judge, walk)
    return described


def _describe_judge(judge: ResolvedJudge | None, walk: _Walk) -> dict[str, Any] | None:
    if judge is None:
        return None
    return {
        "model": walk.value(judge.model, 0),
        "instructions": judge.instructions,
        "json_prompt_injection": judge.json_prompt_injection,
    }


def answer_options(options: Mapping[Any, Any]) -> dict[str, Any]:
    """A mapping without its connection and secret-looking keys, keys as text."""
    return {
        str(key): value
        for key, value in options.items()
        if str(key) not in _TRANSPORT_OPTIONS and not _SECRET_WORD.search(str(key).lower())
    }


class _Walk:
    """One description's walk: functions already described (a cycle ends there) and whether
    scorewatch's own code was seen."""

    __slots__ = ("own_code", "seen")

    def __init__(self) -> None:
        self.seen: set[int] = set()
        self.own_code = False

    def value(self, value: Any, depth: int) -> Any:
        if value is None or isinstance(value, bool | int | str):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else repr(value)
        if depth > _MAX_DEPTH:
            return {"deeper": _qualified(type(value))}
        try:
            return self._composite(value, depth + 1)
        except Exception as error:  # a fingerprint never fails a scorer
            return {"undescribed": _qualified(type(value)), "error": type(error).__name__}

    def _composite(self, value: Any, depth: int) -> Any:
        if isinstance(value, list | tuple):
            return [self.value(item, depth) for item in value]
        if isinstance(value, set | frozenset):
            items = [self.value(item, depth) for item in value]
            return {"set": sorted(items, key=lambda item: json.dumps(item, sort_keys=True))}
        if isinstance(value, Mapping):
            kept = answer_options(value)
            return {key: self.value(item, depth) for key, item in kept.items()}
        if isinstance(value, bytes):
            return {"bytes": hashlib.sha256(value).hexdigest()}
        if isinstance(value, enum.Enum):
            return {"enum": _qualified(type(value)), "value": self.value(value.value, depth)}
        if isinstance(value, re.Pattern):
            return {"pattern": value.pattern, "flags": int(value.flags)}
        if isinstance(value, type):
            if issubclass(value, BaseModel):
                return {"model": value.model_json_schema()}
            return {"class": _qualified(value)}
        if _is_scorer(value):
            return {"scorer": value.version_fingerprint}
        if _is_judge_model(value):
            return self._judge_model(value, depth)
        if isinstance(value, BaseModel):
            return {"model": _qualified(type(value)), "data": value.model_dump(mode="json")}
        if dataclasses.is_dataclass(value):
            fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
            return {"data": _qualified(type(value)), "fields": self.value(fields, depth)}
        if callable(value):
            return self._callable(value, depth)
        return {"object": _qualified(type(value))}

    def _judge_model(self, model: Any, depth: int) -> dict[str, Any]:
        options = getattr(model, "options", None)
        return {
            "judge": _qualified(type(model)),
            "model_id": str(model.model_id),
            "provider": getattr(model, "provider", None),
            "options": self.value(options, depth) if isinstance(options, Mapping) else None,
        }

    def _callable(self, fn: Any, depth: int) -> Any:
        if isinstance(fn, partial):
            return {
                "partial": self.value(fn.func, depth),
                "args": self.value(fn.args, depth),
                "keywords": self.value(fn.keywords, depth),
            }
        if isinstance(fn, types.MethodType):
            return {"method": self.value(fn.__func__, depth), "of": _qualified(type(fn.__self__))}
        if not isinstance(fn, types.FunctionType):
            call = type(fn).__dict__.get("__call__")
            if isinstance(call, types.FunctionType):  # a callable object: its class's __call__
                return {"callable": _qualified(type(fn)), "call": self.value(call, depth)}
            return {"builtin": _qualified(fn)}
        return self._function(fn, depth)

    def _function(self, fn: types.FunctionType, depth: int) -> dict[str, Any]:
        # The qualified name without the module: moving a function to another module, or
        # importing its file under another name, changes no score.
        name = fn.__qualname__
        if id(fn) in self.seen:
            return {"function": name}
        self.seen.add(id(fn))
        module = fn.__module__ or ""
        if module == "scorewatch" or module.startswith("scorewatch."):
            self.own_code = True
        code = fn.__code__
        source = _function_source(code)
        described: dict[str, Any] = {
            "function": name,
            "source": source if source is not None else _bytecode(code),
        }
        if fn.__defaults__:
            described["defaults"] = self.value(fn.__defaults__, depth)
        if fn.__kwdefaults__:
            described["kwdefaults"] = self.value(fn.__kwdefaults__, depth)
        if fn.__closure__:
            closure = {}
            for var, cell in zip(code.co_freevars, fn.__closure__, strict=True):
                try:
                    closure[var] = self.value(cell.cell_contents, depth)
                except ValueError:  # an empty cell: a variable not assigned yet
                    closure[var] = None
            described["closure"] = closure
        package = module.partition(".")[0]
        read = {}
        for global_name in sorted(_global_names(code)):
            if global_name not in fn.__globals__:
                continue
            value = fn.__globals__[global_name]
            if _worth_following(value, package):
                read[global_name] = self.value(value, depth)
        if read:
            described["globals"] = read
        return described


def _qualified(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"


def _is_scorer(value: Any) -> bool:
    from .scorer import Scorer

    return isinstance(value, Scorer)


def _is_judge_model(value: Any) -> bool:
    return (
        not isinstance(value, type)
        and isinstance(getattr(value, "model_id", None), str)
        and callable(getattr(value, "complete", None))
    )


def _worth_following(value: Any, package: str) -> bool:
    """A module-level name a function reads: plain data, or a function of its own package."""
    if isinstance(value, str | int | float | bytes | tuple | list | dict | frozenset | set):
        return not isinstance(value, bool)
    if isinstance(value, types.FunctionType):
        module = value.__module__ or ""
        return bool(package) and module.partition(".")[0] == package
    return isinstance(value, enum.Enum | re.Pattern)


def _global_names(code: types.CodeType) -> set[str]:
    """Names a code object (and the functions, lambdas and comprehensions inside it) may read as
    globals."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _bytecode(code: types.CodeType) -> dict[str, Any]:
    consts = [_bytecode(c) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts]
    return {"bytecode": code.co_code.hex(), "names": list(code.co_names), "consts": consts}


@lru_cache(maxsize=4096)
def _function_source(code: types.CodeType) -> str | None:
    """The function's source text, or None without source. A lambda is cut out of its line."""
    try:
        lines, _start = inspect.getsourcelines(code)
    except (OSError, TypeError):
        return None
    if code.co_name == "<lambda>":
        text = _lambda_source(code)
        if text is not None:
            return text
    return inspect.cleandoc("".join(lines)) if lines else None


def _lambda_source(code: types.CodeType) -> str | None:
    module = _parsed_module(code.co_filename)
    if module is None:
        return None
    tree, text = module
    candidates = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Lambda) and node.lineno == code.co_firstlineno
    ]
    if len(candidates) > 1:
        start = _body_start(code)
        candidates = [
            node for node in candidates if (node.body.lineno, node.body.col_offset) == start
        ]
    if len(candidates) != 1:
        return None
    return ast.get_source_segment(text, candidates[0])


def _body_start(code: types.CodeType) -> tuple[int, int] | None:
    """Where a lambda's body starts: the first position its instructions cover."""
    starts = [
        (line, column)
        for line, end_line, column, end_column in code.co_positions()
        if line is not None
        and column is not None
        and (end_line != line or (end_column is not None and end_column > column))
    ]
    return min(starts) if starts else None


def _parsed_module(filename: str) -> tuple[ast.Module, str] | None:
    text = "".join(linecache.getlines(filename))
    return _parse(filename, text) if text else None


@lru_cache(maxsize=64)
def _parse(filename: str, text: str) -> tuple[ast.Module, str] | None:
    try:
        return ast.parse(text, filename=filename), text
    except (SyntaxError, ValueError):
        return None
