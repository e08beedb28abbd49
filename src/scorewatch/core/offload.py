"""Running synchronous function steps off the event loop.

A scorer's synchronous function steps run where `Scorer.run` is awaited: on the caller's event
loop. A model-free scorer on a megabyte of text computes for seconds there, and everything else
on that loop (an HTTP service, an agent) waits. Code that runs scorers on a loop serving others
installs an executor for the runs it starts:

    with offload_function_steps(pool):
        result = await scorer.run(...)

and every synchronous function step of those runs is called in `pool` (with the caller's
context variables), the loop awaiting it. Asynchronous steps and prompt steps are unaffected.
How big the pool is, and so how much CPU scoring may take at once, is the installer's choice;
`shared_step_pool()` is the process-wide one live scoring and serve install for heavy calls.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

__all__ = ["STEP_EXECUTOR", "offload_function_steps", "run_off_loop", "shared_step_pool"]

STEP_EXECUTOR: contextvars.ContextVar[Executor | None] = contextvars.ContextVar(
    "scorewatch_step_executor", default=None
)
"""The executor installed for the current context, if any: the pipeline reads it at each
synchronous function step (`STEP_EXECUTOR.get()`, no Python frame of its own)."""


@contextmanager
def offload_function_steps(executor: Executor | None) -> Iterator[None]:
    """Run the synchronous function steps of the runs started inside in `executor` (None: on
    the loop, the default)."""
    token = STEP_EXECUTOR.set(executor)
    try:
        yield
    finally:
        STEP_EXECUTOR.reset(token)


async def run_off_loop(executor: Executor | None, function: Callable[..., Any], *args: Any) -> Any:
    """`function(*args)` in `executor` (None: asyncio's default one), with the current context
    variables."""
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(executor, context.run, function, *args)


_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def shared_step_pool() -> ThreadPoolExecutor:
    """The process-wide pool for CPU-heavy function steps, created on first use with
    `SCOREWATCH_SCORING_THREADS` threads (default 2): steps are Python code holding the GIL, so
    more threads would not score faster, only compete with the loop."""
    global _pool
    with _pool_lock:
        if _pool is None:
            threads = max(1, int(os.environ.get("SCOREWATCH_SCORING_THREADS", "2") or 2))
            _pool = ThreadPoolExecutor(threads, thread_name_prefix="scorewatch-scoring")
        return _pool
