"""Process concerns of live scoring: closing at interpreter exit, and on SIGTERM.

Both call a `close` function of the owner (which drains, gives up what is left, closes the
sinks) on a thread with no running loop of its own, so it must be blocking.
"""

from __future__ import annotations

import atexit
import logging
import signal
import threading
import weakref
from collections.abc import Callable
from types import FrameType
from typing import Any, TypeVar

__all__ = ["SigtermHandler", "close_at_exit"]

logger = logging.getLogger("scorewatch.live")

T = TypeVar("T")


def close_at_exit(owner: T, close: Callable[[T], None]) -> None:
    """Call `close(owner)` when the interpreter exits, as early as possible, unless `owner` has
    been collected by then (the hook holds it weakly).

    `threading`'s exit hooks run before `concurrent.futures` stops accepting work and before
    non-daemon threads are joined; plain `atexit` handlers run after, when a judge that needs
    an executor (litellm's sync-in-thread paths) can no longer work.
    """
    # concurrent.futures registers its own hook when its thread module is first imported, and
    # hooks run last-registered first: import it now so that ours runs before it.
    import concurrent.futures.thread  # noqa: F401

    alive = weakref.ref(owner)

    def at_exit() -> None:
        instance = alive()
        if instance is None:
            return
        try:
            close(instance)
        except Exception:
            logger.exception("live scoring: closing at exit failed")

    register = getattr(threading, "_register_atexit", None)
    if register is not None:
        try:
            register(at_exit)
            return
        except RuntimeError:  # the interpreter is already shutting down
            pass
    atexit.register(at_exit)


class SigtermHandler:
    """On SIGTERM: `close()`, then the handler that was installed before, or terminate as the
    default handler would. Installed and restored from the main thread only."""

    def __init__(self, close: Callable[[], None]) -> None:
        self._close = close
        self._previous: Any = None
        self.installed = False

    def install(self) -> None:
        if self.installed:
            return
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("a SIGTERM handler can only be installed from the main thread")
        self._previous = signal.getsignal(signal.SIGTERM)
        signal.signal(signal.SIGTERM, self._on_sigterm)
        self.installed = True

    def restore(self) -> None:
        """Put the previous handler back (when ours is still the installed one)."""
        if not self.installed:
            return
        self.installed = False
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) == self._on_sigterm:
            previous = self._previous
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)

    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        previous = self._previous
        try:
            self._close()
        except Exception:
            logger.exception("live scoring: draining on SIGTERM failed")
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_IGN:
            return
        else:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.raise_signal(signal.SIGTERM)
