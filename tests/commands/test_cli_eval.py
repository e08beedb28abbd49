"""`scorewatch eval` and `scorewatch report` end to end, in subprocesses, on a loopback judge."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from binary_support import require_binary
from cli_support import PYTHONPATH, ROOT, scorewatch, write_jsonl
from scorewatch.testing.judge_server import HttpError, LoopbackJudgeServer, Reply

pytestmark = pytest.mark.e2e


def render_in_chromium(page: Path, tmp_path: Path) -> str:
    """The DOM of `page` after its scripts ran, from headless Chromium."""
    chromium = require_binary("chromium")
    dom = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert "</body>" in dom.stdout, dom.stderr[-2000:]
    return dom.stdout


ROWS = [
    {"input": "q1", "output": "a long enough answer here"},
    {"input": "q2", "output": "short"},
    {"input": "q3", "output": "another long enough answer"},
]


def test_jsonl_scores_and_summary(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    out = tmp_path / "results.jsonl"
    done = scorewatch(
        "eval", str(data), "--scorer", "tests.cli_scorers:length_scorer", "--out", str(out)
    )
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["score"] for r in records) == [0.0, 1.0, 1.0]
    assert "length" in done.stdout and "0.667" in done.stdout
    # Not a terminal: plain progress lines, no carriage returns.
    assert "3/3 items" in done.stderr and "\r" not in done.stderr


def test_csv_input_and_target(tmp_path: Path) -> None:
    data = tmp_path / "data.csv"
    data.write_text("input,ground_truth\nhello,x\nbye,y\n", encoding="utf-8")
    done = scorewatch(
        "eval",
        str(data),
        "--scorer",
        "tests.cli_scorers:length_scorer",
        "--target",
        "tests.cli_scorers:upper_target",
        "--format",
        "json",
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["scorers"]["length"]["mean"] == 1.0
    assert summary["passed"] is True


def test_threshold_failure_exits_nonzero(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    done = scorewatch(
        "eval",
        str(data),
        "--scorer",
        "tests.cli_scorers:length_scorer",
        "--threshold",
        "tests.cli_scorers:length_scorer=0.9",
    )
    assert done.returncode == 1
    assert "threshold failed: length" in done.stdout
    passing = scorewatch(
        "eval",
        str(data),
        "--scorer",
        "tests.cli_scorers:length_scorer",
        "--threshold",
        "tests.cli_scorers:length_scorer=0.5",
    )
    assert passing.returncode == 0, passing.stdout


def test_bad_inputs_get_clear_errors(tmp_path: Path) -> None:
    missing = scorewatch(
        "eval", str(tmp_path / "nope.jsonl"), "--scorer", "tests.cli_scorers:length_scorer"
    )
    assert missing.returncode == 2 and "no such file" in missing.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"input": "a", "output": "b"}\n{"input": "c"}\n', encoding="utf-8")
    row = scorewatch("eval", str(bad), "--scorer", "tests.cli_scorers:length_scorer")
    assert row.returncode == 2 and "bad.jsonl:2" in row.stderr and "'output'" in row.stderr
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"input": "a", "output": "b"}\n{oops\n', encoding="utf-8")
    parse = scorewatch("eval", str(broken), "--scorer", "tests.cli_scorers:length_scorer")
    assert parse.returncode == 2 and "broken.jsonl:2" in parse.stderr
    unknown = scorewatch("eval", str(bad), "--scorer", "tests.cli_scorers:nothing_here")
    assert unknown.returncode == 2 and "cannot import" in unknown.stderr


def test_judged_scorer_through_litellm_with_html_report(tmp_path: Path) -> None:
    def script(body: dict[str, Any]) -> Reply:
        prompt = body["messages"][-1]["content"]
        if prompt.startswith("Explain"):
            return Reply(text="because it is fine")
        return Reply(text='{"score": 0.25}' if "short" in prompt else '{"score": 0.75}')

    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    out, html = tmp_path / "results.jsonl", tmp_path / "report.html"
    with LoopbackJudgeServer(script) as server:
        done = scorewatch(
            "eval",
            str(data),
            "--scorer",
            "tests.cli_scorers:judged_scorer",
            "--out",
            str(out),
            "--html",
            str(html),
            "--concurrency",
            "2",
            env={"SCOREWATCH_TEST_API_BASE": server.base_url},
        )
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["score"] for r in records) == [0.25, 0.75, 0.75]
    assert all(r["judge_calls"] == 2 and r["tokens"] == 60 for r in records)
    assert all(r["reason"] == "because it is fine" for r in records)
    page = html.read_text()
    assert "<script src" not in page and "@import" not in page and "https://" not in page
    assert "judged" in page


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_interrupted_run_keeps_finished_results(tmp_path: Path) -> None:
    rows = [{"input": f"q{i}", "output": f"answer number {i}"} for i in range(40)]
    data = write_jsonl(tmp_path / "data.jsonl", rows)
    out = tmp_path / "results.jsonl"
    with LoopbackJudgeServer(Reply(text='{"score": 1}', delay=0.2)) as server:
        env = {**os.environ, "PYTHONPATH": PYTHONPATH, "SCOREWATCH_TEST_API_BASE": server.base_url}
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "scorewatch",
                "eval",
                str(data),
                "--scorer",
                "tests.cli_scorers:judged_scorer",
                "--out",
                str(out),
                "--concurrency",
                "1",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
            # A suite started in the background by a non-interactive shell runs with SIGINT
            # ignored, which its children inherit: give the command Ctrl-C back.
            preexec_fn=_default_sigint,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if out.exists() and len(out.read_text().splitlines()) >= 2:
                break
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        stdout, _ = process.communicate(timeout=60)
    lines = out.read_text().splitlines()
    assert process.returncode == 130, (len(lines), stdout[-2000:])
    assert 2 <= len(lines) < 40
    assert all(json.loads(line)["score"] == 1 for line in lines)
    assert "interrupted" in stdout


def test_report_command_and_charts_render_in_chromium(tmp_path: Path) -> None:
    records = [
        {
            "item": i,
            "scorer_id": "s",
            "score": i / 10,
            "reason": f"<b>r{i}</b>",
            "output": "o",
            "error": None,
            "judge_calls": 3,
            "tokens": 90,
            "estimated_cost_usd": 0.001,
        }
        for i in range(10)
    ] + [
        {
            "item": 10,
            "scorer_id": "s",
            "score": None,
            "error": "Scorer Run Failed: x",
            "failed_step": "analyze",
            "judge_calls": 1,
            "tokens": 0,
        }
    ]
    results = write_jsonl(tmp_path / "results.jsonl", records)
    html = tmp_path / "report.html"
    done = scorewatch("report", str(results), "--html", str(html))
    assert done.returncode == 0, done.stderr
    page = html.read_text()
    assert "&lt;b&gt;r0&lt;/b&gt;" in page and "<b>r0</b>" not in page
    assert "analyze" in page and "Scorer Run Failed: x" in page
    rendered = render_in_chromium(html, tmp_path)
    assert 'data-charts-rendered="' in rendered
    count = int(rendered.split('data-charts-rendered="')[1].split('"')[0])
    assert count == 10 + 1  # ten histogram bins + one mean bar
    assert rendered.count('class="bar"') == 11


@pytest.mark.parametrize("flag", ["--help"])
def test_eval_help(flag: str) -> None:
    done = scorewatch("eval", flag)
    assert done.returncode == 0 and "--threshold" in done.stdout


def test_sqlite_sink_receives_results(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    db = tmp_path / "scores.db"
    done = scorewatch(
        "eval", str(data), "--scorer", "tests.cli_scorers:length_scorer", "--sqlite", str(db)
    )
    assert done.returncode == 0, done.stderr
    from scorewatch.live import SqliteSink

    rows = SqliteSink(db).query(limit=10)
    assert sorted(row["score"] for row in rows) == [0.0, 1.0, 1.0]
    assert {row["source"] for row in rows} == {"TEST"}


def test_results_the_sqlite_database_refuses_fail_the_run(tmp_path: Path) -> None:
    import sqlite3

    from scorewatch.live import SqliteSink

    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    db = tmp_path / "scores.db"
    SqliteSink(db).close()  # the table as the sink makes it, then a trigger refusing every row
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON mastra_scorers "
            "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
        )
    args = ["eval", str(data), "--scorer", "tests.cli_scorers:length_scorer", "--sqlite", str(db)]
    done = scorewatch(*args, "--format", "json")
    assert done.returncode == 1, done.stdout + done.stderr
    summary = json.loads(done.stdout)
    assert summary["passed"] is False
    assert (
        "3 result(s) not stored in the --sqlite database (the log says why)"
        in (summary["problems"])
    )
    assert "IntegrityError" in done.stderr


def test_failed_runs_exit_1_with_code_step_and_message(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    out = tmp_path / "results.jsonl"
    args = ["eval", str(data), "--scorer", "tests.cli_scorers:picky_scorer", "--out", str(out)]
    done = scorewatch(*args)
    assert done.returncode == 1, done.stdout + done.stderr
    # One line per distinct reason: scorer, code, step, message and the items it hit.
    assert (
        "picky: MASTR_SCORER_FAILED_TO_RUN_WORKFLOW_FAILED at step analyze: "
        "Scorer Run Failed: too short to analyze (1 word)  (item 1)"
    ) in done.stdout
    assert "1 run(s) failed (pass --allow-failures" in done.stdout
    failed = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["item"], r["failed_step"]) for r in failed if r["error"]] == [(1, "analyze")]
    allowed = scorewatch(*args, "--allow-failures", "--format", "json")
    assert allowed.returncode == 0, allowed.stdout
    summary = json.loads(allowed.stdout)
    assert summary["failures"] == [
        {
            "scorer_id": "picky",
            "code": "MASTR_SCORER_FAILED_TO_RUN_WORKFLOW_FAILED",
            "step": "analyze",
            "message": "Scorer Run Failed: too short to analyze (1 word)",
            "items": [1],
        }
    ]


def test_a_judge_failure_prints_the_judges_error_code(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "data.jsonl", ROWS[:1])
    with LoopbackJudgeServer(HttpError(401, "Incorrect API key provided")) as server:
        done = scorewatch(
            "eval",
            str(data),
            "--scorer",
            "tests.cli_scorers:judged_scorer",
            env={"SCOREWATCH_TEST_API_BASE": server.base_url},
        )
    assert done.returncode == 1, done.stdout + done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("  judged:"))
    # The judge's own code (not the generic "scorer run failed"), the step, then the message.
    code = line.split(": ")[1].split(" at step ")[0]
    assert code != "MASTR_SCORER_FAILED_TO_RUN_WORKFLOW_FAILED" and code.isupper(), line
    assert " at step generate_score: " in line and "(item 0)" in line


def test_thresholds_accept_the_id_the_table_prints(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    scorer = "tests.cli_scorers:length_scorer"
    failing = scorewatch("eval", str(data), "--scorer", scorer, "--threshold", "length=0.9")
    assert failing.returncode == 1 and "threshold failed: length" in failing.stdout
    table_ids = [line.split()[0] for line in failing.stdout.splitlines()[1:2]]
    assert table_ids == ["length"]
    passing = scorewatch("eval", str(data), "--scorer", scorer, "--threshold", "length=0.5")
    assert passing.returncode == 0, passing.stdout
    unknown = scorewatch("eval", str(data), "--scorer", scorer, "--threshold", "lenght=0.5")
    assert unknown.returncode == 2
    assert "'lenght'" in unknown.stderr and "scorer ids: length" in unknown.stderr
    for bad in ("length=nan", "length=high"):
        refused = scorewatch("eval", str(data), "--scorer", scorer, "--threshold", bad)
        assert refused.returncode == 2 and "not a number" in refused.stderr, bad


SCORERS_FILE = """
[[scorers]]
id = "mentions-answer"
kind = "check-includes"
options = { expected = "answer" }

[[scorers]]
id = "long-enough"
factory = "tests.cli_scorers:length_scorer"
sampling = 0.5
"""


def test_scorers_file_in_serves_format_gives_options(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    scorers = tmp_path / "scorers.toml"
    scorers.write_text(SCORERS_FILE, encoding="utf-8")
    done = scorewatch(
        "eval",
        str(data),
        "--scorers",
        str(scorers),
        "--threshold",
        "mentions-answer=0.6",
        "--gate",
        "long-enough",
        "--format",
        "json",
    )
    summary = json.loads(done.stdout)
    assert summary["scorers"]["mentions-answer"]["mean"] == pytest.approx(2 / 3)
    assert summary["scorers"]["long-enough"]["mean"] == pytest.approx(2 / 3)
    # The gate (mean must be 1) fails; the threshold passes.
    assert summary["problems"] == ["gate failed: long-enough mean 0.667 < 1"]
    assert done.returncode == 1
    assert "scorers[1] (long-enough): sampling apply to live traffic" in done.stderr
    # A missing option is reported the way serve reports it, by its key path.
    scorers.write_text('[[scorers]]\nid = "x"\nkind = "check-includes"\n', encoding="utf-8")
    bad = scorewatch("eval", str(data), "--scorers", str(scorers))
    assert bad.returncode == 2 and "scorers[0].options" in bad.stderr and "expected" in bad.stderr


def test_out_replaces_an_earlier_runs_file(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    out = tmp_path / "results.jsonl"
    out.write_text('{"scorer_id": "stale", "item": 0}\n', encoding="utf-8")
    for _ in range(2):
        done = scorewatch(
            "eval", str(data), "--scorer", "tests.cli_scorers:length_scorer", "--out", str(out)
        )
        assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 3 and {r["scorer_id"] for r in records} == {"length"}
    same = scorewatch(
        "eval", str(data), "--scorer", "tests.cli_scorers:length_scorer",
        "--out", str(out), "--baseline", str(out),
    )  # fmt: skip
    assert same.returncode == 2 and "--out and --baseline are the same file" in same.stderr
    assert len(out.read_text().splitlines()) == 3
    onto_data = scorewatch(
        "eval", str(data), "--scorer", "tests.cli_scorers:length_scorer", "--out", str(data)
    )
    assert (
        onto_data.returncode == 2 and "--out and the dataset are the same file" in onto_data.stderr
    )
    assert len(data.read_text().splitlines()) == 3 and "score" not in data.read_text()


def test_version() -> None:
    """One version string: the wheel's (hatch reads src/scorewatch/_version.py), the package's
    and the CLI's are the same."""
    import tomllib

    import scorewatch as sw
    from scorewatch._version import __version__

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and project["project"]["dynamic"] == ["version"]
    assert project["tool"]["hatch"]["version"]["path"] == "src/scorewatch/_version.py"
    expected = __version__
    assert sw.__version__ == expected
    done = scorewatch("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"scorewatch {expected}"


@pytest.mark.parametrize("command", ["", "demo", "serve", "worker", "eval", "report", "scorers"])
def test_every_help_ends_with_examples(command: str) -> None:
    done = scorewatch(*([command] if command else []), "--help")
    assert done.returncode == 0, done.stderr
    tail = done.stdout.rstrip().split("\nexamples:\n")
    assert len(tail) == 2, done.stdout
    examples = [line.strip() for line in tail[1].splitlines() if line.strip()]
    assert examples and all(
        line.startswith(f"scorewatch {command}".rstrip()) or line.startswith("--")
        for line in examples
    ), examples


LONG = "a long enough answer here"
BASELINE_ROWS = [
    {"input": "q1", "output": LONG},
    {"input": "q2", "output": "short"},
    {"input": "q3", "output": "another long enough answer"},
    {"input": "q4", "output": "one more long answer"},
    *({"input": f"q{i}", "output": LONG} for i in range(5, 25)),
]
# q1 regresses, q2 improves, q3 and q4 as before, q5-q16 regress, q17-q24 stay: the mean drops
# from 23/24 to 10/24, and the paired interval of that drop stays clear of 5% of the scale.
CANDIDATE_ROWS = [
    {"input": "q1", "output": "now short"},
    {"input": "q2", "output": "now a long enough answer"},
    {"input": "q3", "output": "gone"},
    {"input": "q4", "output": "one more long answer"},
    *({"input": f"q{i}", "output": "too short"} for i in range(5, 17)),
    *({"input": f"q{i}", "output": LONG} for i in range(17, 25)),
]


def test_eval_baseline_and_report_compare_gate_and_render(tmp_path: Path) -> None:
    scorer = "tests.cli_scorers:length_scorer"
    baseline = tmp_path / "main.jsonl"
    done = scorewatch(
        "eval", str(write_jsonl(tmp_path / "a.jsonl", BASELINE_ROWS)), "--scorer", scorer,
        "--out", str(baseline),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    candidate_data = write_jsonl(tmp_path / "b.jsonl", CANDIDATE_ROWS)
    candidate, page = tmp_path / "branch.jsonl", tmp_path / "eval.html"
    gated = scorewatch(
        "eval", str(candidate_data), "--scorer", scorer, "--out", str(candidate),
        "--baseline", str(baseline), "--html", str(page),
    )  # fmt: skip
    assert gated.returncode == 1, gated.stdout + gated.stderr
    lines = gated.stdout.splitlines()
    assert lines[lines.index("compared with the baseline:") + 1].split()[4:6] == [
        "95%", "interval"
    ]  # fmt: skip
    assert lines[lines.index("compared with the baseline:") + 2].split() == [
        "length", "0.958", "0.417", "-0.542", "[-0.750,", "-0.292]", "14", "1", "0"
    ]  # fmt: skip
    assert "regressed items (14):" in gated.stdout and "improved items (1):" in gated.stdout
    assert "  length  item 0  1.000 -> 0.000  q1" in gated.stdout
    assert (
        "regression: length mean 0.958 -> 0.417 (54.2% of its scale worse; 95% interval of the "
        "change [-75.0%, -29.2%], all beyond the allowed -5.0%)"
    ) in gated.stdout
    # A drop of 54% whose interval reaches 30%: not a failure at --max-drop 0.3, and said so.
    allowed = scorewatch(
        "eval", str(candidate_data), "--scorer", scorer, "--baseline", str(baseline),
        "--max-drop", "0.3",
    )  # fmt: skip
    assert allowed.returncode == 0, allowed.stdout
    assert "within the noise: length mean 0.958 -> 0.417" in allowed.stdout

    html = tmp_path / "compare.html"
    compared = scorewatch("report", "--compare", str(baseline), str(candidate), "--html", str(html))
    assert compared.returncode == 1, compared.stdout + compared.stderr
    assert "regression: length" in compared.stdout
    as_json = scorewatch(
        "report", "--compare", str(baseline), str(candidate), "--format", "json",
        "--max-drop", "0.3",
    )  # fmt: skip
    assert as_json.returncode == 0, as_json.stdout
    result = json.loads(as_json.stdout)
    length = result["scorers"]["length"]
    assert length["delta"] == pytest.approx(-13 / 24) and result["passed"] is True
    assert length["interval"]["method"] == "paired bootstrap" and length["interval"]["items"] == 24
    assert length["interval"]["low"] < -0.3 < length["interval"]["high"] < 0
    assert [(c["item"], c["baseline"], c["candidate"]) for c in result["regressed"][:3]] == [
        (0, 1.0, 0.0),
        (2, 1.0, 0.0),
        (4, 1.0, 0.0),
    ]

    for report in (page, html):
        rendered = render_in_chromium(report, tmp_path)
        assert 'data-compare-rendered="1"' in rendered
        bar = rendered.split('class="delta-bar')[1].split(">")[0]
        assert bar.startswith(' worse"') and 'data-scorer="length"' in bar
        assert 'data-value="-0.5416666666666667"' in bar
        whisker = rendered.split('class="interval"')[1].split(">")[0]
        assert 'data-low="-0.75"' in whisker and 'data-scorer="length"' in whisker
        regressed = rendered.split('id="regressed"')[1].split("</table>")[0]
        assert regressed.count("<tr") == 12  # the header, ten items and "... and 4 more"
        improved = rendered.split('id="improved"')[1].split("</table>")[0]
        assert improved.count('class="better"') == 1 and "q2" in improved
        assert "regression: length mean 0.958 -&gt; 0.417" in rendered
        assert "[-0.750, -0.292]" in rendered.split('id="compare"')[1]


def test_report_needs_a_results_file_or_compare(tmp_path: Path) -> None:
    neither = scorewatch("report")
    assert neither.returncode == 2 and "--compare BASELINE CANDIDATE" in neither.stderr
    broken = tmp_path / "not-results.jsonl"
    broken.write_text('{"input": "a"}\n', encoding="utf-8")
    done = scorewatch("report", "--compare", str(broken), str(broken))
    assert done.returncode == 2 and "not-results.jsonl:1: not a result record" in done.stderr


def test_scorers_file_judged_scorer_with_options_and_judge_override(tmp_path: Path) -> None:
    def script(body: dict[str, Any]) -> Reply:
        prompt = body["messages"][-1]["content"]
        output = prompt.split("Settings")
        verdict = "pass" if len(output) > 2 else "fail"  # the rubric names Settings once
        return Reply(text=json.dumps({"choice": verdict, "reason": f"graded {verdict}"}))

    scorers = tmp_path / "scorers.toml"
    # The file's judge points nowhere; the command line's --model-option fixes its api_base.
    scorers.write_text(
        '[judge]\nmodel = "openai/loopback-judge"\napi_key_env = "SW_TEST_JUDGE_KEY"\n'
        'model_options = { api_base = "http://127.0.0.1:9/v1" }\n\n'
        '[[scorers]]\nid = "mentions-settings"\nkind = "rubric-label"\n'
        'options = { rubric = "Pass when the answer points to Settings." }\n',
        encoding="utf-8",
    )
    rows = [
        {"input": "Reset?", "output": "Open Settings, then Security."},
        {"input": "Reset?", "output": "Ask someone."},
    ]
    data = write_jsonl(tmp_path / "data.jsonl", rows)
    out = tmp_path / "results.jsonl"
    with LoopbackJudgeServer(script) as server:
        done = scorewatch(
            "eval", str(data), "--scorers", str(scorers), "--out", str(out),
            "--model-option", f"api_base={server.base_url}", "--model-option", "max_retries=0",
            env={"SW_TEST_JUDGE_KEY": "sk-test"},
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [
        (r["item"], r["score"], r["reason"]) for r in sorted(records, key=lambda r: r["item"])
    ] == [
        (0, 1, "pass: graded pass"),
        (1, 0, "fail: graded fail"),
    ]
    assert all(r["scorer_id"] == "mentions-settings" and r["judge_calls"] == 1 for r in records)


def test_a_target_failure_is_a_failed_run_with_its_reason(tmp_path: Path) -> None:
    data = tmp_path / "data.csv"
    data.write_text("input\nhello\nboom\n", encoding="utf-8")
    args = ["eval", str(data), "--scorer", "tests.cli_scorers:length_scorer"]
    done = scorewatch(*args, "--target", "tests.cli_scorers:fragile_target")
    assert done.returncode == 1, done.stdout + done.stderr
    line = next(line for line in done.stdout.splitlines() if "(target)" in line)
    assert line.startswith("  (target): RUN_EXPERIMENT_TARGET_FAILED_TO_GENERATE_RESULT at step ")
    assert "the agent crashed" in line and line.endswith("(item 1)")


def test_a_trajectory_dataset_gives_each_row_its_expected_steps(tmp_path: Path) -> None:
    # Issue 30: the row's expected_trajectory reaches the trajectory scorers.
    rows = [
        {"input": "Lisbon trip tools: flights hotels", "expected_trajectory": {
            "steps": [{"name": "flights"}, {"name": "hotels"}], "ordering": "strict"}},
        {"input": "Porto trip tools: hotels", "expectedTrajectory": {
            "steps": [{"name": "flights"}, {"name": "hotels"}], "maxSteps": 1}},
    ]  # fmt: skip
    data = write_jsonl(tmp_path / "trips.jsonl", rows)
    out = tmp_path / "results.jsonl"
    done = scorewatch(
        "eval", str(data), "--target", "tests.cli_scorers:travel_agent",
        "--scorer", "trajectory-accuracy-code", "--scorer", "trajectory-code", "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    scores = {
        (r["item"], r["scorer_id"]): r["score"]
        for r in map(json.loads, out.read_text().splitlines())
    }
    assert scores == {
        (0, "code-trajectory-accuracy-scorer"): 1,
        (1, "code-trajectory-accuracy-scorer"): 0.5,  # hotels found, flights missing
        (0, "code-trajectory-scorer"): 1,
        # (0.4 x accuracy 0.5 + 0.3 x efficiency 1, within the one-step budget) / 0.7
        (1, "code-trajectory-scorer"): 0.71,
    }


def test_a_multi_turn_dataset_is_one_conversation_per_row(tmp_path: Path) -> None:
    # Issue 30: `inputs` turns go to the target on one thread; the judge reads every turn.
    def script(body: dict[str, Any]) -> Reply:
        prompt = body["messages"][-1]["content"]
        booked = "Which evening" in prompt and "Booked: a table for two on Friday" in prompt
        return Reply(text=json.dumps({"satisfied": booked, "reasoning": "read both turns"}))

    scorers = tmp_path / "scorers.toml"
    scorers.write_text(
        '[judge]\nmodel = "openai/loopback-judge"\napi_key_env = "SW_TEST_JUDGE_KEY"\n\n'
        '[[scorers]]\nid = "books-a-table"\nkind = "multi-turn-judge"\n'
        'options = { criterion = "A table gets booked." }\n',
        encoding="utf-8",
    )
    rows = [{"inputs": ["a table for two", "Friday"]}, {"inputs": ["a table for six"]}]
    data = write_jsonl(tmp_path / "conversations.jsonl", rows)
    out = tmp_path / "results.jsonl"
    with LoopbackJudgeServer(script) as server:
        done = scorewatch(
            "eval", str(data), "--scorers", str(scorers), "--out", str(out),
            "--target", "tests.cli_scorers:booking_target",
            "--model-option", f"api_base={server.base_url}", "--model-option", "max_retries=0",
            env={"SW_TEST_JUDGE_KEY": "sk-test"},
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    records = sorted(map(json.loads, out.read_text().splitlines()), key=lambda r: r["item"])
    assert [r["score"] for r in records] == [1, 0]
    assert records[0]["input"] == ["a table for two", "Friday"]
    assert [turn["content"] for turn in records[0]["output"]] == [
        "Which evening suits you?",
        "Booked: a table for two on Friday.",
    ]


def test_estimate_calls_no_judge_and_prices_what_it_counts(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "data.jsonl", ROWS)
    with LoopbackJudgeServer(lambda body: Reply(text='{"score": 1}')) as server:
        env = {"SCOREWATCH_TEST_API_BASE": server.base_url}
        args = ("eval", str(data), "--scorer", "tests.cli_scorers:judged_scorer", "--estimate")
        table = scorewatch(*args, "--repeat", "2", env=env)
        done = scorewatch(*args, "--repeat", "2", "--format", "json", env=env)
        assert server.requests == []
    assert done.returncode == 0 and table.returncode == 0, done.stderr + table.stderr
    estimate = json.loads(done.stdout)["estimate"]
    judged = estimate["scorers"]["judged"]
    assert judged["judge_calls"] == estimate["judge_calls"] == 2 * len(ROWS) * 2
    assert judged["prompt_tokens"] > 0 and judged["completion_tokens"] > 0
    assert judged["completion_tokens_from"] == ["default", "schema"]
    # The loopback model has no price: counted, not guessed.
    assert judged["unpriced_calls"] == judged["judge_calls"]
    assert "litellm" in estimate["price_source"]
    assert "no judge was called" in table.stdout and "prices: litellm" in table.stdout


def test_estimate_refuses_a_target(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "data.jsonl", [{"input": "q"}])
    done = scorewatch(
        "eval", str(data), "--target", "tests.cli_scorers:upper_target",
        "--scorer", "tests.cli_scorers:picky_scorer", "--estimate",
    )  # fmt: skip
    assert done.returncode == 2 and "--estimate" in done.stderr


def test_a_crafted_results_file_runs_no_script_and_bad_values_are_named(tmp_path: Path) -> None:
    # Issue 28 item 19: an unescaped `item` ran script in the report; a scorer id of
    # `<!--<script>` stopped the charts; bad values ended in a traceback.
    mark = "document.body.setAttribute('data-pwned','1')"
    records = [
        {"item": 0, "scorer_id": "<!--<script>", "score": 0.5, "output": "o", "error": None},
        {"item": 1, "scorer_id": "</script><script>" + mark + "</script>", "score": 0.2},
        {"item": 2, "scorer_id": "s", "score": None, "error": "x", "failed_step": "<i>a</i>"},
    ]
    results = write_jsonl(tmp_path / "results.jsonl", records)
    html = tmp_path / "report.html"
    done = scorewatch("report", str(results), "--html", str(html))
    assert done.returncode == 0, done.stderr
    rendered = render_in_chromium(html, tmp_path)
    assert 'data-pwned="1"' not in rendered
    count = int(rendered.split('data-charts-rendered="')[1].split('"')[0])
    assert count == 3 * 10 + 3  # three histograms of ten bins, three mean bars
    assert "&lt;i&gt;a&lt;/i&gt;" in rendered

    crafted = dict(records[0], item=f'<img src=x onerror="{mark}">')
    bad_lines = {
        "item": crafted,
        "score": dict(records[0], score="high"),
        "scale": dict(records[0], scale=0),
        "tokens": dict(records[0], tokens=-1),
        "estimated_cost_usd": dict(records[0], estimated_cost_usd=float("nan")),
    }
    for field, bad in bad_lines.items():
        path = write_jsonl(tmp_path / f"bad-{field}.jsonl", [records[2], bad])
        done = scorewatch("report", str(path), "--html", str(tmp_path / "bad.html"))
        assert done.returncode == 2, (field, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr, done.stderr
        assert f"bad-{field}.jsonl:2: " in done.stderr and f"{field}: " in done.stderr, done.stderr
        assert "onerror" not in done.stderr  # the value is not echoed
        compared = scorewatch("report", "--compare", str(results), str(path))
        assert compared.returncode == 2 and "Traceback" not in compared.stderr, field
