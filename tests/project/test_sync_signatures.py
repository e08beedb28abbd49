"""Every `*_sync` function takes exactly what its async counterpart takes (names, kinds,
defaults and annotations), so editors and type checkers see real parameters, not `**kwargs`
(most are made by `scorewatch.core.sync.synchronous`, which writes the parameter list once)."""

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

    found: set[str] = set()
    for path in Path(scorewatch.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef):
                found.add(node.name)
            elif isinstance(node, ast.Assign):  # `run_evals_sync = synchronous(run_evals)`
                found.update(t.id for t in node.targets if isinstance(t, ast.Name))
    found = {name for name in found if name.endswith("_sync")}
    found.discard("run_coroutine_sync")  # the loop runner every wrapper uses
    assert found == {fn.__name__ for _, fn in PAIRS}


def test_a_synchronous_twin_runs_the_coroutine_and_says_what_it_is() -> None:
    from scorewatch.core.sync import synchronous

    async def add(a: int, /, b: int = 1, *, times: int = 1) -> int:
        """Adds."""
        return (a + b) * times

    add_sync = synchronous(add)
    assert add_sync(2, 3, times=2) == 10
    assert add_sync.__name__ == "add_sync" and add_sync.__doc__ is not None
    assert "without an event loop" in add_sync.__doc__
    assert inspect.signature(add_sync) == inspect.signature(add)
