"""`scorewatch demo` end to end, and its simulated judge through the real summarization scorer.

The simulated judge is exercised exactly as the demo uses it: litellm over HTTP to the loopback
server, with the summarization scorer's real prompts. Its verdicts replay the dataset's
annotations, so every score must equal the summary's annotated `expected_score`.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from scorewatch.core.events import (
    JudgeAttempt,
    Observer,
    Observers,
    RunListener,
    RunStart,
    observed_by,
)
from scorewatch.demo.agent import SimulatedSummarizer, request_stream
from scorewatch.demo.dataset import DemoDataset, SummaryQuality
from scorewatch.demo.simulated_judge import (
    SIMULATED_INPUT_COST_PER_TOKEN,
    SIMULATED_OUTPUT_COST_PER_TOKEN,
    SimulatedJudge,
    SimulatedVerdicts,
    UnrecognizedPrompt,
    estimate_tokens,
)
from scorewatch.scorers import create_summarization_scorer

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]


def _sample(dataset: DemoDataset) -> list[tuple[Any, Any]]:
    """Every quality, spread over the three document kinds (12 summaries)."""
    chosen = []
    for quality in SummaryQuality:
        pairs = list(dataset.summaries(quality))
        chosen.extend(pairs[index] for index in (0, len(pairs) // 2, len(pairs) - 1))
    return chosen


class _Attempts(Observer, RunListener):
    """A run observer keeping every judge attempt (to check usage and estimated cost)."""

    def __init__(self) -> None:
        self.attempts: list[JudgeAttempt] = []

    def run_started(self, start: RunStart) -> _Attempts:
        return self

    def judge_attempt_finished(self, attempt: JudgeAttempt) -> None:
        self.attempts.append(attempt)


# --------------------------------------------------------------------------------------------
# the simulated judge


async def test_simulated_judge_scores_equal_the_dataset_expected_scores(
    dataset: DemoDataset,
) -> None:
    pairs = _sample(dataset)
    observer = _Attempts()
    bus = Observers()  # its own bus: only this test's runs
    bus.add(observer)
    with observed_by(bus), SimulatedJudge(dataset, latency_s=(0.0, 0.01), seed=7) as judge:
        scorer = create_summarization_scorer(judge.model_id, model_options=judge.model_options)
        results = await asyncio.gather(
            *(scorer.run(input=document.text, output=summary.text) for document, summary in pairs)
        )
        assert judge.answered == 3 * len(pairs)
        assert judge.refused == 0
    for (document, summary), result in zip(pairs, results, strict=True):
        where = f"{document.id}/{summary.quality.value}"
        assert result.score == summary.expected_score, where
        assert isinstance(result.reason, str)
        assert result.reason.startswith(f"The score is {result.score:g}"), where
        claims = result.preprocess_step_result["alignment"]
        assert [claim["claim"] for claim in claims] == [c.claim for c in summary.claims], where
        coverage = result.analyze_step_result["coverage"]
        assert [verdict["answered"] for verdict in coverage] == list(summary.answered), where
        assert all(verdict["reason"] for verdict in coverage)
        assert result.judge is not None
        assert set(result.judge) == {"preprocess", "analyze", "generate_reason"}
        for record in result.judge.values():
            (execution,) = record.executions
            assert execution.status == "success"
            assert execution.attempt_count == 1  # the answers are valid the first time
            # Instructions and the prompt were sent: at least the prompt's share of tokens.
            assert execution.usage.input_tokens is not None
            assert execution.usage.input_tokens >= estimate_tokens(execution.prompt)
    # Usage is proportional to what was sent and answered, and litellm priced it.
    assert len(observer.attempts) == 3 * len(pairs)
    for attempt in observer.attempts:
        reply = attempt.reply
        assert reply is not None and attempt.error is None
        assert attempt.usage.input_tokens is not None and attempt.usage.output_tokens is not None
        assert attempt.usage.input_tokens >= len(attempt.request.prompt) // 4
        assert attempt.usage.output_tokens == estimate_tokens(reply.text)
        expected_cost = (
            attempt.usage.input_tokens * SIMULATED_INPUT_COST_PER_TOKEN
            + attempt.usage.output_tokens * SIMULATED_OUTPUT_COST_PER_TOKEN
        )
        assert reply.estimated_cost_usd == pytest.approx(expected_cost)


async def test_simulated_judge_latency_stays_within_its_bounds(dataset: DemoDataset) -> None:
    document, summary = next(dataset.summaries(SummaryQuality.HALLUCINATED))
    with SimulatedJudge(dataset, latency_s=(0.05, 0.1), seed=1) as judge:
        delays = [judge._delay(tokens) for tokens in (1, 50, 400, 5000) for _ in range(20)]
        scorer = create_summarization_scorer(judge.model_id, model_options=judge.model_options)
        result = await scorer.run(input=document.text, output=summary.text)
    assert all(0.05 <= delay <= 0.1 for delay in delays)
    assert len(set(delays)) > 10  # jittered, not constant
    assert result.judge is not None
    for record in result.judge.values():
        assert record.executions[0].duration_ms >= 50


def test_simulated_judge_refuses_prompts_it_does_not_know(dataset: DemoDataset) -> None:
    verdicts = SimulatedVerdicts(dataset)
    with pytest.raises(UnrecognizedPrompt):
        verdicts.answer({"messages": [{"role": "user", "content": "Rate this answer."}]})


async def test_simulated_judge_answers_texts_outside_the_dataset() -> None:
    source = (
        "The library opens at 9 am on weekdays. It closes at 5 pm. Members may borrow ten books."
    )
    with SimulatedJudge(latency_s=(0.0, 0.0)) as judge:
        scorer = create_summarization_scorer(judge.model_id, model_options=judge.model_options)
        faithful = await scorer.run(
            input=source,
            output="The library opens at 9 am on weekdays. It closes at 5 pm. "
            "Members may borrow ten books.",
        )
        invented = await scorer.run(input=source, output="The library opens at noon on Sundays.")
    assert faithful.score == 1.0
    assert invented.score == 0.0
    assert invented.preprocess_step_result["alignment"][0]["supported"] is False


# --------------------------------------------------------------------------------------------
# the simulated agent


async def test_agent_quality_degrades_when_told(dataset: DemoDataset) -> None:
    agent = SimulatedSummarizer(dataset, seed=5, latency_s=(0.0, 0.0))
    document = dataset.documents[0]
    healthy = [agent.choose(document).quality for _ in range(400)]
    agent.degraded = True
    degraded = [agent.choose(document).quality for _ in range(400)]
    assert SummaryQuality.HALLUCINATED not in healthy
    assert healthy.count(SummaryQuality.FAITHFUL) > 280
    assert degraded.count(SummaryQuality.FAITHFUL) < 100
    assert degraded.count(SummaryQuality.HALLUCINATED) > 150
    text = await agent.summarize(document.text)
    assert dataset.find_summary(text) is not None
    with pytest.raises(ValueError, match="only knows"):
        await agent.summarize("a document that is not in the dataset")


async def test_request_stream_covers_every_document_then_stops(dataset: DemoDataset) -> None:
    stop = asyncio.Event()
    seen = []
    async for document in request_stream(dataset, rate=10_000, seed=2, stop=stop):
        seen.append(document.id)
        if len(seen) == len(dataset):
            stop.set()
    assert sorted(seen) == sorted(document.id for document in dataset)


# --------------------------------------------------------------------------------------------
# `scorewatch demo` in a subprocess (not a TTY)


def _reader(stream: Any, lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line)
    lines.put(None)


def test_demo_command_runs_scores_serves_metrics_and_stores_rows(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    process = subprocess.Popen(
        [sys.executable, "-m", "scorewatch", "demo", "--duration", "8", "--rate", "20",
         "--port", "0", "--db", str(db), "--seed", "11"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=tmp_path,
    )  # fmt: skip
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_reader, args=(process.stdout, lines), daemon=True).start()
    output: list[str] = []
    scrape = ""
    deadline = time.monotonic() + 180
    try:
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                continue
            if line is None:
                break
            output.append(line)
            found = re.match(r"metrics: (http://127\.0\.0\.1:\d+/metrics)", line)
            if found and not scrape:
                # Scrape while the demo runs, until its first scores are in: under load the
                # first runs finish seconds after the endpoint opens.
                scrape_deadline = time.monotonic() + 6
                while "scorewatch_evaluation_score_count" not in scrape:
                    time.sleep(0.5)
                    with urllib.request.urlopen(found.group(1), timeout=10) as response:
                        scrape = response.read().decode()
                    if time.monotonic() > scrape_deadline:
                        break
        code = process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    text = "".join(output)
    assert code == 0, text
    assert "judge: SIMULATED" in text
    assert "no API key" in text
    # The plain (non-TTY) view printed periodic lines with scores.
    periodic = [line for line in output if re.match(r"\[\s*\d+\.\d+s\] agent ", line)]
    assert len(periodic) >= 3, text
    assert re.search(r"summarization (0|1)\.\d\d", text), text
    assert "the agent's quality just degraded" in text
    # The final summary.
    assert "=== scorewatch demo: summary" in text
    summary_scores = re.search(r"summarization\s+overall (\d\.\d\d) \(n=(\d+)", text)
    assert summary_scores is not None, text
    assert int(summary_scores.group(2)) > 0
    judge_line = re.search(r"judge \(simulated\): (\d+) calls .*est\. cost \$(\d+\.\d+)", text)
    assert judge_line is not None, text
    assert int(judge_line.group(1)) > 0
    assert float(judge_line.group(2)) > 0
    # /metrics was served during the run, with the demo's scores and judge usage.
    assert "scorewatch_evaluation_score_count" in scrape
    assert "scorewatch_live_decisions_total" in scrape
    assert 'gen_ai_evaluation_name="completeness-scorer"' in scrape
    # Results landed in the SQLite file whose path was printed.
    assert str(db) in text
    with sqlite3.connect(db) as connection:
        rows = connection.execute(
            "select scorerId, count(*), sum(score is not null) from mastra_scorers group by 1"
        ).fetchall()
    by_scorer = {scorer: (count, scored) for scorer, count, scored in rows}
    assert set(by_scorer) == {
        "summarization-scorer",
        "completeness-scorer",
        "content-similarity-scorer",
    }
    assert all(count > 0 and scored == count for count, scored in by_scorer.values())
    rows_line = re.search(r"results: (\d+) rows in", text)
    assert rows_line is not None
    assert int(rows_line.group(1)) == sum(count for count, _ in by_scorer.values())


def test_the_short_window_rules_ship_in_the_wheel(tmp_path: Path) -> None:
    """`demo --prometheus` from an installed package finds its rules: they are package data,
    the very file the rule generator writes."""
    import zipfile

    from docs_venv import uv_binary
    from scorewatch.demo.local_prometheus import find_short_rules

    built = subprocess.run(
        [uv_binary(), "build", "--wheel", "--out-dir", str(tmp_path), "--python", sys.executable,
         str(REPO)],
        env={**os.environ, "UV_PYTHON_DOWNLOADS": "never"}, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = tmp_path.glob("scorewatch-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        shipped = archive.read("scorewatch/demo/data/short-window.rules.yml")
    rules = find_short_rules()
    assert rules is not None and rules.read_bytes() == shipped
    assert b"ScorewatchScoreDrop" in shipped


def test_demo_prometheus_starts_with_the_short_window_rules(prometheus_bin: str) -> None:
    from scorewatch.demo.local_prometheus import DemoPrometheus, find_short_rules

    rules = find_short_rules()
    assert rules is not None and rules.is_relative_to(REPO)
    prometheus = DemoPrometheus(prometheus_bin, "127.0.0.1:9", rules)
    prometheus.start()
    try:
        with urllib.request.urlopen(f"{prometheus.url}/api/v1/rules", timeout=5) as response:
            groups = json.loads(response.read())["data"]["groups"]
        alert_names = {rule["name"] for group in groups for rule in group["rules"]}
        assert "ScorewatchScoreDrop" in alert_names
        assert all(group["interval"] == 1 for group in groups)
        targets: list[dict[str, Any]] = []
        deadline = time.monotonic() + 30
        while not targets and time.monotonic() < deadline:  # discovery is asynchronous
            time.sleep(0.2)
            with urllib.request.urlopen(f"{prometheus.url}/api/v1/targets", timeout=5) as response:
                targets = json.loads(response.read())["data"]["activeTargets"]
        assert [target["scrapeUrl"] for target in targets] == ["http://127.0.0.1:9/metrics"]
        assert prometheus.poll_alerts() == []
    finally:
        prometheus.stop()
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{prometheus.url}/-/ready", timeout=2)


def test_demo_with_model_uses_that_model_through_litellm(tmp_path: Path) -> None:
    """`--model` takes the real-model path: litellm with the provider's usual environment. Here
    the OpenAI endpoint is the simulated judge, so the path runs without a key or a network."""
    with SimulatedJudge(latency_s=(0.0, 0.02), seed=2) as judge:
        env = {
            **os.environ,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "OPENAI_API_BASE": judge.base_url,
            "OPENAI_BASE_URL": judge.base_url,
            "OPENAI_API_KEY": "sk-test-placeholder",
        }
        completed = subprocess.run(
            [sys.executable, "-m", "scorewatch", "demo", "--model", "openai/gpt-4o-mini",
             "--duration", "3", "--rate", "10", "--port", "0", "--db", str(tmp_path / "d.db")],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=180,
        )  # fmt: skip
        answered = judge.answered
    text = completed.stdout + completed.stderr
    assert completed.returncode == 0, text
    assert "judge: openai/gpt-4o-mini (a real model" in text
    assert "SIMULATED" not in text
    assert answered > 0
    judge_line = re.search(r"judge \(openai/gpt-4o-mini\): (\d+) calls .*\$(\d+\.\d+)", text)
    assert judge_line is not None, text
    assert int(judge_line.group(1)) == answered
    assert float(judge_line.group(2)) > 0  # priced from litellm's table for gpt-4o-mini
    assert "sk-test-placeholder" not in text


def test_demo_ctrl_c_prints_the_summary_and_exits_0(tmp_path: Path) -> None:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    process = subprocess.Popen(
        [sys.executable, "-m", "scorewatch", "demo", "--duration", "600", "--rate", "10",
         "--port", "0", "--db", str(tmp_path / "d.db")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=tmp_path,
    )  # fmt: skip
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_reader, args=(process.stdout, lines), daemon=True).start()
    output: list[str] = []
    try:
        while True:
            line = lines.get(timeout=120)
            assert line is not None, "".join(output)
            output.append(line)
            if re.match(r"\[\s*\d+\.\d+s\] agent ", line):  # serving and scoring: interrupt
                process.send_signal(signal.SIGINT)
                break
        while (line := lines.get(timeout=120)) is not None:
            output.append(line)
        code = process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    text = "".join(output)
    assert code == 0, text
    assert "interrupted: finishing the runs already accepted" in text
    assert "=== scorewatch demo: summary" in text
    assert re.search(r"results: \d+ rows in", text), text


def test_demo_with_a_failing_judge_reports_failures_and_still_exits_0(tmp_path: Path) -> None:
    from scorewatch.testing.judge_server import HttpError, LoopbackJudgeServer

    refusal = HttpError(401, "Incorrect API key provided", error_type="invalid_request_error")
    with LoopbackJudgeServer(refusal) as server:
        env = {
            **os.environ,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "OPENAI_API_BASE": server.base_url,
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-wrong-key",
        }
        completed = subprocess.run(
            [sys.executable, "-m", "scorewatch", "demo", "--model", "openai/gpt-4o-mini",
             "--duration", "2", "--rate", "10", "--port", "0", "--db", str(tmp_path / "d.db")],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=180,
        )  # fmt: skip
    text = completed.stdout + completed.stderr
    assert completed.returncode == 0, text
    failed = re.search(r"summarization\s+overall - \(n=0, failed (\d+)\)", text)
    assert failed is not None and int(failed.group(1)) > 0, text
    assert "last failure: summarization-scorer: Scorer Run Failed" in text
    assert "sk-wrong-key" not in text
    log = (tmp_path / "scorewatch-demo.log").read_text(encoding="utf-8")
    assert "summarization-scorer" in log and "sk-wrong-key" not in log
    with sqlite3.connect(tmp_path / "d.db") as connection:
        statuses = dict(
            connection.execute(
                "select status, count(*) from mastra_scorers "
                "where scorerId = 'summarization-scorer' group by 1"
            ).fetchall()
        )
    assert statuses == {"failed": int(failed.group(1))}


# ------------------------------------------------------------------ make demo: what it installs


def _make_dry_run(target: str, tmp_path: Path) -> list[str]:
    """`make -n TARGET` on a copy of the Makefile and pyproject.toml (a fresh checkout)."""
    folder = tmp_path / target
    folder.mkdir()
    for name in ("Makefile", "pyproject.toml"):
        (folder / name).write_text((REPO / name).read_text(encoding="utf-8"), encoding="utf-8")
    # Run as a top-level make even under `make test`: a nested make prints "Entering/Leaving
    # directory" lines around the commands.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", target],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_make_demo_installs_the_runtime_set_and_says_so(tmp_path: Path) -> None:
    demo = _make_dry_run("demo", tmp_path)
    installs = [line for line in demo if " install " in line and "pip" in line]
    assert [line.split(" install ")[1] for line in installs] == [
        "--quiet --upgrade pip",
        "--progress-bar on -e .",  # no extras: no test, lint or type tools
    ]
    # Each step is announced before it runs.
    for install in installs:
        assert demo[demo.index(install) - 1].startswith("echo"), demo
    assert any("runtime dependencies" in line for line in demo)
    assert demo[-1] == ".venv/bin/scorewatch demo"
    test = _make_dry_run("test", tmp_path)
    assert any(line.endswith("install --progress-bar on -e '.[dev]'") for line in test), test


def _requirements(extra: str | None) -> list[str]:
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return list(
        project["dependencies"] if extra is None else project["optional-dependencies"][extra]
    )


def _closure(requirements: list[str]) -> set[str]:
    """Distributions (normalized names) installing these requirements pulls in."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    found: set[str] = set()
    pending = [(Requirement(text), "") for text in requirements]
    while pending:
        requirement, extra = pending.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(requirement.name)
        wanted = ["", *sorted(requirement.extras)]
        if name == "scorewatch":  # a self-reference (`scorewatch[scale]`): this pyproject
            for sub in requirement.extras:
                pending += [(Requirement(text), "") for text in _requirements(sub)]
            continue
        if name in found and not requirement.extras:
            continue
        found.add(name)
        try:
            nested = metadata.requires(requirement.name) or []
        except metadata.PackageNotFoundError:
            continue
        pending += [(Requirement(text), sub) for text in nested for sub in wanted]
    return found


def test_dev_extra_has_the_toolchain_and_the_runtime_set_has_none_of_it() -> None:
    dev = _closure(["scorewatch[dev]"])
    runtime = _closure(_requirements(None))
    toolchain = {"pytest", "ruff", "mypy", "hypothesis", "pyperf", "grafana-foundation-sdk"}
    assert toolchain <= dev
    assert not toolchain & runtime


_BLOCK_NON_RUNTIME = """
import importlib.machinery, json, sys
from importlib import metadata

allowed = set(json.loads(sys.argv[1]))
blocked = set()
for dist in metadata.distributions():
    name = dist.metadata["Name"].lower().replace("_", "-").replace(".", "-")
    if name not in allowed:
        blocked |= {str(dist.locate_file(file)) for file in dist.files or []}


class BlockNonRuntime:
    # What a virtualenv with only the runtime set would lack: importing it fails.
    def find_spec(self, fullname, path=None, target=None):
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.origin in blocked:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


sys.meta_path.insert(0, BlockNonRuntime())
from scorewatch.cli import main

sys.exit(main(sys.argv[2:]))
"""


def test_the_demo_runs_with_only_the_runtime_set_importable(tmp_path: Path) -> None:
    """Every module of a distribution outside the runtime set `make demo` installs is made
    unimportable (as in a virtualenv without them); the demo still runs and scores."""
    allowed = sorted(_closure(_requirements(None)) | {"scorewatch"})
    db = tmp_path / "demo.db"
    done = subprocess.run(
        [sys.executable, "-c", _BLOCK_NON_RUNTIME, json.dumps(allowed),
         "demo", "--duration", "3", "--rate", "10", "--port", "0", "--db", str(db)],
        cwd=tmp_path,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        capture_output=True,
        text=True,
        timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    rows = sqlite3.connect(db).execute("select count(*) from mastra_scorers").fetchone()[0]
    assert rows > 0, done.stdout[-2000:]
    assert "failed 0" in done.stdout, done.stdout[-2000:]
