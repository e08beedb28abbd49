"""A seeded corpus of personal data, a judged scorer that reads it (and whose judge quotes it
back), and the scan that proves none of it was kept: shared by the privacy tests."""

from __future__ import annotations

import json
import os
from typing import Any

import scorewatch as sw
from scorewatch.judge.litellm_judge import LiteLLMJudge
from scorewatch.privacy import PrivacyPolicy
from scorewatch.testing.judge_server import LoopbackJudgeServer, Reply

EMAIL = "ada.lovelace@example.com"
PHONE = "+44 20 7946 0958"
CARD = "4111 1111 1111 1111"
IBAN = "DE89 3704 0044 0532 0130 00"
IP = "203.0.113.42"
API_KEY = "sk-proj-Q2xhdWRlU2VjcmV0S2V5MDEy"
EMPLOYEE = "EMP-482913"

SEEDED = (EMAIL, PHONE, CARD, IBAN, IP, API_KEY, EMPLOYEE)
# Each value also in the forms a store or exporter might turn it into (digits only, compact,
# JSON-escaped): the scan looks for all of them.
FORMS = (
    *SEEDED,
    EMAIL.upper(),
    "2079460958",
    "4111111111111111",
    "DE89370400440532013000",
    "Q2xhdWRlU2VjcmV0S2V5MDEy",
    "482913",
)
POLICY = PrivacyPolicy(redact=["all"], patterns={"EMPLOYEE": r"EMP-\d{6}"})
# The same policy as serve's `[privacy]` table.
PRIVACY_TABLE = "[privacy]\nredact = [\"all\"]\npatterns = { EMPLOYEE = 'EMP-\\d{6}' }\n"

# Where the corpus sits in one call: input, output (with a tool call's arguments), ground
# truth and request context.
INPUT = {"messages": [{"role": "user", "content": f"I am {EMAIL}, call me on {PHONE}."}]}
OUTPUT = {
    "text": f"Refund sent to IBAN {IBAN}.",
    "tool_calls": [{"name": "charge", "arguments": {"card": CARD, "client_ip": IP}}],
}
GROUND_TRUTH = f"Refund to {IBAN} for {EMPLOYEE}"
REQUEST_CONTEXT = {"employee": EMPLOYEE, "note": f"key {API_KEY}"}

ANALYZE_SCHEMA = {
    "type": "object",
    "properties": {"claims": {"type": "array", "items": {"type": "string"}}},
    "required": ["claims"],
}


def judge_reply(body: dict[str, Any]) -> Reply:
    """The judge answers each step, quoting the personal data back (as judges do)."""
    prompt = json.dumps(body.get("messages"))
    if "List the claims" in prompt:
        claims = [f"the user is {EMAIL}", f"the card {CARD} was charged from {IP}"]
        return Reply(json.dumps({"claims": claims}))
    return Reply(f"Two claims hold: {EMAIL} ({PHONE}) was refunded to {IBAN} by {EMPLOYEE}.")


def private_scorer(server: LoopbackJudgeServer | str, scorer_id: str = "private") -> sw.Scorer:
    """Analyze (a prompt with every field of the call), score, reason (a prompt); the judge at
    `server` (a loopback judge or its base URL)."""
    base = server if isinstance(server, str) else server.base_url
    judge = LiteLLMJudge("openai/judge-model", api_base=base, api_key="sk-test", max_retries=0)

    def analyze_prompt(ctx: Any) -> str:
        run = ctx.run

        def shown(value: Any) -> str:
            return json.dumps(value, default=str)

        return (
            f"List the claims.\nInput: {shown(run.input)}\nOutput: {shown(run.output)}"
            f"\nExpected: {run.ground_truth}\nContext: {shown(run.request_context)}"
        )

    return (
        sw.create_scorer(
            id=scorer_id,
            description="claims about the customer",
            judge=sw.JudgeConfig(model=judge, instructions="Judge the claims."),
        )
        .analyze(sw.PromptStep("claims", analyze_prompt, output_schema=ANALYZE_SCHEMA))
        .generate_score(lambda ctx: len(ctx.results.analyze_step_result["claims"]) / 2)
        .generate_reason(
            sw.PromptStep(
                "explain",
                lambda ctx: f"Explain {ctx.score} for {json.dumps(ctx.run.output, default=str)}",
            )
        )
    )


def cli_private_scorer() -> sw.Scorer:
    """`private_scorer` for the CLI tests (`tests.privacy_support:cli_private_scorer`), on the
    loopback judge at SCOREWATCH_TEST_API_BASE."""
    return private_scorer(os.environ["SCOREWATCH_TEST_API_BASE"])


def dataset_line() -> dict[str, Any]:
    """The corpus as one dataset item of `scorewatch eval`."""
    return {
        "input": INPUT,
        "output": OUTPUT,
        "ground_truth": GROUND_TRUTH,
        "request_context": REQUEST_CONTEXT,
    }


def judge_saw_everything(server: LoopbackJudgeServer) -> None:
    """The judge's requests carried every seeded value as it was."""
    sent = json.dumps([request.body for request in server.requests], ensure_ascii=False)
    missing = [value for value in SEEDED if value not in sent]
    assert not missing, f"the judge never saw {missing}"


def leaks(blob: bytes | str) -> list[str]:
    """The seeded values (in any of their forms) found in `blob`."""
    text = blob.decode("utf-8", "replace") if isinstance(blob, bytes) else blob
    return [form for form in FORMS if form in text or json.dumps(form)[1:-1] in text]


def agent_spans() -> list[Any]:
    """An instrumented agent's spans holding the corpus: the user's message (address, employee
    id, phone), the model's answer (the loopback model replies with the IBAN) and a tool call's
    arguments (card, IP address, API key)."""
    from traces_support import instrumented, run_agent

    with (
        LoopbackJudgeServer(f"Refund sent to IBAN {IBAN}.") as llm,
        instrumented("genai", content=True) as (tracer, exporter),
    ):
        run_agent(
            tracer,
            llm,
            f"I am {EMAIL} ({EMPLOYEE}), call me on {PHONE}.",
            [("charge", {"card": CARD, "client_ip": IP, "key": API_KEY}, lambda a: "ok")],
        )
        return list(exporter.get_finished_spans())


def redis_bytes(prefix: str) -> bytes:
    """Every Redis key under `prefix`, dumped: what the queue still holds."""
    import redis

    from scale_support import REDIS_URL

    client = redis.Redis.from_url(REDIS_URL)
    try:
        return b"".join(client.dump(key) or b"" for key in client.scan_iter(match=f"{prefix}*"))
    finally:
        client.close()
