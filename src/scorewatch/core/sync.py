"""Running scorewatch coroutines from code without an event loop.

All sync wrappers share one background event loop on one daemon thread, so clients that bind to a
loop (litellm's HTTP clients) are reused across calls instead of being stranded on closed loops.
The caller's context variables (e.g. the current OpenTelemetry span) travel with the call.
At interpreter exit the loop is shut down as `asyncio.run` shuts down its own: async generators
finalized (the judge's HTTP session closes there), then the loop closed, so nothing is left for
the garbage collector to complain about ("Unclosed client session").
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import functools
import threading
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

if TYPE_CHECKING:
    import asyncio

__all__ = ["background_loop", "run_coroutine_sync", "shutdown_background_loop", "synchronous"]

T = TypeVar("T")
P = ParamSpec("P")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_SHUTDOWN_TIMEOUT_S = 5.0
_unfinished: list[asyncio.AbstractEventLoop] = []


def background_loop() -> asyncio.AbstractEventLoop:
    """The shared loop, started on first use."""
    import asyncio  # here, not at module level: it costs `import scorewatch` tens of ms

    global _loop, _thread
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="scorewatch-loop", daemon=True)
            thread.start()
            if _thread is None:
                atexit.register(shutdown_background_loop)
            _loop, _thread = loop, thread
        return _loop


def shutdown_background_loop() -> None:
    """Finalize the shared loop's async generators, stop it and close it (registered with
    `atexit`; a later sync call starts a new loop). Waits at most a few seconds for work still
    running on it."""
    import asyncio

    global _loop
    with _lock:
        loop, thread, _loop = _loop, _thread, None
    if loop is None or loop.is_closed() or thread is None:
        return
    finalized = asyncio.run_coroutine_threadsafe(loop.shutdown_asyncgens(), loop)
    with contextlib.suppress(Exception):
        finalized.result(_SHUTDOWN_TIMEOUT_S)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(_SHUTDOWN_TIMEOUT_S)
    if thread.is_alive() or asyncio.all_tasks(loop):
        # Work that never finished: keep it referenced, as a daemon thread would have, rather
        # than have the collector report each task destroyed while pending.
        _unfinished.append(loop)
    else:
        loop.close()


def run_coroutine_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to completion from synchronous code and return its result."""
    import asyncio
    import concurrent.futures

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        coro.close()
        raise RuntimeError(
            "this is the synchronous wrapper, called from inside a running event loop; "
            "await the async method instead"
        )
    loop = background_loop()
    context = contextvars.copy_context()
    future: concurrent.futures.Future[T] = concurrent.futures.Future()

    def start() -> None:
        task = loop.create_task(coro, context=context)

        def finish(done: asyncio.Task[T]) -> None:
            if done.cancelled():
                future.cancel()
            elif (error := done.exception()) is not None:
                future.set_exception(error)
            else:
                future.set_result(done.result())

        task.add_done_callback(finish)

    loop.call_soon_threadsafe(start)
    return future.result()


def synchronous(coroutine_function: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, T]:
    """The blocking twin of a coroutine function, e.g. `run_evals_sync = synchronous(run_evals)`.

    It takes exactly the coroutine function's parameters: type checkers see them through the
    ParamSpec, `inspect.signature` and `help()` through `__wrapped__`, so the parameter list is
    written once. Works for methods too (assign it in the class body).
    """

    @functools.wraps(coroutine_function)
    def blocking(*args: P.args, **kwargs: P.kwargs) -> T:
        return run_coroutine_sync(coroutine_function(*args, **kwargs))

    name = coroutine_function.__name__
    blocking.__name__ = f"{name}_sync"
    blocking.__qualname__ = f"{coroutine_function.__qualname__}_sync"
    blocking.__doc__ = (
        f"`{name}` for code without an event loop: the same parameters, run on scorewatch's "
        "shared background loop."
    )
    return blocking
