"""The telemetry reference of docs/telemetry.md, generated from `scorewatch.telemetry.names`.

Every span, event, attribute and metric constant of `names` has one entry here, keyed by the
constant's NAME, so its value (what is actually emitted) always comes from `names`. A constant
without an entry, or an entry without a constant, makes `render_reference()` raise, and
tests/docs/test_docs_examples.py checks that the document holds exactly the rendered text. A
tool of the repository, not of the package: users never need it.

    python tools/telemetry_reference.py docs/telemetry.md    # rewrite the generated part
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from scorewatch.telemetry import names

__all__ = [
    "BEGIN_MARKER",
    "END_MARKER",
    "documented_constants",
    "emitted_constants",
    "render_reference",
    "update_document",
]

BEGIN_MARKER: Final = "<!-- BEGIN GENERATED: python tools/telemetry_reference.py -->"
END_MARKER: Final = "<!-- END GENERATED -->"
_PREFIXES: Final = ("SPAN_", "EVENT_", "ATTR_", "METRIC_", "PROM_")


@dataclass(frozen=True, slots=True)
class _Span:
    constant: str
    kind: str
    parent: str
    attributes: tuple[str, ...]
    description: str


@dataclass(frozen=True, slots=True)
class _Metric:
    constant: str
    prometheus: str
    instrument: str
    unit: str
    attributes: tuple[str, ...]
    description: str


_SPANS: Final = (
    _Span(
        "SPAN_RUN",
        "INTERNAL",
        "the caller's current span (a live run starts its own trace and links to the agent's span)",
        (
            "ATTR_OPERATION_NAME",
            "ATTR_EVALUATION_NAME",
            "ATTR_SCORER_ID",
            "ATTR_SCORER_NAME",
            "ATTR_SCORER_VERSION",
            "ATTR_SCORER_DECLARED_VERSION",
            "ATTR_RUN_ID",
            "ATTR_SCORE_SOURCE",
            "ATTR_TARGET",
            "ATTR_SCORE",
            "ATTR_FAILED_STEP",
            "ATTR_ERROR_TYPE",
            "ATTR_RUN_INPUT",
            "ATTR_RUN_OUTPUT",
            "ATTR_REASON",
        ),
        "One scorer run.",
    ),
    _Span(
        "SPAN_STEP",
        "INTERNAL",
        "the run span",
        ("ATTR_STEP", "ATTR_STEP_TYPE", "ATTR_ERROR_TYPE"),
        "One pipeline step (preprocess, analyze, generate_score, generate_reason).",
    ),
    _Span(
        "SPAN_CHAT",
        "CLIENT",
        "the step span",
        (
            "ATTR_OPERATION_NAME",
            "ATTR_STEP",
            "ATTR_JUDGE_ATTEMPT",
            "ATTR_JUDGE_FALLBACK",
            "ATTR_JUDGE_TRANSPORT",
            "ATTR_REQUEST_MODEL",
            "ATTR_JUDGE_MODEL_ROUTE",
            "ATTR_PROVIDER_NAME",
            "ATTR_RESPONSE_MODEL",
            "ATTR_RESPONSE_ID",
            "ATTR_RESPONSE_FINISH_REASONS",
            "ATTR_SERVER_ADDRESS",
            "ATTR_SERVER_PORT",
            "ATTR_USAGE_INPUT_TOKENS",
            "ATTR_USAGE_OUTPUT_TOKENS",
            "ATTR_USAGE_CACHE_READ_INPUT_TOKENS",
            "ATTR_USAGE_CACHE_CREATION_INPUT_TOKENS",
            "ATTR_USAGE_REASONING_OUTPUT_TOKENS",
            "ATTR_JUDGE_COST_AMOUNT",
            "ATTR_JUDGE_COST_CURRENCY",
            "ATTR_JUDGE_COST_SOURCE",
            "ATTR_ERROR_TYPE",
            "ATTR_SYSTEM_INSTRUCTIONS",
            "ATTR_INPUT_MESSAGES",
            "ATTR_OUTPUT_MESSAGES",
        ),
        "One judge model call attempt (retries and the structured-output fallback each get one); "
        "current during the call, so litellm's and the HTTP client's spans nest under it.",
    ),
    _Span(
        "SPAN_QUEUE_SEND",
        "PRODUCER",
        "the HTTP request's span (`scorewatch serve` with a Redis work queue)",
        (
            "ATTR_MESSAGING_SYSTEM",
            "ATTR_MESSAGING_OPERATION_TYPE",
            "ATTR_MESSAGING_DESTINATION",
            "ATTR_MESSAGING_BATCH_COUNT",
        ),
        "Work enqueued on the durable work queue; the worker's run spans link to it.",
    ),
    _Span(
        "SPAN_QUEUE_PROCESS",
        "CONSUMER",
        "none (links to the send span)",
        (
            "ATTR_MESSAGING_SYSTEM",
            "ATTR_MESSAGING_OPERATION_TYPE",
            "ATTR_MESSAGING_DESTINATION",
            "ATTR_QUEUE_REASON",
        ),
        "A worker processing one entry of the work queue (`scorewatch worker`): scoring, "
        "storing, acknowledging; `scorewatch.queue.reason` when it was dead-lettered. A run "
        "without an evaluated span is its child.",
    ),
)

_EVENTS: Final = (
    (
        "EVENT_EVALUATION_RESULT",
        (
            "ATTR_EVALUATION_NAME",
            "ATTR_SCORER_VERSION",
            "ATTR_SCORER_DECLARED_VERSION",
            "ATTR_EVALUATION_SCORE_VALUE",
            "ATTR_EVALUATION_SCORE_LABEL",
            "ATTR_EVALUATION_EXPLANATION",
            "ATTR_RESPONSE_ID",
            "ATTR_RUN_ID",
            "ATTR_ERROR_TYPE",
        ),
        "One log event per finished run, parented to the evaluated span when known, else to the "
        "run span. A failed run carries `error.type`, severity WARN and no score.",
    ),
)

_ATTRIBUTES: Final[dict[str, str]] = {
    "ATTR_OPERATION_NAME": f"`{names.OPERATION_EVALUATION}` (run span) or `{names.OPERATION_CHAT}`"
    " (judge calls)",
    "ATTR_EVALUATION_NAME": "the scorer id",
    "ATTR_PROVIDER_NAME": "the judge's provider, a well-known GenAI value where one exists "
    "(`openai`, `anthropic`, `aws.bedrock`, `gcp.vertex_ai`, ...), else litellm's provider name",
    "ATTR_REQUEST_MODEL": "the judge model name the provider sees (`gpt-4o-mini`, not litellm's "
    "`openai/gpt-4o-mini`; bounded on metrics)",
    "ATTR_JUDGE_MODEL_ROUTE": "litellm's routing id of the judge model (`openai/gpt-4o-mini`)",
    "ATTR_RESPONSE_MODEL": "the model that answered, as the provider reported it",
    "ATTR_RESPONSE_ID": "on a `chat` span: the judge's response id; on the event: the id of the "
    "evaluated completion (the run's `target_metadata[\"response_id\"]`), never the judge's",
    "ATTR_RESPONSE_FINISH_REASONS": "the finish reason of the answer, as a one-element list",
    "ATTR_USAGE_INPUT_TOKENS": "input tokens of the attempt",
    "ATTR_USAGE_OUTPUT_TOKENS": "output tokens of the attempt",
    "ATTR_USAGE_CACHE_READ_INPUT_TOKENS": "input tokens read from the provider's cache",
    "ATTR_USAGE_CACHE_CREATION_INPUT_TOKENS": "input tokens written to the provider's cache",
    "ATTR_USAGE_REASONING_OUTPUT_TOKENS": "output tokens spent on reasoning",
    "ATTR_JUDGE_COST_AMOUNT": "the attempt's cost",
    "ATTR_JUDGE_COST_CURRENCY": "the cost's currency (`USD`)",
    "ATTR_JUDGE_COST_SOURCE": f"`{names.COST_SOURCE_PROVIDER}` (reported by the provider) or "
    f"`{names.COST_SOURCE_ESTIMATE}` (litellm's price table)",
    "ATTR_TOKEN_TYPE": f"`{names.TOKEN_TYPE_INPUT}` or `{names.TOKEN_TYPE_OUTPUT}`",
    "ATTR_INPUT_MESSAGES": "the judge prompt as GenAI messages (JSON); content capture only",
    "ATTR_OUTPUT_MESSAGES": "the judge's answer as GenAI messages (JSON); content capture only",
    "ATTR_SYSTEM_INSTRUCTIONS": "the judge instructions (JSON); content capture only",
    "ATTR_EVALUATION_SCORE_VALUE": "the score",
    "ATTR_EVALUATION_SCORE_LABEL": "`pass` or `fail` when the scorer has a threshold",
    "ATTR_EVALUATION_EXPLANATION": "the reason; content capture only",
    "ATTR_SERVER_ADDRESS": "host of the judge endpoint",
    "ATTR_SERVER_PORT": "port of the judge endpoint",
    "ATTR_ERROR_TYPE": "the error's stable code (e.g. `JUDGE_RATE_LIMITED`), else its class",
    "ATTR_SCORER_ID": "the scorer id",
    "ATTR_SCORER_NAME": "the scorer's display name",
    "ATTR_SCORER_VERSION": "the scorer version: `Scorer.version_fingerprint`, a short hash of "
    "what decides its scores (bounded on metrics)",
    "ATTR_SCORER_DECLARED_VERSION": "the version the scorer's author declared "
    "(`create_scorer(version=...)`), when there is one",
    "ATTR_RUN_ID": "the run id",
    "ATTR_SCORE_SOURCE": "`live`, `experiment`, `api`, ... (the run's `score_source`)",
    "ATTR_SCORE": "the run's score",
    "ATTR_FAILED_STEP": "the step that failed",
    "ATTR_STEP": "the step name (`preprocess`, `analyze`, `generate_score`, `generate_reason`)",
    "ATTR_STEP_TYPE": "`function` or `prompt`",
    "ATTR_TARGET": "what was evaluated (e.g. the agent); bounded on metrics",
    "ATTR_COST_SOURCE": f"`{names.COST_SOURCE_PROVIDER}` or `{names.COST_SOURCE_ESTIMATE}`",
    "ATTR_CACHE_RESULT": f"`{names.CACHE_HIT}` (the answer was reused, no model called) or "
    f"`{names.CACHE_MISS}`",
    "ATTR_STATUS": f"`{names.STATUS_SUCCESS}` or `{names.STATUS_FAILED}` (a judge execution)",
    "ATTR_OUTCOME": f"`{names.OUTCOME_SUCCESS}`, `{names.OUTCOME_FAILED}` or "
    f"`{names.OUTCOME_NOT_SCORABLE}`",
    "ATTR_DECISION": ", ".join(f"`{decision}`" for decision in names.DECISIONS),
    "ATTR_SINK": "the sink's name (e.g. `sqlite`)",
    "ATTR_JUDGE_ATTEMPT": "which attempt of the step this call is (1, 2, ...)",
    "ATTR_JUDGE_FALLBACK": "true for the structured-output fallback attempt",
    "ATTR_JUDGE_TRANSPORT": "the client that made the call: `openai_http` (scorewatch's own), "
    "`litellm`, or `openai_batch` (OpenAI's Batch API, `--batch`); absent for other judge models",
    "ATTR_RUN_INPUT": "the evaluated input (JSON); content capture only",
    "ATTR_RUN_OUTPUT": "the evaluated output (JSON); content capture only",
    "ATTR_REASON": "the reason (JSON); content capture only",
    "ATTR_MESSAGING_SYSTEM": f"`{names.MESSAGING_SYSTEM_REDIS}`",
    "ATTR_MESSAGING_OPERATION_TYPE": "`send` or `process`",
    "ATTR_MESSAGING_DESTINATION": "the work queue's stream name",
    "ATTR_MESSAGING_BATCH_COUNT": "entries sent in one request",
    "ATTR_QUEUE_STREAM": "the work queue's stream name",
    "ATTR_QUEUE_REASON": "why an entry was dead-lettered: `failed`, `max_deliveries`, "
    "`unknown_scorer`, `malformed`",
    "ATTR_BUDGET": "the spend budget: `all` (every judged scorer's) or `scorer:<id>` (its own)",
    "ATTR_TRACES_REASON": "why the trace intake dropped spans or evicted traces",
    "ATTR_TRACES_OUTCOME": "what became of a selected span (`admitted`, or why it was not scored) "
    "or of a conversation (`closed_idle`, ...)",
    "ATTR_AGREEMENT_MEASURE": "an agreement measure: `kappa`, `accuracy`, `false_pass_rate`, "
    "`false_fail_rate`, `spearman`, `mae`, `kappa_at_threshold`",
    "ATTR_REVIEW_STATE": "a run of the review sample: `marked`, `labelled` or `pending`",
}

_JUDGE_CALL = (
    "ATTR_OPERATION_NAME",
    "ATTR_REQUEST_MODEL",
    "ATTR_PROVIDER_NAME",
    "ATTR_EVALUATION_NAME",
    "ATTR_STEP",
)

_METRICS: Final = (
    _Metric(
        "METRIC_TOKEN_USAGE",
        "PROM_TOKEN_USAGE",
        "histogram",
        names.UNIT_TOKEN,
        (*_JUDGE_CALL, "ATTR_TOKEN_TYPE"),
        "Tokens per judge attempt, by token type.",
    ),
    _Metric(
        "METRIC_OPERATION_DURATION",
        "PROM_OPERATION_DURATION",
        "histogram",
        names.UNIT_SECONDS,
        (*_JUDGE_CALL, "ATTR_ERROR_TYPE"),
        "Duration of each judge attempt.",
    ),
    _Metric(
        "METRIC_JUDGE_COST",
        "PROM_JUDGE_COST",
        "counter",
        names.UNIT_COST_USD,
        ("ATTR_REQUEST_MODEL", "ATTR_EVALUATION_NAME", "ATTR_STEP", "ATTR_COST_SOURCE"),
        "Judge spend in USD: the provider's reported cost, else litellm's price-table estimate.",
    ),
    _Metric(
        "METRIC_JUDGE_EXECUTIONS",
        "PROM_JUDGE_EXECUTIONS",
        "counter",
        names.UNIT_DIMENSIONLESS,
        ("ATTR_EVALUATION_NAME", "ATTR_STEP", "ATTR_REQUEST_MODEL", "ATTR_STATUS"),
        "Judge executions (one per prompt step run), as in the judge records.",
    ),
    _Metric(
        "METRIC_JUDGE_ATTEMPTS",
        "PROM_JUDGE_ATTEMPTS",
        "counter",
        names.UNIT_DIMENSIONLESS,
        ("ATTR_EVALUATION_NAME", "ATTR_STEP", "ATTR_REQUEST_MODEL", "ATTR_STATUS"),
        "Attempts of those executions (retries and fallbacks included): `attempt_count`.",
    ),
    _Metric(
        "METRIC_JUDGE_CACHE_LOOKUPS",
        "PROM_JUDGE_CACHE_LOOKUPS",
        "counter",
        names.UNIT_DIMENSIONLESS,
        ("ATTR_EVALUATION_NAME", "ATTR_STEP", "ATTR_REQUEST_MODEL", "ATTR_CACHE_RESULT"),
        "Verdict cache lookups of prompt steps (only where caching is on); a hit is an "
        "execution recorded `cached` that called no model.",
    ),
    _Metric(
        "METRIC_JUDGE_CACHE_SAVED",
        "PROM_JUDGE_CACHE_SAVED",
        "counter",
        names.UNIT_COST_USD,
        ("ATTR_EVALUATION_NAME", "ATTR_STEP", "ATTR_REQUEST_MODEL"),
        "What reused verdicts saved in USD: the `savedCostUsd` of the cached executions.",
    ),
    _Metric(
        "METRIC_SCORE",
        "PROM_SCORE",
        "histogram",
        names.UNIT_DIMENSIONLESS,
        ("ATTR_EVALUATION_NAME", "ATTR_SCORE_SOURCE", "ATTR_TARGET", "ATTR_SCORER_VERSION"),
        "Scores of successful runs; buckets 0.05 apart times the scorer's scale.",
    ),
    _Metric(
        "METRIC_SCORE_SQUARES",
        "PROM_SCORE_SQUARES",
        "counter",
        names.UNIT_DIMENSIONLESS,
        ("ATTR_EVALUATION_NAME", "ATTR_SCORE_SOURCE", "ATTR_TARGET", "ATTR_SCORER_VERSION"),
        "The sum of squared scores of the same runs: with the histogram's `_sum` and `_count`, "
        "the variance of a window's scores and the standard error of its mean.",
    ),
    _Metric(
        "METRIC_SCORER_INFO",
        "PROM_SCORER_INFO",
        "gauge",
        names.UNIT_DIMENSIONLESS,
        ("ATTR_EVALUATION_NAME", "ATTR_SCORER_VERSION", "ATTR_SCORER_DECLARED_VERSION"),
        "1 for every scorer version the process has scored with, for dashboards to mark a "
        "version change.",
    ),
    _Metric(
        "METRIC_SCORER_RUNS",
        "PROM_SCORER_RUNS",
        "counter",
        names.UNIT_DIMENSIONLESS,
        ("ATTR_EVALUATION_NAME", "ATTR_OUTCOME", "ATTR_FAILED_STEP"),
        "Finished runs by outcome (a failed run has no score: it is not a low score).",
    ),
    _Metric(
        "METRIC_RUN_DURATION",
        "PROM_RUN_DURATION",
        "histogram",
        names.UNIT_SECONDS,
        ("ATTR_EVALUATION_NAME", "ATTR_OUTCOME"),
        "Duration of whole runs.",
    ),
    _Metric(
        "METRIC_STEP_DURATION",
        "PROM_STEP_DURATION",
        "histogram",
        names.UNIT_SECONDS,
        ("ATTR_EVALUATION_NAME", "ATTR_STEP", "ATTR_STEP_TYPE"),
        "Duration of each step.",
    ),
    _Metric(
        "METRIC_LIVE_DECISIONS",
        "PROM_LIVE_DECISIONS",
        "counter",
        names.UNIT_DIMENSIONLESS,
        ("ATTR_EVALUATION_NAME", "ATTR_DECISION"),
        "Every live-scoring decision, one per scorer per call.",
    ),
    _Metric(
        "METRIC_LIVE_QUEUE_DEPTH",
        "PROM_LIVE_QUEUE_DEPTH",
        "gauge",
        names.UNIT_DIMENSIONLESS,
        (),
        "Live runs waiting in the queue (all `LiveScoring` instances).",
    ),
    _Metric(
        "METRIC_LIVE_IN_FLIGHT",
        "PROM_LIVE_IN_FLIGHT",
        "up-down counter",
        names.UNIT_DIMENSIONLESS,
        (),
        "Live runs running now.",
    ),
    _Metric(
        "METRIC_SINK_ERRORS",
        "PROM_SINK_ERRORS",
        "counter",
        names.UNIT_DIMENSIONLESS,
        ("ATTR_SINK",),
        "Failed writes of live results to a sink.",
    ),
    _Metric(
        "METRIC_BUDGET_SAMPLING_RATE",
        "PROM_BUDGET_SAMPLING_RATE",
        "gauge",
        names.UNIT_DIMENSIONLESS,
        ("ATTR_EVALUATION_NAME", "ATTR_BUDGET"),
        "The sampling probability a scorer's spend budgets allow now (at most its configured "
        "rate), labelled with its tightest budget.",
    ),
    _Metric(
        "METRIC_BUDGET_CONFIGURED_RATE",
        "PROM_BUDGET_CONFIGURED_RATE",
        "gauge",
        names.UNIT_DIMENSIONLESS,
        ("ATTR_EVALUATION_NAME", "ATTR_BUDGET"),
        "The scorer's configured sampling rate, beside the rate its budget allows.",
    ),
    _Metric(
        "METRIC_BUDGET_REMAINING",
        "PROM_BUDGET_REMAINING",
        "gauge",
        names.UNIT_COST_USD,
        ("ATTR_EVALUATION_NAME", "ATTR_BUDGET"),
        "What is left of the scorer's tightest budget this UTC day, runs in flight reserved.",
    ),
    _Metric(
        "METRIC_BUDGET_LIMIT",
        "PROM_BUDGET_LIMIT",
        "gauge",
        names.UNIT_COST_USD,
        ("ATTR_EVALUATION_NAME", "ATTR_BUDGET"),
        "That budget per UTC day.",
    ),
    _Metric(
        "METRIC_QUEUE_BACKLOG",
        "PROM_QUEUE_BACKLOG",
        "gauge",
        names.UNIT_DIMENSIONLESS,
        ("ATTR_QUEUE_STREAM",),
        "Work-queue entries accepted and not yet acknowledged.",
    ),
    _Metric(
        "METRIC_QUEUE_PENDING",
        "PROM_QUEUE_PENDING",
        "gauge",
        names.UNIT_DIMENSIONLESS,
        ("ATTR_QUEUE_STREAM",),
        "Entries delivered to a worker and not yet acknowledged.",
    ),
    _Metric(
        "METRIC_QUEUE_LAG",
        "PROM_QUEUE_LAG",
        "gauge",
        names.UNIT_DIMENSIONLESS,
        ("ATTR_QUEUE_STREAM",),
        "Entries not yet delivered to any worker.",
    ),
    _Metric(
        "METRIC_QUEUE_DEAD_LETTERS",
        "PROM_QUEUE_DEAD_LETTERS",
        "gauge",
        names.UNIT_DIMENSIONLESS,
        ("ATTR_QUEUE_STREAM",),
        "Entries in the dead-letter stream.",
    ),
    _Metric(
        "METRIC_QUEUE_REDELIVERIES",
        "PROM_QUEUE_REDELIVERIES",
        "counter",
        names.UNIT_DIMENSIONLESS,
        ("ATTR_QUEUE_STREAM",),
        "Entries claimed again after a worker held them too long.",
    ),
    _Metric(
        "METRIC_QUEUE_DEAD_LETTERED",
        "PROM_QUEUE_DEAD_LETTERED",
        "counter",
        names.UNIT_DIMENSIONLESS,
        ("ATTR_QUEUE_STREAM", "ATTR_QUEUE_REASON"),
        "Entries moved to the dead-letter stream, by reason.",
    ),
    _Metric(
        "METRIC_TRACES_SPANS_RECEIVED",
        "PROM_TRACES_SPANS_RECEIVED",
        "counter",
        names.UNIT_DIMENSIONLESS,
        (),
        "Spans received on `POST /v1/traces` (`scorewatch serve` with `[traces]`).",
    ),
    _Metric(
        "METRIC_TRACES_SPANS_DROPPED",
        "PROM_TRACES_SPANS_DROPPED",
        "counter",
        names.UNIT_DIMENSIONLESS,
        ("ATTR_TRACES_REASON",),
        "Spans not kept on arrival, by reason: `max_bytes`, `max_spans_per_trace`, `duplicate` "
        "(answered as rejected spans), `own` (scorewatch's own telemetry, never scored), "
        "`not_sampled` (of a trace no scorer samples, decided from its trace id: held as ids "
        "only, never extracted), `shutdown`.",
    ),
    _Metric(
        "METRIC_TRACES_EVICTED",
        "PROM_TRACES_EVICTED",
        "counter",
        names.UNIT_DIMENSIONLESS,
        ("ATTR_TRACES_REASON",),
        "Incomplete traces given up, by reason: `max_traces` (room for a new one), `max_age`.",
    ),
    _Metric(
        "METRIC_TRACES_RUNS",
        "PROM_TRACES_RUNS",
        "counter",
        names.UNIT_DIMENSIONLESS,
        ("ATTR_TRACES_OUTCOME",),
        "What became of each selected span: `admitted` (to the scorers, like a `POST "
        "/v1/scores` item), or not scored: `no_content` (content capture off), `no_output`, "
        "`nested`, `evicted`, `queue_full`, `shutdown`, `unavailable`.",
    ),
    _Metric(
        "METRIC_TRACES_SESSIONS",
        "PROM_TRACES_SESSIONS",
        "counter",
        names.UNIT_DIMENSIONLESS,
        ("ATTR_TRACES_OUTCOME",),
        "Conversations scored as sessions (`[traces.sessions]`), by how each closed: "
        "`closed_idle`, `closed_max_turns`, `closed_end` (the agent marked it), `closed_flush` "
        "(shutdown), or early on a bound: `closed_max_sessions`, `closed_max_bytes`; and "
        "`turns_dropped_too_large` (a turn over the byte bound on its own).",
    ),
    _Metric(
        "METRIC_LABELS",
        "PROM_LABELS",
        "counter",
        names.UNIT_DIMENSIONLESS,
        ("ATTR_SCORER_ID",),
        "Human labels stored by `POST /v1/labels` in this process, per scorer.",
    ),
    _Metric(
        "METRIC_JUDGE_AGREEMENT",
        "PROM_JUDGE_AGREEMENT",
        "gauge",
        names.UNIT_DIMENSIONLESS,
        ("ATTR_SCORER_ID", "ATTR_SCORER_VERSION", "ATTR_AGREEMENT_MEASURE"),
        "A scorer version's agreement with its stored human labels (docs/labels.md), "
        "recomputed after labels arrive; `measure` `labels` is the number of labels counted.",
    ),
    _Metric(
        "METRIC_REVIEW_RUNS",
        "PROM_REVIEW_RUNS",
        "gauge",
        names.UNIT_DIMENSIONLESS,
        ("ATTR_SCORER_ID", "ATTR_REVIEW_STATE"),
        "Runs of a scorer's review sample (`review_rate`), as marked in the score rows when "
        "they were scored: `marked`, `labelled`, `pending` (not labelled yet); exact counts.",
    ),
)


def emitted_constants() -> set[str]:
    """The constants of `names` that name something emitted (spans, events, attributes,
    metrics, Prometheus series)."""
    return {name for name in names.__all__ if name.startswith(_PREFIXES)}


def documented_constants() -> set[str]:
    documented = {span.constant for span in _SPANS}
    documented.update(event for event, _, _ in _EVENTS)
    documented.update(_ATTRIBUTES)
    for metric in _METRICS:
        documented.update((metric.constant, metric.prometheus))
    return documented


def _value(constant: str) -> str:
    value = getattr(names, constant)
    if not isinstance(value, str):
        raise TypeError(f"names.{constant} is not a string")
    return value


def _codes(constants: Iterable[str]) -> str:
    return ", ".join(f"`{_value(constant)}`" for constant in constants) or "-"


def _check() -> None:
    missing = emitted_constants() - documented_constants()
    stale = documented_constants() - emitted_constants()
    if missing or stale:
        raise ValueError(
            "the telemetry reference and scorewatch.telemetry.names disagree: undocumented "
            f"{sorted(missing)}, no longer in names {sorted(stale)}"
        )
    for span in _SPANS:
        for attribute in span.attributes:
            _value(attribute)
    for metric in _METRICS:
        for attribute in metric.attributes:
            _value(attribute)


def render_reference() -> str:
    """The generated Markdown (without the markers)."""
    _check()
    lines = [
        "## Reference (generated)",
        "",
        "Generated from `scorewatch.telemetry.names` by `python tools/telemetry_reference.py "
        "docs/telemetry.md`; a test fails when this section and the code disagree. "
        f"Instrumentation scope: `{names.INSTRUMENTATION_SCOPE}`.",
        "",
        "### Spans",
        "",
        "| Span name | Kind | Parent | Attributes | What |",
        "|---|---|---|---|---|",
    ]
    for span in _SPANS:
        lines.append(
            f"| `{_value(span.constant)}` | {span.kind} | {span.parent} | "
            f"{_codes(span.attributes)} | {span.description} |"
        )
    lines += ["", "### Events", "", "| Event | Attributes | What |", "|---|---|---|"]
    for event, attributes, description in _EVENTS:
        lines.append(f"| `{_value(event)}` | {_codes(attributes)} | {description} |")
    lines += [
        "",
        "### Metrics",
        "",
        "| OpenTelemetry instrument | Prometheus series | Type | Unit | Attributes (labels) | "
        "What |",
        "|---|---|---|---|---|---|",
    ]
    for metric in _METRICS:
        lines.append(
            f"| `{_value(metric.constant)}` | `{_value(metric.prometheus)}` | "
            f"{metric.instrument} | `{metric.unit}` | {_codes(metric.attributes)} | "
            f"{metric.description} |"
        )
    lines += [
        "",
        "Prometheus label names are the attribute names with dots replaced by underscores "
        "(`gen_ai.evaluation.name` -> `gen_ai_evaluation_name`). Histogram buckets: tokens "
        f"{_floats(names.TOKEN_BUCKETS)}; judge call and step seconds "
        f"{_floats(names.DURATION_BUCKETS_S)}; run seconds "
        f"{_floats(names.RUN_DURATION_BUCKETS_S)}; scores {_floats(names.SCORE_BUCKETS)} "
        "(times the scorer's scale).",
        "",
        "### Attributes",
        "",
        "| Attribute | Values |",
        "|---|---|",
    ]
    for constant in sorted(_ATTRIBUTES, key=_value):
        lines.append(f"| `{_value(constant)}` | {_ATTRIBUTES[constant]} |")
    lines += [
        "",
        f"Content capture: `{names.ENV_CAPTURE_CONTENT}` or `capture_content=`. Cardinality: "
        f"after {names.DEFAULT_CARDINALITY_LIMIT} distinct values of a bounded attribute, new "
        f"values are reported as `{names.CARDINALITY_OVERFLOW}`.",
    ]
    return "\n".join(lines) + "\n"


def _floats(values: Iterable[float]) -> str:
    return ", ".join(
        f"{value:.0f}" if float(value).is_integer() else f"{value:g}" for value in values
    )


def update_document(text: str) -> str:
    """`text` with its generated section replaced (appended, with markers, when absent)."""
    block = f"{BEGIN_MARKER}\n{render_reference()}{END_MARKER}\n"
    start = text.find(BEGIN_MARKER)
    if start < 0:
        return text.rstrip("\n") + "\n\n" + block
    end = text.find(END_MARKER, start)
    if end < 0:
        raise ValueError(f"{BEGIN_MARKER!r} without {END_MARKER!r}")
    return text[:start] + block + text[end + len(END_MARKER) :].lstrip("\n")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python tools/telemetry_reference.py docs/telemetry.md", file=sys.stderr)
        return 2
    path = Path(args[0])
    path.write_text(update_document(path.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
