"""What the HTTP layer needs from the scoring machinery behind it: the `Intake` protocol.

The service accepts traffic through an `Intake` and never looks behind it. Today's intake scores
in this process (`InProcessIntake`: the live work queue, the sinks); a durable one (a Redis
stream read by separate workers) implements the same four methods, and the routes stay as they
are.

Admission is all-or-nothing per request: either every sampled evaluation of every item is
accepted, or none is (`QueueFullError`, answered with 429) — so a client that retries a refused
request never duplicates work.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, Protocol

from ...core.call import AgentCall
from ...sinks.record import ScoreRecord

__all__ = [
    "Accepted",
    "Admission",
    "CallDraft",
    "Intake",
    "IntakeClosedError",
    "QueueFullError",
    "ScoreItem",
    "SkipDecision",
    "Skipped",
]

SkipDecision = Literal["not_sampled", "filtered", "skipped_budget"]


class CallDraft(Protocol):
    """What an item's call is made of before it is made (serve's parsed request): the fields
    deciding the item reads, and `to_call` to make the call once something needs it."""

    @property
    def target(self) -> str | None: ...

    @property
    def trace_id(self) -> str | None: ...

    @property
    def run_id(self) -> str | None: ...

    def to_call(self, run_id: str | None = None) -> AgentCall:
        """The call, with `run_id` in place of the draft's when given."""
        ...


class ScoreItem:
    """One call to score, as validated from a request: `scorers` names the scorers to run (None:
    every configured one), `size` the bytes the item took in the request body (an estimate of
    what it holds while it waits). `made_up_run_id`: the client sent no run id and `call`
    carries one the service made up (`next_run_id`) before building it, so that the call is
    built once; the request's identity (its digest, its run ids) is the call's without it.

    `target`, `trace_id` and `run_id` are the call's, all that deciding an item without a
    filter reads. An item made `of_draft` makes its call only when something reads `call` (a
    filter, a sampled run): an item nothing samples is decided, counted and answered without
    it (a call is a frozen object of a dozen fields, as much work as parsing a small request).
    Read-only once made, as the call is."""

    __slots__ = (
        "_call",
        "_draft",
        "made_up_run_id",
        "run_id",
        "scorers",
        "size",
        "target",
        "trace_id",
    )

    def __init__(
        self,
        call: AgentCall,
        scorers: tuple[str, ...] | None = None,
        size: int = 0,
        made_up_run_id: bool = False,
    ) -> None:
        self._call: AgentCall | None = call
        self._draft: CallDraft | None = None
        self.scorers = scorers
        self.size = size
        self.made_up_run_id = made_up_run_id
        self.target: str | None = call.target
        self.trace_id: str | None = call.trace_id
        self.run_id: str | None = call.run_id

    @classmethod
    def of_draft(
        cls,
        draft: CallDraft,
        scorers: tuple[str, ...] | None = None,
        size: int = 0,
        made_up_run_id: str | None = None,
    ) -> ScoreItem:
        """The item of the call `draft` makes (with `made_up_run_id` as its run id, when the
        client sent none and one is made up first), made when `call` is first read."""
        item = cls.__new__(cls)
        item._call = None
        item._draft = draft
        item.scorers = scorers
        item.size = size
        item.made_up_run_id = made_up_run_id is not None
        item.target = draft.target
        item.trace_id = draft.trace_id
        item.run_id = draft.run_id if made_up_run_id is None else made_up_run_id
        return item

    @property
    def call(self) -> AgentCall:
        call = self._call
        if call is None:
            draft = self._draft
            assert draft is not None  # an item has a call or a draft
            call = draft.to_call(self.run_id if self.made_up_run_id else None)
            self._call, self._draft = call, None  # the draft is not kept past its call
        return call

    def _fields(self) -> tuple[object, ...]:
        return (self.call, self.scorers, self.size, self.made_up_run_id)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ScoreItem):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (
            f"ScoreItem(call={self.call!r}, scorers={self.scorers!r}, size={self.size!r}, "
            f"made_up_run_id={self.made_up_run_id!r})"
        )


class Accepted(NamedTuple):
    """One accepted run. A named tuple rather than a frozen dataclass: made once per accepted
    run on the loop that answers, where a frozen dataclass's `object.__setattr__` per field
    cost more than the tuple."""

    scorer: str
    run_id: str


@dataclass(frozen=True, slots=True)
class Skipped:
    scorer: str
    decision: SkipDecision


@dataclass(slots=True)
class Admission:
    """The decisions for one item; `results` holds a future per accepted run id when the caller
    asked to wait for results."""

    accepted: list[Accepted] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    results: dict[str, asyncio.Future[ScoreRecord]] | None = None


class QueueFullError(Exception):
    """Not enough room for the request's evaluations; nothing of it was accepted."""

    def __init__(
        self,
        needed: int,
        free: int,
        capacity: int,
        detail: str | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(detail or f"the scoring queue is full ({needed} needed, {free} free)")
        self.needed = needed
        self.free = free
        self.capacity = capacity
        self.detail = detail
        # Seconds until the request would fit, when the intake can tell.
        self.retry_after = retry_after


class IntakeClosedError(Exception):
    """The service is shutting down and accepts no new work."""


class Intake(Protocol):
    @property
    def capacity(self) -> int:
        """The most evaluations that may wait at once."""
        ...

    async def admit(
        self, items: Sequence[ScoreItem], *, want_results: bool = False
    ) -> list[Admission]:
        """Decide every (item, scorer) pair and accept the sampled ones, all or nothing.

        Scorer ids in the items are known (checked by the caller). Raises `QueueFullError` or
        `IntakeClosedError` without accepting anything."""
        ...

    def stats(self) -> dict[str, int]:
        """Counts since start: sampled, not_sampled, filtered, dropped_queue_full,
        dropped_shutdown, scored, failed, rejected_requests; gauges queued and in_flight."""
        ...

    def saturated(self) -> bool: ...

    def refuse_early(self) -> int | None:
        """Called before a request is parsed: when the intake is past its admission limit
        already, count the request as refused (`rejected_requests`, `shed_requests`; its
        evaluations are not decided) and return the seconds after which to retry; else None."""
        ...

    async def shutdown(self, timeout: float) -> int:  # noqa: ASYNC109 - a drain budget
        """Refuse new work, finish what was accepted within `timeout` seconds, give up (and
        count as dropped_shutdown) the rest; returns how many were given up."""
        ...

    async def aclose(self) -> None:
        """Flush and close the sinks (after `shutdown`)."""
        ...
