"""What serve's two intakes share: deciding a request's items, and counting the decisions.

`InProcessIntake` and `RedisIntake` decide alike (filter, then deterministic sampling on the
trace id, else the run id) and count alike: a decision is counted and told to the live
event bus together, and a refused request counts its sampled evaluations as the refusal
(`dropped_queue_full` / `dropped_shutdown`) and nothing else, so a retried request is not counted
twice as `not_sampled`. They differ only in where accepted runs go.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import itertools
import json
import logging
import operator
import os
import re
import secrets
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Literal

from ..._throttled_log import ThrottledLog
from ...core.call import CALL_FIELDS, AgentCall
from ...live.budgets import Budgets, Hold
from ...live.engine import Counts, decided_event, live_run_id
from ...live.entry import LiveScorerEntry, fraction_of
from ...live.events import Decided, LiveDecision
from ...sinks.storable import json_encoder
from .interface import ScoreItem, SkipDecision, Skipped

__all__ = [
    "BAD_ID_MESSAGE",
    "BAD_ID_TEXT",
    "MAX_TARGET_CHARS",
    "IntakeCounts",
    "InvalidTargetError",
    "Plan",
    "draws_run_id",
    "next_run_id",
    "plan_digest",
    "plan_items",
    "plan_items_off_loop",
    "plans_off_loop",
    "release_holds",
    "request_digest",
    "request_run_id",
    "target_problem",
]

logger = logging.getLogger("scorewatch.server")
_warn = ThrottledLog(logger)

MAX_TARGET_CHARS: Final = 256
"""The longest target an item may name: it labels metric series and is every row's entity."""

# NUL and unpaired surrogates: no store keeps them as they are, so an id or filter holding one
# could never match what was stored. (Other control characters are kept, and escaped in logs.)
BAD_ID_TEXT: Final = re.compile("[\x00\ud800-\udfff]")
BAD_ID_MESSAGE: Final = "NUL characters and unpaired surrogates are not allowed here"


class InvalidTargetError(ValueError):
    """An item's target is one no request may name (`target_problem`); nothing was admitted."""


def target_problem(target: str | None) -> str | None:
    """What makes `target` one no item may name, or None. `POST /v1/scores` answers 422 for it;
    admission refuses any other item holding one (a trace run's agent name)."""
    if target is None:
        return None
    if len(target) > MAX_TARGET_CHARS:
        return f"longer than {MAX_TARGET_CHARS} characters"
    # An ASCII text holds no surrogate: only a NUL is looked for, without the regex engine (a
    # search costs more than the rest of deciding an item nothing samples).
    if ("\x00" in target) if target.isascii() else BAD_ID_TEXT.search(target) is not None:
        return BAD_ID_MESSAGE
    return None


class _RunIds:
    """Run ids for items sent without one, as unique as `uuid4().hex` (32 hex digits: 64
    random bits drawn once per process, then a counter) without asking the OS for randomness
    per request. A forked worker draws its own prefix, so workers never share ids. The id also
    keys sampling of such items: SHA-256 of distinct ids spreads them evenly."""

    def __init__(self) -> None:
        self._reset()
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._prefix = secrets.token_hex(8)
        self._counter = itertools.count()

    def next(self) -> str:
        return f"{self._prefix}{next(self._counter):016x}"


_run_ids = _RunIds()
next_run_id: Final = _run_ids.next
"""A run id for an item sent without one (`ScoreItem.made_up_run_id`)."""


def draws_run_id(entries: Iterable[LiveScorerEntry]) -> bool:
    """Whether `plan_items` makes up a run id for an item sent without one whatever its
    budgets decide, when `entries` are the scorers it names: a filter is asked about the call
    with its run id, and a sampling rate other than 0 either reads the id as its key or samples
    the call, which is then queued with it. A caller that knows this before it builds the call
    builds it once, with the id (`ScoreItem.made_up_run_id`), instead of the plan copying it;
    the same ids are drawn, no more."""
    return any(entry.filter is not None or entry.sampling.rate != 0.0 for entry in entries)


# A JSON string as canonical JSON writes it (`ensure_ascii=True`).
_ascii_text: Final = json.encoder.encode_basestring_ascii


class Plan:
    """One item of a request, decided: the scorers that sampled it and the ones that did not.
    `call` is the item's call with a run id (made up when the client sent none) whenever a
    scorer sampled it or a filter was asked about it; an item nothing sampled may keep the
    client's call as it is (copying a call for a run id nobody reads costs more than deciding
    it), and the call of an item made of a draft (`ScoreItem.of_draft`) that no filter read
    is not made until `call` is read. An item whose call came with a made-up run id
    (`ScoreItem.made_up_run_id`) is never copied. `holds`: what each sampled scorer's run
    reserved of the spend budgets (none without budgets). Read-only once made."""

    __slots__ = ("_call", "holds", "item", "sampled", "skipped")

    def __init__(
        self,
        item: ScoreItem,
        call: AgentCall | None,
        sampled: list[str],
        skipped: list[Skipped],
        holds: dict[str, Hold] | None = None,
    ) -> None:
        self.item = item
        self._call = call  # None: the item's own call (made when first read)
        self.sampled = sampled
        self.skipped = skipped
        self.holds: dict[str, Hold] = {} if holds is None else holds

    @property
    def call(self) -> AgentCall:
        call = self._call
        return self.item.call if call is None else call


def plan_items(
    entries: Mapping[str, LiveScorerEntry],
    items: Sequence[ScoreItem],
    budgets: Budgets | None = None,
) -> list[Plan]:
    """Decide every (item, scorer) pair; the scorer ids in the items are known. Raises
    `InvalidTargetError` (deciding nothing) when an item's target is not one to keep. Under
    `budgets`, a sampled run holds its reservation (`Plan.holds`) until it is settled, or
    given back when the request is refused (`release_holds`)."""
    for index, item in enumerate(items):
        problem = target_problem(item.target)
        if problem is not None:
            raise InvalidTargetError(f"items[{index}].target: {problem}")
    plans: list[Plan] = []
    now = budgets.now() if budgets else 0.0  # one clock reading for the whole request
    for item in items:
        # Made only once something reads it (a filter, a sampled run): without a filter, the
        # decision reads the trace id, else the run id, and nothing else of the call.
        call: AgentCall | None = None
        # Made up (when the client sent none) only once something reads it: a filter, a
        # sampling rate strictly between 0 and 1, a budget, or a sampled run.
        run_id = item.run_id
        chosen = entries if item.scorers is None else dict.fromkeys(item.scorers)
        sampled: list[str] = []
        skipped: list[Skipped] = []
        holds: dict[str, Hold] = {}
        for scorer_id in chosen:
            entry = entries[scorer_id]
            if not run_id and (entry.filter is not None or entry.sampling.keyed or budgets):
                run_id = _run_ids.next()
            if entry.filter is not None:
                if call is None:
                    call = item.call
                if call.run_id != run_id:
                    call = call.with_run_id(run_id)  # what a filter sees has its run id
            sample_key = item.trace_id or run_id or ""
            decision: SkipDecision | Literal["sampled"] = entry.decide(call, sample_key, _warn)
            if budgets and decision != "filtered" and budgets.governs(entry.scorer):
                fraction = fraction_of(sample_key)
                decision, hold = budgets.admit(scorer_id, fraction, entry.sampling.rate, now)
                if hold is not None:
                    holds[scorer_id] = hold
            if decision == "sampled":
                sampled.append(scorer_id)
            else:
                skipped.append(skip_of(scorer_id, decision))
        if sampled:
            if call is None:
                call = item.call
            if not call.run_id:
                call = call.with_run_id(run_id or _run_ids.next())
        plans.append(Plan(item, call, sampled, skipped, holds))
    return plans


# Skip decisions are immutable and few (scorers times decisions): one of each is made.
@functools.lru_cache(maxsize=4096)
def skip_of(scorer_id: str, decision: SkipDecision) -> Skipped:
    """The `Skipped` of `decision` for `scorer_id` (shared: it is immutable)."""
    return Skipped(scorer_id, decision)


# Their events too, immutable as well: one of each is made, not one per decision.
@functools.lru_cache(maxsize=4096)
def _skip_event(scorer_id: str, decision: SkipDecision) -> Decided:
    return decided_event(scorer_id, decision)


async def plan_items_off_loop(
    entries: Mapping[str, LiveScorerEntry],
    items: Sequence[ScoreItem],
    budgets: Budgets | None = None,
) -> list[Plan]:
    """`plan_items` for a request on serve's loop. With a budget kept in Redis, each sampled
    run's reservation is a round trip that waits up to the ledger's timeout when Redis is slow,
    so the plan is made on a worker thread and the loop goes on serving other requests (and
    `/healthz`) meanwhile; without one, deciding is CPU work of microseconds and stays here."""
    if plans_off_loop(budgets):
        return await asyncio.to_thread(plan_items, entries, items, budgets)
    return plan_items(entries, items, budgets)


def plans_off_loop(budgets: Budgets | None) -> bool:
    """Whether `plan_items_off_loop` leaves the loop under `budgets` (a budget kept in Redis);
    when not, a caller on the loop may call `plan_items` itself and spare a coroutine."""
    return bool(budgets and budgets.remote)


def release_holds(budgets: Budgets | None, plans: Iterable[Plan]) -> None:
    """A refused request: what its sampled runs reserved is given back."""
    if budgets:
        for plan in plans:
            for hold in plan.holds.values():
                budgets.release(hold)


class IntakeCounts(Counts):
    """An intake's counts since start: every live decision and outcome, `rejected_requests`,
    then `extra` keys, all zero at first. A refused request gives back what its runs reserved
    of `budgets`."""

    def __init__(self, *extra: str, budgets: Budgets | None = None) -> None:
        super().__init__("rejected_requests", *extra)
        self.budgets = budgets

    def skipped(self, plans: Iterable[Plan]) -> None:
        """Count the decisions not to score (filtered, not sampled) of admitted items: as
        `decided` counts each, its event made once per scorer and decision (`_skip_event`)."""
        observers = self.observers
        told = observers.hears(Decided)
        for plan in plans:
            for skip in plan.skipped:
                self.add(skip.decision)
                if told:
                    observers.emit(_skip_event(skip.scorer, skip.decision))

    def refused(self, plans: Iterable[Plan], decision: LiveDecision) -> None:
        """A refused request: its sampled evaluations count as `decision`, nothing else."""
        plans = list(plans)
        release_holds(self.budgets, plans)
        refused = 0
        for plan in plans:
            for scorer_id in plan.sampled:
                self.observers.emit(decided_event(scorer_id, decision))
                refused += 1
        self.add(decision, refused)
        self.add("rejected_requests")


def plan_digest(plan: Plan) -> str:
    """What tells this item's request apart from any other (`request_run_id`): every field
    of the call the client sent, none that the service made up (like a missing run id's
    uuid). `request_digest(plan.item.call.to_dict())`, the same digest, with a `run_id` of
    None when the service made it up (`ScoreItem.made_up_run_id`)."""
    item = plan.item
    return _text_digest(_call_json(item.call, sent_run_id=not item.made_up_run_id))


# `json.dumps(parts, sort_keys=True, ensure_ascii=True, separators=(",", ":"), default=repr)`,
# the text digests have always covered (run ids must not change), from one encoder made once.
_canonical_json: Final = json_encoder(ensure_ascii=True, sort_keys=True, separators=(",", ":"))


def request_digest(*parts: Any) -> str:
    """16 hex digits of SHA-256 over `parts` (JSON-like) as canonical JSON: equal for equal
    requests, whatever their key order, and different for any difference in them."""
    return _text_digest(_canonical_json(parts))


def _text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:16]


# A call's fields in the order canonical JSON writes them (by name), each with its key's text
# and that key's text with a null, which most fields of most calls are.
_SORTED_FIELDS: Final = tuple(sorted(CALL_FIELDS))
_sorted_values: Final = operator.attrgetter(*_SORTED_FIELDS)
_KEY_TEXTS: Final = tuple(f"{_ascii_text(name)}:" for name in _SORTED_FIELDS)
_NULL_TEXTS: Final = tuple(f"{key}null" for key in _KEY_TEXTS)
_SORTED_RUN_ID_AT: Final = _SORTED_FIELDS.index("run_id")


def _call_json(call: AgentCall, *, sent_run_id: bool = True) -> str:
    """`_canonical_json((call.to_dict(),))`, the same text, without the dict and the sort of
    its keys: the keys' texts are made once, only the values are encoded per call (half the
    instructions of a scored request's digest; tests/server/test_server_plan_items.py).
    `sent_run_id=False`: the text of the call without its run id (one the service made up)."""
    values = _sorted_values(call)
    if not sent_run_id:
        at = _SORTED_RUN_ID_AT
        values = (*values[:at], None, *values[at + 1 :])
    parts: list[str] = []
    for key, null, value in zip(_KEY_TEXTS, _NULL_TEXTS, values, strict=True):
        if value is None:
            parts.append(null)
        elif type(value) is str:
            parts.append(key + _ascii_text(value))
        else:  # what the encoder writes for it inside the call's object
            parts.append(key + _canonical_json(value))
    return "[{" + ",".join(parts) + "}]"


def request_run_id(scorer_id: str, item: ScoreItem, digest: str) -> str:
    """A service's run id: `live_run_id`'s of the call as the client sent it (`item.call`,
    without a run id the service made up), then `-<digest>` of the whole request. Sending
    the same request again (a retry) names the same run, so it is stored once; a different
    request for the same trace and span names another run, so it never overwrites one. No
    memory is involved: replicas and restarts agree."""
    call_id = live_run_id(scorer_id, item.call, run_id_sent=not item.made_up_run_id)
    return f"{call_id}-{digest}"
