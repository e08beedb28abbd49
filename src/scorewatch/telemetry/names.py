"""Every telemetry name scorewatch emits: spans, attributes, events, metrics, units and buckets.

Names follow the OpenTelemetry GenAI semantic conventions (core semantic-conventions v1.41,
"Development" status); the rest lives in the `scorewatch.*` namespace. Nothing else in the code
base spells a telemetry name: a rename is a one-line change here. See docs/spec telemetry.md.
"""

from __future__ import annotations

from typing import Final, get_args

from ..live.events import LiveDecision

__all__ = [
    "ATTR_AGREEMENT_MEASURE",
    "ATTR_BUDGET",
    "ATTR_CACHE_RESULT",
    "ATTR_COST_SOURCE",
    "ATTR_DECISION",
    "ATTR_ERROR_TYPE",
    "ATTR_EVALUATION_EXPLANATION",
    "ATTR_EVALUATION_NAME",
    "ATTR_EVALUATION_SCORE_LABEL",
    "ATTR_EVALUATION_SCORE_VALUE",
    "ATTR_FAILED_STEP",
    "ATTR_INPUT_MESSAGES",
    "ATTR_JUDGE_ATTEMPT",
    "ATTR_JUDGE_COST_AMOUNT",
    "ATTR_JUDGE_COST_CURRENCY",
    "ATTR_JUDGE_COST_SOURCE",
    "ATTR_JUDGE_FALLBACK",
    "ATTR_JUDGE_MODEL_ROUTE",
    "ATTR_JUDGE_TRANSPORT",
    "ATTR_MESSAGING_BATCH_COUNT",
    "ATTR_MESSAGING_DESTINATION",
    "ATTR_MESSAGING_OPERATION_TYPE",
    "ATTR_MESSAGING_SYSTEM",
    "ATTR_OPERATION_NAME",
    "ATTR_OUTCOME",
    "ATTR_OUTPUT_MESSAGES",
    "ATTR_PROVIDER_NAME",
    "ATTR_QUEUE_REASON",
    "ATTR_QUEUE_STREAM",
    "ATTR_REASON",
    "ATTR_REQUEST_MODEL",
    "ATTR_RESPONSE_FINISH_REASONS",
    "ATTR_RESPONSE_ID",
    "ATTR_RESPONSE_MODEL",
    "ATTR_REVIEW_STATE",
    "ATTR_RUN_ID",
    "ATTR_RUN_INPUT",
    "ATTR_RUN_OUTPUT",
    "ATTR_SCORE",
    "ATTR_SCORER_DECLARED_VERSION",
    "ATTR_SCORER_ID",
    "ATTR_SCORER_NAME",
    "ATTR_SCORER_VERSION",
    "ATTR_SCORE_SOURCE",
    "ATTR_SERVER_ADDRESS",
    "ATTR_SERVER_PORT",
    "ATTR_SINK",
    "ATTR_STATUS",
    "ATTR_STEP",
    "ATTR_STEP_TYPE",
    "ATTR_SYSTEM_INSTRUCTIONS",
    "ATTR_TARGET",
    "ATTR_TOKEN_TYPE",
    "ATTR_TRACES_OUTCOME",
    "ATTR_TRACES_REASON",
    "ATTR_USAGE_CACHE_CREATION_INPUT_TOKENS",
    "ATTR_USAGE_CACHE_READ_INPUT_TOKENS",
    "ATTR_USAGE_INPUT_TOKENS",
    "ATTR_USAGE_OUTPUT_TOKENS",
    "ATTR_USAGE_REASONING_OUTPUT_TOKENS",
    "CACHE_HIT",
    "CACHE_MISS",
    "CARDINALITY_OVERFLOW",
    "COST_SOURCE_ESTIMATE",
    "COST_SOURCE_PROVIDER",
    "DECISIONS",
    "DEFAULT_CARDINALITY_LIMIT",
    "DEFAULT_PROMETHEUS_ADDRESS",
    "DURATION_BUCKETS_S",
    "ENV_CAPTURE_CONTENT",
    "EVENT_EVALUATION_RESULT",
    "INSTRUMENTATION_SCOPE",
    "MESSAGING_SYSTEM_REDIS",
    "METADATA_RESPONSE_ID",
    "METRIC_BUDGET_CONFIGURED_RATE",
    "METRIC_BUDGET_LIMIT",
    "METRIC_BUDGET_REMAINING",
    "METRIC_BUDGET_SAMPLING_RATE",
    "METRIC_JUDGE_AGREEMENT",
    "METRIC_JUDGE_ATTEMPTS",
    "METRIC_JUDGE_CACHE_LOOKUPS",
    "METRIC_JUDGE_CACHE_SAVED",
    "METRIC_JUDGE_COST",
    "METRIC_JUDGE_EXECUTIONS",
    "METRIC_LABELS",
    "METRIC_LIVE_DECISIONS",
    "METRIC_LIVE_IN_FLIGHT",
    "METRIC_LIVE_QUEUE_DEPTH",
    "METRIC_OPERATION_DURATION",
    "METRIC_QUEUE_BACKLOG",
    "METRIC_QUEUE_DEAD_LETTERED",
    "METRIC_QUEUE_DEAD_LETTERS",
    "METRIC_QUEUE_LAG",
    "METRIC_QUEUE_PENDING",
    "METRIC_QUEUE_REDELIVERIES",
    "METRIC_REVIEW_RUNS",
    "METRIC_RUN_DURATION",
    "METRIC_SCORE",
    "METRIC_SCORER_INFO",
    "METRIC_SCORER_RUNS",
    "METRIC_SCORE_SQUARES",
    "METRIC_SINK_ERRORS",
    "METRIC_STEP_DURATION",
    "METRIC_TOKEN_USAGE",
    "METRIC_TRACES_EVICTED",
    "METRIC_TRACES_RUNS",
    "METRIC_TRACES_SESSIONS",
    "METRIC_TRACES_SPANS_DROPPED",
    "METRIC_TRACES_SPANS_RECEIVED",
    "OPERATION_CHAT",
    "OPERATION_EVALUATION",
    "OUTCOME_FAILED",
    "OUTCOME_NOT_SCORABLE",
    "OUTCOME_SUCCESS",
    "PROM_BUDGET_CONFIGURED_RATE",
    "PROM_BUDGET_LIMIT",
    "PROM_BUDGET_REMAINING",
    "PROM_BUDGET_SAMPLING_RATE",
    "PROM_JUDGE_AGREEMENT",
    "PROM_JUDGE_ATTEMPTS",
    "PROM_JUDGE_CACHE_LOOKUPS",
    "PROM_JUDGE_CACHE_SAVED",
    "PROM_JUDGE_COST",
    "PROM_JUDGE_EXECUTIONS",
    "PROM_LABELS",
    "PROM_LIVE_DECISIONS",
    "PROM_LIVE_IN_FLIGHT",
    "PROM_LIVE_QUEUE_DEPTH",
    "PROM_OPERATION_DURATION",
    "PROM_QUEUE_BACKLOG",
    "PROM_QUEUE_DEAD_LETTERED",
    "PROM_QUEUE_DEAD_LETTERS",
    "PROM_QUEUE_LAG",
    "PROM_QUEUE_PENDING",
    "PROM_QUEUE_REDELIVERIES",
    "PROM_REVIEW_RUNS",
    "PROM_RUN_DURATION",
    "PROM_SCORE",
    "PROM_SCORER_INFO",
    "PROM_SCORER_RUNS",
    "PROM_SCORE_SQUARES",
    "PROM_SINK_ERRORS",
    "PROM_STEP_DURATION",
    "PROM_TOKEN_USAGE",
    "PROM_TRACES_EVICTED",
    "PROM_TRACES_RUNS",
    "PROM_TRACES_SESSIONS",
    "PROM_TRACES_SPANS_DROPPED",
    "PROM_TRACES_SPANS_RECEIVED",
    "RUN_DURATION_BUCKETS_S",
    "SCORE_BUCKETS",
    "SPAN_CHAT",
    "SPAN_QUEUE_PROCESS",
    "SPAN_QUEUE_SEND",
    "SPAN_RUN",
    "SPAN_STEP",
    "STATUS_FAILED",
    "STATUS_SUCCESS",
    "TOKEN_BUCKETS",
    "TOKEN_TYPE_INPUT",
    "TOKEN_TYPE_OUTPUT",
    "UNIT_COST_USD",
    "UNIT_DIMENSIONLESS",
    "UNIT_SECONDS",
    "UNIT_TOKEN",
    "chat_span_name",
    "queue_process_span_name",
    "queue_send_span_name",
    "run_span_name",
    "score_buckets",
    "step_span_name",
]

INSTRUMENTATION_SCOPE: Final = "scorewatch.telemetry"

# -- spans --------------------------------------------------------------------------------------

SPAN_RUN: Final = "evaluation {scorer_id}"
SPAN_STEP: Final = "evaluation.step {step}"
SPAN_CHAT: Final = "chat {model}"


def run_span_name(scorer_id: str) -> str:
    return SPAN_RUN.format(scorer_id=scorer_id)


def step_span_name(step: str) -> str:
    return SPAN_STEP.format(step=step)


def chat_span_name(model: str) -> str:
    return SPAN_CHAT.format(model=model)


# The durable work queue (Redis streams): a PRODUCER span per request that enqueues work; the
# worker's run spans link to it (messaging semantic conventions).
SPAN_QUEUE_SEND: Final = "send {stream}"
SPAN_QUEUE_PROCESS: Final = "process {stream}"


def queue_send_span_name(stream: str) -> str:
    return SPAN_QUEUE_SEND.format(stream=stream)


def queue_process_span_name(stream: str) -> str:
    return SPAN_QUEUE_PROCESS.format(stream=stream)


OPERATION_EVALUATION: Final = "evaluation"
OPERATION_CHAT: Final = "chat"

# -- attributes: GenAI semantic conventions ----------------------------------------------------

ATTR_OPERATION_NAME: Final = "gen_ai.operation.name"
ATTR_EVALUATION_NAME: Final = "gen_ai.evaluation.name"
ATTR_PROVIDER_NAME: Final = "gen_ai.provider.name"
ATTR_REQUEST_MODEL: Final = "gen_ai.request.model"
ATTR_RESPONSE_MODEL: Final = "gen_ai.response.model"
ATTR_RESPONSE_ID: Final = "gen_ai.response.id"
ATTR_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
ATTR_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
ATTR_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
ATTR_USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
ATTR_USAGE_CACHE_CREATION_INPUT_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
ATTR_USAGE_REASONING_OUTPUT_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"
ATTR_TOKEN_TYPE: Final = "gen_ai.token.type"
ATTR_INPUT_MESSAGES: Final = "gen_ai.input.messages"
ATTR_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
ATTR_SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
ATTR_EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
ATTR_EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
ATTR_EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"
ATTR_SERVER_ADDRESS: Final = "server.address"
ATTR_SERVER_PORT: Final = "server.port"
ATTR_ERROR_TYPE: Final = "error.type"
ATTR_MESSAGING_SYSTEM: Final = "messaging.system"
ATTR_MESSAGING_OPERATION_TYPE: Final = "messaging.operation.type"
ATTR_MESSAGING_DESTINATION: Final = "messaging.destination.name"
ATTR_MESSAGING_BATCH_COUNT: Final = "messaging.batch.message_count"
MESSAGING_SYSTEM_REDIS: Final = "redis"

TOKEN_TYPE_INPUT: Final = "input"
TOKEN_TYPE_OUTPUT: Final = "output"

# -- attributes: scorewatch namespace ----------------------------------------------------------

ATTR_SCORER_ID: Final = "scorewatch.scorer.id"
ATTR_SCORER_NAME: Final = "scorewatch.scorer.name"
# The scorer's version fingerprint (`Scorer.version_fingerprint`) and its declared version: a
# score series per version, so no comparison mixes the scores of two scorer definitions.
ATTR_SCORER_VERSION: Final = "scorewatch.scorer.version"
ATTR_SCORER_DECLARED_VERSION: Final = "scorewatch.scorer.declared_version"
ATTR_RUN_ID: Final = "scorewatch.run_id"
ATTR_SCORE_SOURCE: Final = "scorewatch.score_source"
ATTR_SCORE: Final = "scorewatch.score"
ATTR_FAILED_STEP: Final = "scorewatch.failed_step"
ATTR_STEP: Final = "scorewatch.step"
ATTR_STEP_TYPE: Final = "scorewatch.step.type"
ATTR_TARGET: Final = "scorewatch.target"
ATTR_COST_SOURCE: Final = "scorewatch.cost.source"
ATTR_STATUS: Final = "scorewatch.status"
# A verdict cache lookup's result (core/verdict_cache.py): `CACHE_HIT` or `CACHE_MISS`.
ATTR_CACHE_RESULT: Final = "scorewatch.judge.cache.result"
ATTR_OUTCOME: Final = "scorewatch.outcome"
ATTR_DECISION: Final = "scorewatch.decision"
ATTR_SINK: Final = "scorewatch.sink"
ATTR_QUEUE_STREAM: Final = "scorewatch.queue.stream"
# Why an entry was dead-lettered: failed, max_deliveries, unknown_scorer, malformed.
ATTR_QUEUE_REASON: Final = "scorewatch.queue.reason"
ATTR_BUDGET: Final = "scorewatch.budget"
# Why the trace intake dropped spans or evicted traces: max_bytes, max_spans_per_trace,
# duplicate, own; max_traces, max_age.
ATTR_TRACES_REASON: Final = "scorewatch.traces.reason"
# What became of a span the trace intake selected: admitted, or why it was not scored; of a
# conversation: closed_idle, closed_max_turns, closed_end, closed_flush, closed_max_sessions,
# closed_max_bytes, turns_dropped_too_large.
ATTR_TRACES_OUTCOME: Final = "scorewatch.traces.outcome"
ATTR_AGREEMENT_MEASURE: Final = "scorewatch.agreement.measure"
ATTR_REVIEW_STATE: Final = "scorewatch.review.state"
# Our own, span-only: which attempt of the step a `chat` span is, and whether it is the
# structured-output fallback.
ATTR_JUDGE_ATTEMPT: Final = "scorewatch.judge.attempt"
ATTR_JUDGE_FALLBACK: Final = "scorewatch.judge.fallback"
# The judge call's cost on its `chat` span. GenAI conventions define no cost attribute, so these
# are ours (the `gen_ai.*` namespace is reserved for the conventions).
ATTR_JUDGE_COST_AMOUNT: Final = "scorewatch.judge.cost.amount"
ATTR_JUDGE_COST_CURRENCY: Final = "scorewatch.judge.cost.currency"
ATTR_JUDGE_COST_SOURCE: Final = "scorewatch.judge.cost.source"
# litellm's routing id of the judge model (`openai/gpt-4o-mini`); `gen_ai.request.model` carries
# the name the provider sees (`gpt-4o-mini`).
ATTR_JUDGE_MODEL_ROUTE: Final = "scorewatch.judge.model_route"
ATTR_JUDGE_TRANSPORT: Final = "scorewatch.judge.transport"
# Content of the run itself, on the run span, only when content capture is on for spans.
ATTR_RUN_INPUT: Final = "scorewatch.input"
ATTR_RUN_OUTPUT: Final = "scorewatch.output"
ATTR_REASON: Final = "scorewatch.reason"

COST_SOURCE_PROVIDER: Final = "provider"
CACHE_HIT: Final = "hit"
CACHE_MISS: Final = "miss"
COST_SOURCE_ESTIMATE: Final = "estimate"
STATUS_SUCCESS: Final = "success"
STATUS_FAILED: Final = "failed"
OUTCOME_SUCCESS: Final = "success"
OUTCOME_FAILED: Final = "failed"
OUTCOME_NOT_SCORABLE: Final = "not_scorable"
DECISIONS: Final[tuple[str, ...]] = get_args(LiveDecision)  # the values of ATTR_DECISION

# -- events ------------------------------------------------------------------------------------

EVENT_EVALUATION_RESULT: Final = "gen_ai.evaluation.result"

# -- metrics: OTel instrument names and the Prometheus series they become -----------------------

METRIC_TOKEN_USAGE: Final = "gen_ai.client.token.usage"
METRIC_OPERATION_DURATION: Final = "gen_ai.client.operation.duration"
METRIC_JUDGE_COST: Final = "scorewatch.judge.cost.usd"
METRIC_JUDGE_EXECUTIONS: Final = "scorewatch.judge.executions"
METRIC_JUDGE_ATTEMPTS: Final = "scorewatch.judge.attempts"
METRIC_JUDGE_CACHE_LOOKUPS: Final = "scorewatch.judge.cache.lookups"
METRIC_JUDGE_CACHE_SAVED: Final = "scorewatch.judge.cache.saved.usd"
METRIC_SCORE: Final = "scorewatch.evaluation.score"
# The sum of squared scores beside the histogram's sum and count: the variance of a window's
# scores in PromQL, hence the standard error of its mean (the alerts' noise band).
METRIC_SCORE_SQUARES: Final = "scorewatch.evaluation.score.squares"
# 1 for every (scorer, version) this process has scored with: dashboards mark a version change.
METRIC_SCORER_INFO: Final = "scorewatch.scorer.info"
METRIC_SCORER_RUNS: Final = "scorewatch.scorer.runs"
METRIC_RUN_DURATION: Final = "scorewatch.scorer.run.duration"
METRIC_STEP_DURATION: Final = "scorewatch.scorer.step.duration"
METRIC_LIVE_DECISIONS: Final = "scorewatch.live.decisions"
METRIC_LIVE_QUEUE_DEPTH: Final = "scorewatch.live.queue.depth"
METRIC_LIVE_IN_FLIGHT: Final = "scorewatch.live.in_flight"
METRIC_SINK_ERRORS: Final = "scorewatch.sink.errors"
METRIC_BUDGET_SAMPLING_RATE: Final = "scorewatch.budget.sampling.rate"
METRIC_BUDGET_CONFIGURED_RATE: Final = "scorewatch.budget.configured.rate"
METRIC_BUDGET_REMAINING: Final = "scorewatch.budget.remaining.usd"
METRIC_BUDGET_LIMIT: Final = "scorewatch.budget.limit.usd"
METRIC_QUEUE_BACKLOG: Final = "scorewatch.queue.backlog"
METRIC_QUEUE_PENDING: Final = "scorewatch.queue.pending"
METRIC_QUEUE_LAG: Final = "scorewatch.queue.lag"
METRIC_QUEUE_DEAD_LETTERS: Final = "scorewatch.queue.dead_letters"
METRIC_QUEUE_REDELIVERIES: Final = "scorewatch.queue.redeliveries"
METRIC_QUEUE_DEAD_LETTERED: Final = "scorewatch.queue.dead_lettered"
METRIC_TRACES_SPANS_RECEIVED: Final = "scorewatch.traces.spans.received"
METRIC_TRACES_SPANS_DROPPED: Final = "scorewatch.traces.spans.dropped"
METRIC_TRACES_EVICTED: Final = "scorewatch.traces.evicted"
METRIC_TRACES_RUNS: Final = "scorewatch.traces.runs"
METRIC_TRACES_SESSIONS: Final = "scorewatch.traces.sessions"
METRIC_LABELS: Final = "scorewatch.labels"
METRIC_JUDGE_AGREEMENT: Final = "scorewatch.judge.agreement"
METRIC_REVIEW_RUNS: Final = "scorewatch.review.runs"

PROM_TOKEN_USAGE: Final = "gen_ai_client_token_usage"
PROM_OPERATION_DURATION: Final = "gen_ai_client_operation_duration_seconds"
PROM_JUDGE_COST: Final = "scorewatch_judge_cost_usd_total"
PROM_JUDGE_EXECUTIONS: Final = "scorewatch_judge_executions_total"
PROM_JUDGE_ATTEMPTS: Final = "scorewatch_judge_attempts_total"
PROM_JUDGE_CACHE_LOOKUPS: Final = "scorewatch_judge_cache_lookups_total"
PROM_JUDGE_CACHE_SAVED: Final = "scorewatch_judge_cache_saved_usd_total"
PROM_SCORE: Final = "scorewatch_evaluation_score"
PROM_SCORE_SQUARES: Final = "scorewatch_evaluation_score_squares_total"
PROM_SCORER_INFO: Final = "scorewatch_scorer_info"
PROM_SCORER_RUNS: Final = "scorewatch_scorer_runs_total"
PROM_RUN_DURATION: Final = "scorewatch_scorer_run_duration_seconds"
PROM_STEP_DURATION: Final = "scorewatch_scorer_step_duration_seconds"
PROM_LIVE_DECISIONS: Final = "scorewatch_live_decisions_total"
PROM_LIVE_QUEUE_DEPTH: Final = "scorewatch_live_queue_depth"
PROM_LIVE_IN_FLIGHT: Final = "scorewatch_live_in_flight"
PROM_SINK_ERRORS: Final = "scorewatch_sink_errors_total"
PROM_BUDGET_SAMPLING_RATE: Final = "scorewatch_budget_sampling_rate"
PROM_BUDGET_CONFIGURED_RATE: Final = "scorewatch_budget_configured_rate"
PROM_BUDGET_REMAINING: Final = "scorewatch_budget_remaining_usd"
PROM_BUDGET_LIMIT: Final = "scorewatch_budget_limit_usd"
PROM_QUEUE_BACKLOG: Final = "scorewatch_queue_backlog"
PROM_QUEUE_PENDING: Final = "scorewatch_queue_pending"
PROM_QUEUE_LAG: Final = "scorewatch_queue_lag"
PROM_QUEUE_DEAD_LETTERS: Final = "scorewatch_queue_dead_letters"
PROM_QUEUE_REDELIVERIES: Final = "scorewatch_queue_redeliveries_total"
PROM_QUEUE_DEAD_LETTERED: Final = "scorewatch_queue_dead_lettered_total"
PROM_TRACES_SPANS_RECEIVED: Final = "scorewatch_traces_spans_received_total"
PROM_TRACES_SPANS_DROPPED: Final = "scorewatch_traces_spans_dropped_total"
PROM_TRACES_EVICTED: Final = "scorewatch_traces_evicted_total"
PROM_TRACES_RUNS: Final = "scorewatch_traces_runs_total"
PROM_TRACES_SESSIONS: Final = "scorewatch_traces_sessions_total"
PROM_LABELS: Final = "scorewatch_labels_total"
PROM_JUDGE_AGREEMENT: Final = "scorewatch_judge_agreement"
PROM_REVIEW_RUNS: Final = "scorewatch_review_runs"

UNIT_TOKEN: Final = "{token}"
UNIT_SECONDS: Final = "s"
UNIT_COST_USD: Final = "{USD}"
UNIT_DIMENSIONLESS: Final = "1"

TOKEN_BUCKETS: Final[tuple[float, ...]] = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
)  # fmt: skip
DURATION_BUCKETS_S: Final[tuple[float, ...]] = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip
# A scorer run spans several judge calls, so its duration histogram reuses the GenAI buckets.
RUN_DURATION_BUCKETS_S: Final[tuple[float, ...]] = DURATION_BUCKETS_S


def score_buckets(scale: float = 1.0) -> tuple[float, ...]:
    """Boundaries 0.05 apart on [0, 1], multiplied by the scorer's scale."""
    return tuple(round(step * 0.05, 2) * scale for step in range(21))


SCORE_BUCKETS: Final[tuple[float, ...]] = score_buckets(1.0)

# -- configuration -----------------------------------------------------------------------------

# The key of a run's `target_metadata` holding the evaluated completion's id (e.g. the
# `chatcmpl-...` id of the agent's answer); it becomes `gen_ai.response.id` on the event.
METADATA_RESPONSE_ID: Final = "response_id"
ENV_CAPTURE_CONTENT: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
CARDINALITY_OVERFLOW: Final = "_other"
DEFAULT_CARDINALITY_LIMIT: Final = 100
DEFAULT_PROMETHEUS_ADDRESS: Final = "127.0.0.1:9464"
