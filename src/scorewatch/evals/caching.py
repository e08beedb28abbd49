"""Which verdict cache a batch evaluation uses (core/verdict_cache.py).

Batch evaluation reuses verdicts only when asked (`run_evals(cache=...)`,
`run_experiment(cache=...)`, `scorewatch eval --cache`); otherwise it follows the caller's context,
which is off unless the caller turned caching on. With `repeat` above 1 the cache is off for the
whole evaluation, whatever was asked: repeats exist to measure the judge's noise, and an answer
served from the cache would hide it. No lookup is made and nothing is stored.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

from ..core.verdict_cache import VerdictCache, caching_verdicts, not_caching_verdicts

__all__ = ["evaluation_caching"]


@contextmanager
def evaluation_caching(cache: VerdictCache | None, repeat: int) -> Iterator[None]:
    """The verdict caching of one evaluation of `repeat` judgements per item."""
    scope: AbstractContextManager[object]
    if repeat > 1:
        scope = not_caching_verdicts()
    elif cache is not None:
        scope = caching_verdicts(cache)
    else:
        scope = nullcontext()
    with scope:
        yield
