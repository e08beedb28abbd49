"""Starting a real `python -m scorewatch serve` process for tests, and reading what it did."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

_LISTENING = re.compile(r"scorewatch serve: listening on (http://\S+)")
_STOPPED = re.compile(r"scorewatch serve: stopped; accounting (\{.*\})")

# A custom scorer module the configs can name by import path. The judged scorer makes exactly
# one judge call per run (a prompt generate_score) against the judge in SW_TEST_JUDGE_BASE.
SCORER_MODULE = textwrap.dedent(
    """
    import os

    import scorewatch as sw


    def make_length_scorer():
        scorer = sw.create_scorer(id="length", description="Output length, capped at 100")
        return scorer.generate_score(lambda ctx: min(1.0, len(str(ctx.run.output)) / 100))


    def make_judged_scorer(instructions="You rate answers from 0 to 1."):
        judge = sw.JudgeConfig(
            model="openai/loopback-judge",
            instructions=instructions,
            model_options={
                "api_base": os.environ["SW_TEST_JUDGE_BASE"],
                "api_key": "sk-test-judge",
                "max_retries": 0,
                "timeout": 30,
            },
        )
        scorer = sw.create_scorer(id="judged", description="One judge call", judge=judge)
        return scorer.generate_score(
            sw.PromptStep("rate the output", lambda ctx: f"Rate this answer: {ctx.run.output}")
        )


    def make_drifting_judged_scorer():
        # The same scorer with other instructions: another scorer version (a judge swapped in).
        return make_judged_scorer("You rate answers from 0 to 1 (judge v2).")


    def make_failing_scorer():
        def explode(ctx):
            raise RuntimeError("this scorer always fails")

        return sw.create_scorer(id="failing", description="Always fails").generate_score(explode)


    def make_picky_scorer():
        def pick(ctx):
            if not ctx.run.output:
                return sw.not_scorable("empty output")
            return {"length": len(str(ctx.run.output))}

        scorer = sw.create_scorer(id="picky", description="Nothing to judge in empty output")
        return scorer.preprocess(pick).generate_score(lambda ctx: 1)


    def make_exploding_factory():
        raise RuntimeError("no scorer today")


    def only_support_bot(call):
        return call.target == "support-bot"


    NOT_A_FACTORY = 42
    """
)


def write_config(directory: Path, body: str, *, module: bool = True) -> Path:
    """Write `scorewatch.toml` (and the custom scorer module next to it)."""
    directory.mkdir(parents=True, exist_ok=True)
    if module:
        (directory / "sw_test_scorers.py").write_text(SCORER_MODULE, encoding="utf-8")
    path = directory / "scorewatch.toml"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


# The judge key comes from the environment, as the configuration requires of every secret.
JUDGE_KEY_ENV = "SW_TEST_JUDGE_KEY"
JUDGE_KEY = "sk-test-judge"


def judge_table(base_url: str, **extra: Any) -> str:
    options = {"api_base": base_url, "max_retries": 0, "timeout": 30}
    options.update(extra)
    inline = ", ".join(f"{key} = {json.dumps(value)}" for key, value in options.items())
    return (
        f'[judge]\nmodel = "openai/loopback-judge"\napi_key_env = "{JUDGE_KEY_ENV}"\n'
        f"model_options = {{ {inline} }}\n"
    )


# The two scorers most serve tests configure: one judge call per run, and a model-free one.
JUDGED_AND_LENGTH_SCORERS = """
[[scorers]]
id = "judged"
factory = "sw_test_scorers:make_judged_scorer"

[[scorers]]
id = "length"
factory = "sw_test_scorers:make_length_scorer"
"""


@contextmanager
def serving_with_judge(
    directory: Path, config: str, reply: Any
) -> Iterator[tuple[ServeProcess, Any]]:
    """serve on `config` (its `{judge}` filled in) with a loopback judge answering `reply` (a
    `Reply`, or a script of the request body), listening; both stopped afterwards."""
    from scorewatch.testing import LoopbackJudgeServer

    script = reply if callable(reply) else (lambda body: reply)
    with LoopbackJudgeServer(script) as judge:
        path = write_config(directory, config.format(judge=judge_table(judge.base_url)))
        with ServeProcess(path, env={"SW_TEST_JUDGE_BASE": judge.base_url}) as process:
            yield process, judge


# serve's default is one worker process per core; the tests of one process's behaviour (its
# queue bound, its accounting) ask for one unless they name a count (tests/server/
# test_server_workers.py).
ONE_WORKER = ("--workers", "1")


class ServeProcess:
    """`python -m scorewatch serve --config PATH --listen 127.0.0.1:0`, output in files."""

    def __init__(
        self,
        config: Path,
        *,
        env: Mapping[str, str] | None = None,
        listen: str | None = "127.0.0.1:0",
        extra_args: tuple[str, ...] = (),
        command: tuple[str, ...] = (sys.executable, "-m", "scorewatch"),
    ) -> None:
        self.config = config
        self.stderr_path = config.parent / f"serve-{time.monotonic_ns()}.stderr"
        environment = dict(os.environ)
        environment["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
        environment[JUDGE_KEY_ENV] = JUDGE_KEY
        environment.update(env or {})
        args = [*command, "serve", "--config", str(config)]
        if listen is not None:
            args += ["--listen", listen]
        args += list(extra_args)
        if "--workers" not in extra_args:
            args += list(ONE_WORKER)
        self._stderr = self.stderr_path.open("wb")
        self.process = subprocess.Popen(
            args,
            cwd=config.parent,
            env=environment,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
        )
        self.url = ""

    @property
    def pid(self) -> int:
        return self.process.pid

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def wait_listening(self, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = _LISTENING.search(self.stderr())
            if found:
                self.url = found.group(1)
                break
            if self.process.poll() is not None:
                raise RuntimeError(f"serve exited with {self.process.returncode}:\n{self.stderr()}")
            time.sleep(0.05)
        else:
            raise RuntimeError(f"serve did not start within {timeout}s:\n{self.stderr()}")
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return self.url
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"serve never answered /healthz:\n{self.stderr()}")

    def terminate(self, timeout: float = 60.0) -> int:
        """SIGTERM, then wait for the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        finally:
            self._stderr.close()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self._stderr.close()

    def final_accounting(self) -> dict[str, int]:
        found = _STOPPED.search(self.stderr())
        assert found, f"no final accounting line in:\n{self.stderr()}"
        accounting: dict[str, int] = json.loads(found.group(1))
        return accounting

    def rss_bytes(self) -> int:
        status = Path(f"/proc/{self.pid}/status").read_text(encoding="ascii")
        kib = int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1))  # type: ignore[union-attr]
        return kib * 1024

    def __enter__(self) -> ServeProcess:
        self.wait_listening()
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()


class PeakRss(threading.Thread):
    """The largest resident size `process` reaches while it runs (sampled every `every` s):
    `start()`, then `stop()` returns it."""

    def __init__(self, process: ServeProcess, every: float = 0.01) -> None:
        super().__init__(daemon=True)
        self._process = process
        self._every = every
        self.peak = process.rss_bytes()
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(self._every):
            self.peak = max(self.peak, self._process.rss_bytes())

    def stop(self) -> int:
        self._done.set()
        self.join()
        return self.peak


def run_serve(config: Path, *args: str, env: Mapping[str, str] | None = None) -> tuple[int, str]:
    """Run `scorewatch serve` to completion (for start-up refusals); returns (code, stderr)."""
    environment = dict(os.environ)
    environment["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    environment[JUDGE_KEY_ENV] = JUDGE_KEY
    environment.update(env or {})
    done = subprocess.run(
        [
            *(sys.executable, "-m", "scorewatch", "serve", "--config", str(config), *args),
            *(() if "--workers" in args else ONE_WORKER),
        ],
        cwd=config.parent,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.returncode, done.stderr


def sqlite_rows(path: Path) -> list[dict[str, Any]]:
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(row) for row in conn.execute("SELECT * FROM mastra_scorers")]
    finally:
        conn.close()


def wait_idle(client: httpx.Client, timeout: float = 60.0) -> dict[str, int]:
    """Poll /v1/stats until nothing is queued or running."""
    deadline = time.monotonic() + timeout
    stats: dict[str, int] = {}
    while time.monotonic() < deadline:
        stats = client.get("/v1/stats").json()
        if stats["queued"] == 0 and stats["in_flight"] == 0:
            return stats
        time.sleep(0.05)
    raise AssertionError(f"the service did not become idle: {stats}")


def score_now(client: httpx.Client, scorer: str, **call: Any) -> dict[str, Any]:
    """`POST /v1/scores?wait=true` of one call by one scorer: its one result, asserted a
    success."""
    answer = client.post("/v1/scores", params={"wait": "true"}, json={"scorers": [scorer], **call})
    assert answer.status_code == 200, answer.text
    (result,) = answer.json()["results"]
    assert result["status"] == "success", result
    return dict(result)


def import_labels(
    config: Path, path: Path, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`scorewatch labels import PATH --config CONFIG`, run beside the configuration."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "scorewatch",
            "labels",
            "import",
            str(path),
            "--config",
            str(config),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=config.parent,
        env={**os.environ, **(env or {})},
    )


def authorized_client(process: ServeProcess, token: str) -> httpx.Client:
    """A client of `process` sending `token` as its bearer token."""
    headers = {"Authorization": f"Bearer {token}"}
    return httpx.Client(base_url=process.url, headers=headers, timeout=60)
