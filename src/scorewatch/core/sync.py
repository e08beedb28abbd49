"""Running scorewatch coroutines from code without an event loop.

All sync wrappers share one background event loop on one daemon thread, so clients that bind to a
loop (litellm's HTTP clients) are reused across calls instead of being stranded on closed loops.
The caller's context variables (e.g. the current OpenTelemetry span) travel with the call.
"""

from __future__ import annotations

import contextvars
import functools
import threading
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

if TYPE_CHECKING:
    import asyncio

__all__ = ["background_loop", "run_coroutine_sync", "synchronous"]

T = TypeVar("T")
P = ParamSpec("P")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def background_loop() -> asyncio.AbstractEventLoop:
    """The shared loop, started on first use."""
    import asyncio  # here, not at module level: it costs `import scorewatch` tens of ms

    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="scorewatch-loop", daemon=True)
            thread.start()
            _loop = loop
        return _loop


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
