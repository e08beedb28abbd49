"""`AgentCall`: what an agent did, the one shape of a call on its way to a scorer.

Live traffic (`LiveScoring.watch`, `submit`, the litellm callback), `scorewatch serve`'s requests,
its trace intake, the Redis work queue, experiments and scored traces all describe the call they
score with it; a live filter is handed one, every `ScoreRecord` keeps the one it scored, and
`ScorerRun.of_call` is the one place that turns it into what a scorer is given.

A new field is declared here (with its docstring and its keyword in `CallFields`), in serve's
request model when clients may send it, and where it is used: the queue carries it, the request
digest covers it and `submit` accepts it without another edit (docs/architecture.md, "The call").

>>> call = AgentCall(input="What is our refund policy?", output="30 days.", target="support-bot")
>>> call.score_source, call.run_id is None
('live', True)
>>> AgentCall.from_dict(call.to_dict()) == call
True
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Final, Literal, TypedDict

if TYPE_CHECKING:
    from typing import Unpack

    from pydantic import TypeAdapter

__all__ = ["CALL_FIELDS", "AgentCall", "CallFields", "ScoreSource"]

ScoreSource = Literal["live", "experiment", "trace", "direct"]
"""Where a run's call came from: live traffic (the watch decorator, `submit`, serve's
`POST /v1/scores`), an experiment's dataset, exported spans, or a direct `Scorer.run`."""


@dataclass(frozen=True, slots=True)
class AgentCall:
    """One call of an agent: what it was given and answered, who it was and where it ran.

    Every field is optional, so a producer names what it knows and nothing else. The first six
    (`input` to `run_id`) may be given by position, as the watch path does; a new field goes
    last.
    """

    input: Any = None
    """What the agent was given: a string, chat messages, or any JSON value."""

    output: Any = None
    """What the agent answered."""

    target: str | None = None
    """The agent or workflow that answered, by name: the `entityId` of its score rows and the
    `target` metric label."""

    trace_id: str | None = None
    """The trace of the agent's span (32 hex digits), when known. Keys live sampling, so one
    trace is scored by every scorer sampled at the same rate, or by none."""

    span_id: str | None = None
    """The agent's span (16 hex digits), when known."""

    run_id: str | None = None
    """The agent's own id for the call (the row's `metadata.agentRunId`), not the scorer run's.
    Keys sampling when there is no trace id; live scoring makes one up when the caller gave
    none."""

    request_context: Any = None
    """The request context the agent ran with (user, tenant, ...), handed to the scorers.
    Secret-looking keys are redacted in stored rows."""

    ground_truth: Any = None
    """The expected answer, for scorers that compare with one."""

    metadata: dict[str, Any] | None = None
    """Free-form facts about the call, kept in the row's metadata (secret-looking keys redacted)
    and handed to the scorer as the run's `target_metadata`."""

    score_source: ScoreSource = "live"
    """Where the call came from; `trace` for a call read from exported spans (serve's
    `POST /v1/traces`, `score_traces`), whose rows then name the span."""

    entity_type: str | None = None
    """What kind of entity `target` is, when the source says so (`agent` for an agent's span):
    the reference's `targetEntityType` of the run."""

    conversation_id: str | None = None
    """The conversation (session, thread) the call is one turn of, when the agent names one:
    the row's `threadId`. Spans say it with `gen_ai.conversation.id` (docs/traces.md,
    "Conversations"); a scored conversation's row names it too."""

    plain_json: bool = field(default=False, init=False, compare=False, repr=False)
    """Whether the call's maker vouched that `input` and `output` are plain JSON values
    (`of_plain_json`): dicts with text keys, lists, text, int, float, bool and None, of exactly
    those types, as a JSON parser gives them. Not a field one passes: set only by
    `of_plain_json`, so any other call (`dataclasses.replace`, `with_run_id`,
    `without_content`, `from_dict`, a queue entry) is made without it and it never outlives
    the content it is about. A record's row then writes the content as it is, rather than
    from a JSON-ready copy; a value that is not JSON found there (the content changed in
    place since) makes the row from the copy after all. What the check cannot see is a dict
    key put in since that is None or a non-finite number (written `null`, `Infinity`, where
    the copy writes `None`, `inf`): the content is not to be changed in place
    (docs/architecture.md, "The call")."""

    fields_checked: bool = field(default=False, init=False, compare=False, repr=False)
    """Whether the call's maker checked its typed fields, as serve's request model does: each
    text field (`target`, `trace_id`, `span_id`, `run_id`, `score_source`, `entity_type`)
    holds text or None, and `metadata` is None or a dict keyed by text. Not a field one passes:
    set only by `of_checked_fields`, so any other call (a copy included) is made without it.
    The run `ScorerRun.of_call` makes of such a call under a text run id is then not checked
    again before it is scored (`live.engine.score_call`)."""

    @classmethod
    def of_checked_fields(cls, *values: Any) -> AgentCall:
        """`AgentCall(*values)`, whose typed fields its maker checked (`fields_checked`): a
        request that serve's model validated."""
        call = cls(*values)
        _object_setattr(call, "fields_checked", True)
        return call

    @classmethod
    def of_plain_json(cls, **values: Unpack[CallFields]) -> AgentCall:
        """`AgentCall(**values)`, whose `input` and `output` its maker vouches are plain JSON
        (`plain_json`) and hands to nothing that changes them: a trace run's content, serve's
        copy of it made of parsed JSON."""
        call = cls(**values)
        _object_setattr(call, "plain_json", True)
        return call

    def to_dict(self) -> dict[str, Any]:
        """Every field by name (values shared, not copied): the form the work queue carries and
        a request digest covers."""
        return {name: getattr(self, name) for name in CALL_FIELDS}

    def with_run_id(self, run_id: str | None) -> AgentCall:
        """This call with `run_id`: `dataclasses.replace(self, run_id=run_id)`, in half its
        time (it walks the fields and calls `__init__` by keyword; a scored request of serve's
        makes one such copy on the loop that reads requests)."""
        values = list(_values_of(self))
        values[_RUN_ID_AT] = run_id
        return AgentCall(*values)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> AgentCall:
        """The call `to_dict` gave, read back from JSON-like `values`: unknown keys are ignored
        (a newer writer's fields), missing ones take their defaults, and a value of the wrong
        type raises `ValueError` naming the field but not the value (it may quote content)."""
        from pydantic import ValidationError

        known = {name: values[name] for name in CALL_FIELDS if name in values}
        try:
            return _adapter().validate_python(known)
        except ValidationError as error:
            where = sorted({str(problem["loc"][0]) for problem in error.errors() if problem["loc"]})
            raise ValueError(f"not an agent call: wrong type for {', '.join(where)}") from None

    def without_content(self) -> AgentCall:
        """This call without what the agent was given and answered (input, output, request
        context, ground truth, metadata): what is kept of a call whose row a sink refused."""
        return replace(
            self, input=None, output=None, request_context=None, ground_truth=None, metadata=None
        )


CALL_FIELDS: Final[tuple[str, ...]] = tuple(
    declared.name for declared in fields(AgentCall) if declared.init
)
"""The call's field names, in declaration order (not `plain_json` nor `fields_checked`, facts
about the others)."""

_values_of: Final = operator.attrgetter(*CALL_FIELDS)
_RUN_ID_AT: Final = CALL_FIELDS.index("run_id")
_object_setattr: Final = object.__setattr__


class CallFields(TypedDict, total=False):
    """`AgentCall`'s fields as keywords (`LiveScoring.submit(**fields)`); kept equal to the
    dataclass by tests/project/test_call_fields.py."""

    input: Any
    output: Any
    target: str | None
    trace_id: str | None
    span_id: str | None
    run_id: str | None
    request_context: Any
    ground_truth: Any
    metadata: dict[str, Any] | None
    score_source: ScoreSource
    entity_type: str | None
    conversation_id: str | None


_ADAPTER: TypeAdapter[AgentCall] | None = None


def _adapter() -> TypeAdapter[AgentCall]:
    # Built on first use: only the queue's readers decode calls.
    global _ADAPTER
    if _ADAPTER is None:
        from pydantic import TypeAdapter

        _ADAPTER = TypeAdapter(AgentCall)
    return _ADAPTER
