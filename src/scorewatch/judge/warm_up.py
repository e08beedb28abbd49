"""The one warm-up of litellm per process, in a worker thread, never on an event loop.

litellm imports much of itself on the first call, which costs seconds of CPU; a loop that
imported it would stall everything it serves. The first judged call (or `scorewatch serve`,
before serving) starts the warm-up in a daemon thread and awaits it (`litellm_off_the_loop`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import sys
import threading
from typing import Any

from .prices import import_litellm

__all__ = ["litellm_off_the_loop", "warm_up_in_background", "warm_up_litellm"]


def warm_up_litellm() -> None:
    """Import litellm and the fast path's client, and walk one offline (mocked) completion
    through litellm; never raises.

    litellm imports much of itself on the first call, which takes seconds of CPU: whoever runs
    judged scorers on an event loop calls this first, in a thread, so that cost is not paid on
    the loop (`LiteLLMJudge.complete` does, through `warm_up_in_background`)."""
    try:
        from . import openai_http  # noqa: F401 - aiohttp, imported here rather than on a loop

        # Imported (or being imported) by the application already: then it may have callbacks
        # registered, which must not see a made-up completion; the import is waited for only.
        imported = "litellm" in sys.modules
        litellm = import_litellm()
        if not imported:
            litellm.completion(
                model="openai/scorewatch-warm-up",
                messages=[{"role": "user", "content": "warm-up"}],
                mock_response="ok",
            )
    except Exception as error:  # a failed warm-up only costs the first run some time
        logging.getLogger("scorewatch.judge").debug(
            "judge warm-up failed (%s)", type(error).__name__
        )


_warm_up: concurrent.futures.Future[None] | None = None
_warm_up_lock = threading.Lock()


def warm_up_in_background() -> concurrent.futures.Future[None]:
    """`warm_up_litellm` in a daemon thread, started by the first caller in the process; the
    future resolves when it is done. For a caller on an event loop that will run judged
    scorers: the loop awaits the future rather than importing litellm itself (a module that
    another thread is still importing would block the loop until it is done)."""
    global _warm_up
    with _warm_up_lock:
        if _warm_up is not None:
            return _warm_up
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        _warm_up = done

    def warm() -> None:
        try:
            warm_up_litellm()
        finally:
            done.set_result(None)

    threading.Thread(target=warm, name="scorewatch-litellm-warm-up", daemon=True).start()
    return done


async def litellm_off_the_loop() -> Any:
    """litellm, once the process's warm-up (in a worker thread) is done."""
    warm_up = warm_up_in_background()
    if not warm_up.done():
        await asyncio.wrap_future(warm_up)
    return import_litellm()
