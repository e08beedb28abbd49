"""Every `*_sync` function takes exactly what its async counterpart takes (names, kinds,
defaults and annotations), so editors and type checkers see real parameters, not `**kwargs`."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from scorewatch.core.scorer import Scorer
from scorewatch.evals import run_evals, run_evals_sync, run_experiment, run_experiment_sync
from scorewatch.live import LiveScoring
from scorewatch.traces.score import score_traces, score_traces_sync

pytestmark = pytest.mark.unit

PAIRS: list[tuple[Callable[..., Any], Callable[..., Any]]] = [
    (run_evals, run_evals_sync),
    (run_experiment, run_experiment_sync),
    (score_traces, score_traces_sync),
    (Scorer.run, Scorer.run_sync),
    (LiveScoring.drain, LiveScoring.drain_sync),
]


@pytest.mark.parametrize(("async_fn", "sync_fn"), PAIRS, ids=lambda fn: fn.__qualname__)
def test_sync_wrapper_mirrors_the_async_signature(
    async_fn: Callable[..., Any], sync_fn: Callable[..., Any]
) -> None:
    assert inspect.iscoroutinefunction(async_fn) and not inspect.iscoroutinefunction(sync_fn)
    wanted, got = inspect.signature(async_fn), inspect.signature(sync_fn)
    assert all(p.kind is not p.VAR_KEYWORD for p in got.parameters.values()), got
    assert got == wanted


def test_every_sync_function_of_the_package_is_checked() -> None:
    """A new `*_sync` function joins PAIRS, or this fails."""
    import ast
    from pathlib import Path

    import scorewatch

    found = {
        node.name
        for path in Path(scorewatch.__file__).parent.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef) and node.name.endswith("_sync")
    }
    found.discard("run_coroutine_sync")  # the loop runner every wrapper uses
    assert found == {fn.__name__ for _, fn in PAIRS}
