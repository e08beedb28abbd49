"""The examples that end each command's `--help` (kept apart so `--help` imports nothing heavy)."""

from __future__ import annotations

__all__ = ["EXAMPLES", "TOP_LEVEL_EXAMPLES", "epilog"]

TOP_LEVEL_EXAMPLES = """\
  scorewatch demo                                   # watch a simulated agent being scored
  scorewatch scorers                                # the prebuilt scorers
  scorewatch eval data.jsonl --scorer completeness --threshold completeness=0.6
  scorewatch score-traces traces.json.gz --scorer completeness  # Collector file exporter output
  scorewatch serve --config scorewatch.toml
  scorewatch COMMAND --help                         # a command's options and examples"""

EXAMPLES: dict[str, str] = {
    "demo": """\
  scorewatch demo                                   # 45 s, simulated judge, no API key
  scorewatch demo --duration 120 --rate 5 --port 0  # longer, faster, any free metrics port
  scorewatch demo --prometheus                      # also run Prometheus and its alert rules
  scorewatch demo --model openai/gpt-4o-mini        # a real judge (OPENAI_API_KEY set)""",
    "serve": """\
  scorewatch serve --config scorewatch.toml --check # validate and build the scorers, then exit
  scorewatch serve --config scorewatch.toml         # one worker process per core
  scorewatch serve --config scorewatch.toml --workers 1
  scorewatch serve --config scorewatch.toml --queue redis://127.0.0.1:6379/0""",
    "worker": """\
  scorewatch worker --config scorewatch.toml        # the [queue] of the file
  scorewatch worker --config scorewatch.toml --queue redis://127.0.0.1:6379/0""",
    "eval": """\
  scorewatch eval data.jsonl --scorer completeness --threshold completeness=0.6
  scorewatch eval data.csv --scorer summarization --model openai/gpt-4o-mini \\
      --out results.jsonl --html report.html
  scorewatch eval data.jsonl --scorers scorers.toml # scorers with options, serve's format
  scorewatch eval data.jsonl --scorer mypkg.scorers:tone --target mypkg.agent:answer
  scorewatch eval data.jsonl --scorers scorers.toml --baseline main.jsonl --out results.jsonl""",
    "score-traces": """\
  scorewatch score-traces traces.json --scorer completeness --sqlite scores.db
  scorewatch score-traces traces/*.json.gz --scorers scorewatch.toml --out results.jsonl
  scorewatch score-traces traces.json --operation invoke_agent --service shop-agent \\
      --scorer faithfulness --model openai/gpt-4o-mini --threshold faithfulness=0.8
  scorewatch score-traces traces.json --select scorewatch.toml --scorer completeness \\
      --format json                                 # [[traces.select]] tables of the file""",
    "rescore": """\
  scorewatch rescore --store scores.db --scorer mypkg.scorers:tone --since 2026-11-01
  scorewatch rescore --store postgresql://db/scores --scorer faithfulness \\
      --model openai/gpt-4o-mini --target support-bot --limit 500 --estimate
  scorewatch rescore --store scores.db --scorers scorewatch.toml --scorer tone --force""",
    "report": """\
  scorewatch report results.jsonl --html report.html
  scorewatch report --compare main.jsonl results.jsonl               # exit 1 on a regression
  scorewatch report --compare main.jsonl results.jsonl --max-drop 0.1 --html compare.html""",
    "scorers": """\
  scorewatch scorers                                # name, judge (llm/none), description
  scorewatch scorers --format json""",
    "erase": """\
  scorewatch erase --store scores.db --trace-id 0af7651916cd43dd8448eb211c80319c
  scorewatch erase --store postgresql://db/scores --target support-bot --until 2026-01-01
  scorewatch erase --store scores.jsonl --run-id call-42 --dry-run""",
    "calibrate": """\
  scorewatch calibrate docs/examples/labelled-answers.jsonl --scorer keyword-coverage
  scorewatch calibrate labelled.jsonl --scorer faithfulness --min-kappa 0.6 --html cal.html""",
    "labels": """\
  scorewatch labels import labels.jsonl --config scorewatch.toml   # or a CSV with a header""",
}


def epilog(examples: str) -> str:
    return f"examples:\n{examples}"
