"""`LiveScoring.watch`: wrap an agent function so its calls are submitted for live scoring.

The wrapper returns exactly what the function returns and raises exactly what it raises; a call
that raises is not scored. Submission is a few dictionary and lock operations: the wrapper never
waits for a judge, and nothing that goes wrong in scorewatch reaches the caller.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

__all__ = ["InputFrom", "watch_callable"]

logger = logging.getLogger("scorewatch.live")

F = TypeVar("F", bound=Callable[..., Any])
InputFrom = Callable[..., Any]
"""Receives the call's arguments exactly as the function did and returns the run input."""

Observe = Callable[[Any, Any], None]
Extract = Callable[[tuple[Any, ...], Mapping[str, Any]], Any]

_RECEIVERS = frozenset({"self", "cls"})


def _first_argument_extractor(fn: Callable[..., Any]) -> Extract:
    """The run input: the first argument after `self`/`cls`, as passed or defaulted."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # no signature: fall back to the first argument given
        return lambda args, kwargs: args[0] if args else next(iter(kwargs.values()), None)
    skip = 0
    if (
        params
        and params[0].name in _RECEIVERS
        and params[0].kind in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD)
    ):
        skip = 1
    if len(params) <= skip:
        return lambda args, kwargs: None
    first = params[skip]
    default = None if first.default is first.empty else first.default
    if first.kind is first.VAR_POSITIONAL:
        return lambda args, kwargs: args[skip] if len(args) > skip else None
    if first.kind is first.VAR_KEYWORD:
        return lambda args, kwargs: next(iter(kwargs.values()), None)
    if first.kind is first.KEYWORD_ONLY:
        return lambda args, kwargs: kwargs.get(first.name, default)

    def positional(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
        if len(args) > skip:
            return args[skip]
        return kwargs.get(first.name, default)

    return positional


def _refuse_generators(fn: Callable[..., Any]) -> None:
    if inspect.isasyncgenfunction(fn) or inspect.isgeneratorfunction(fn):
        kind = "an async generator" if inspect.isasyncgenfunction(fn) else "a generator"
        name = getattr(fn, "__qualname__", repr(fn))
        raise TypeError(
            f"scorewatch watch(): {name} is {kind} function. Its output only exists once the "
            "caller has consumed it, so it cannot be scored by a decorator; collect the output "
            "and call live.submit(input=..., output=...) yourself."
        )


def _is_async(fn: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - callable objects with async __call__
    return call is not None and inspect.iscoroutinefunction(call)


def watch_callable(
    fn: Any,
    observe: Callable[[Any, Any, str], object],
    target: str | None,
    input_from: InputFrom | None,
) -> Any:
    """Wrap `fn` (a function, method, classmethod or staticmethod object, or a callable)."""
    if isinstance(fn, classmethod | staticmethod):
        return type(fn)(watch_callable(fn.__func__, observe, target, input_from))
    if not callable(fn):
        raise TypeError(f"watch() decorates a function, got {type(fn).__name__}")
    _refuse_generators(fn)
    name = target or getattr(fn, "__qualname__", None) or type(fn).__name__
    extract: Extract
    if input_from is not None:
        if not callable(input_from):
            raise TypeError("watch(input_from=...) must be callable")
        chosen = input_from

        def extract_with(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
            return chosen(*args, **kwargs)

        extract = extract_with
    else:
        extract = _first_argument_extractor(fn)

    def record(args: tuple[Any, ...], kwargs: Mapping[str, Any], output: Any) -> None:
        try:
            run_input = extract(args, kwargs)
        except Exception:
            logger.exception("watch(%s): input_from failed; call not scored", name)
            return
        try:
            observe(run_input, output, name)
        except Exception:
            logger.exception("watch(%s): submitting the call for scoring failed; ignored", name)

    if _is_async(fn):

        @functools.wraps(fn)
        async def watched_async(*args: Any, **kwargs: Any) -> Any:
            output = await fn(*args, **kwargs)
            record(args, kwargs, output)
            return output

        return watched_async

    @functools.wraps(fn)
    def watched(*args: Any, **kwargs: Any) -> Any:
        output = fn(*args, **kwargs)
        record(args, kwargs, output)
        return output

    return watched
