"""The verdict cache: a prompt step whose judge request is identical to an earlier one may reuse
the earlier answer instead of paying for the model again.

The key is a SHA-256 over everything that decides the answer: the scorer's version fingerprint,
the step, the judge model (type, id, provider, answer-changing options), the instructions, the
JSON-prompt placement, the schema and the prompt. A new scorer version or another model is
another key, so an answer never crosses them. Only a step that succeeded is stored (its answer
validated against the step's schema); a failed attempt never is.

Caching is off unless a caller turns it on, for a context (`caching_verdicts`: batch evaluation's
`run_evals(cache=...)`, a user's own code) or for the process (`install_verdict_caching`: live
scoring under `scorewatch serve` with a `[cache]` table).
`not_caching_verdicts` turns it off again inside, which is how `run_evals(repeat=N)` makes sure
every repeat is judged afresh. The store behind the interface is this module's `MemoryVerdictCache`
(an LRU bounded in bytes) or a shared one (`scorewatch.live.redis_verdicts`).

A cache that fails (a Redis outage) never fails a scorer: the lookup counts as a miss.

>>> import asyncio
>>> cache = MemoryVerdictCache(max_bytes=1_000)
>>> asyncio.run(cache.put("k", CachedVerdict(text='{"score": 1}', cost_usd=0.002)))
>>> asyncio.run(cache.get("k")).cost_usd
0.002
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
from collections import OrderedDict
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..judge.protocol import JudgeModel, JudgeRequest

__all__ = [
    "CachedVerdict",
    "MemoryVerdictCache",
    "VerdictCache",
    "VerdictCaching",
    "caching_verdicts",
    "current_verdict_caching",
    "install_verdict_caching",
    "not_caching_verdicts",
    "verdict_key",
]


@dataclass(frozen=True, slots=True)
class CachedVerdict:
    """A step's validated answer as the judge gave it, and what getting it cost."""

    text: str
    """The answer's text, validated again when reused."""
    finish_reason: str | None = "stop"
    cost_usd: float | None = None
    """What the original step's attempts cost in USD; a reuse records it as saved."""
    response_model: str | None = None

    def to_json(self) -> str:
        return json.dumps(
            [self.text, self.finish_reason, self.cost_usd, self.response_model],
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, data: str | bytes) -> CachedVerdict:
        text, finish_reason, cost_usd, response_model = json.loads(data)
        if not isinstance(text, str):
            raise ValueError("a cached verdict's text must be a string")
        return cls(text, finish_reason, cost_usd, response_model)


@runtime_checkable
class VerdictCache(Protocol):
    """Where verdicts are kept. Implementations may raise; the caller treats that as a miss."""

    async def get(self, key: str) -> CachedVerdict | None: ...

    async def put(self, key: str, verdict: CachedVerdict) -> None: ...


# What one entry costs beyond its strings: the OrderedDict node, the dataclass, its fields.
_ENTRY_OVERHEAD = 240


class MemoryVerdictCache:
    """An in-process LRU of verdicts holding at most `max_bytes` (keys and answers counted with
    their Python object sizes). Thread-safe: the engine's loop and worker threads may share it."""

    __slots__ = ("_entries", "_lock", "bytes", "max_bytes")

    def __init__(self, max_bytes: int = 64 * 1024 * 1024) -> None:
        if max_bytes <= 0:
            raise ValueError(f"max_bytes must be positive, got {max_bytes}")
        self.max_bytes = max_bytes
        self.bytes = 0
        """What the entries held now take, as counted against `max_bytes`."""
        self._entries: OrderedDict[str, tuple[CachedVerdict, int]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    async def get(self, key: str) -> CachedVerdict | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            self._entries.move_to_end(key)
            return entry[0]

    async def put(self, key: str, verdict: CachedVerdict) -> None:
        size = sys.getsizeof(key) + sys.getsizeof(verdict.text) + _ENTRY_OVERHEAD
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            self._entries[key] = (verdict, size)
            self.bytes += size
            while self.bytes > self.max_bytes:
                _, (_, evicted) = self._entries.popitem(last=False)
                self.bytes -= evicted


@dataclass(frozen=True, slots=True)
class VerdictCaching:
    """A cache and the scorers it serves (`scorers` ids, or None for every scorer)."""

    cache: VerdictCache
    scorers: frozenset[str] | None = None

    def serves(self, scorer_id: str) -> bool:
        return self.scorers is None or scorer_id in self.scorers


class _Unset:
    pass


_UNSET = _Unset()
_CACHING: ContextVar[VerdictCaching | _Unset | None] = ContextVar(
    "scorewatch_verdict_cache", default=_UNSET
)
_process_caching: VerdictCaching | None = None


def install_verdict_caching(caching: VerdictCaching | None) -> VerdictCaching | None:
    """Make `caching` the process's default, in force wherever no context chose otherwise
    (`scorewatch serve` and `scorewatch worker` install `[cache]`); returns the previous one."""
    global _process_caching
    previous, _process_caching = _process_caching, caching
    return previous


def current_verdict_caching(scorer_id: str) -> VerdictCaching | None:
    """The caching in force for `scorer_id` here: the context's, else the process's, if any."""
    caching = _CACHING.get()
    if isinstance(caching, _Unset):
        caching = _process_caching
    return caching if caching is not None and caching.serves(scorer_id) else None


@contextmanager
def caching_verdicts(
    cache: VerdictCache, *, scorers: Collection[str] | None = None
) -> Iterator[VerdictCaching]:
    """Reuse verdicts from `cache` for the scorer runs in this context (tasks started inside
    inherit it); `scorers` limits it to those scorer ids."""
    caching = VerdictCaching(cache, None if scorers is None else frozenset(scorers))
    token = _CACHING.set(caching)
    try:
        yield caching
    finally:
        _CACHING.reset(token)


@contextmanager
def not_caching_verdicts() -> Iterator[None]:
    """Judge every call in this context afresh: no lookup, nothing stored."""
    token = _CACHING.set(None)
    try:
        yield
    finally:
        _CACHING.reset(token)


def _options_of(model: JudgeModel) -> str:
    from .fingerprint import answer_options

    options = getattr(model, "options", None)
    if not isinstance(options, Mapping):
        return ""
    return json.dumps(answer_options(options), sort_keys=True, default=repr)


def verdict_key(scorer_version: str, model: JudgeModel, request: JudgeRequest) -> str:
    """The cache key of `request` to `model` by the scorer of version `scorer_version`."""
    parts: list[Any] = [
        scorer_version,
        request.step,
        f"{type(model).__module__}.{type(model).__qualname__}",
        model.model_id,
        model.provider,
        _options_of(model),
        request.instructions,
        request.json_prompt_injection,
        request.fallback,
        None if request.schema is None else json.dumps(request.schema, sort_keys=True),
    ]
    digest = hashlib.sha256(json.dumps(parts, default=repr).encode("utf-8"))
    digest.update(b"\x00")
    digest.update(request.prompt.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()
