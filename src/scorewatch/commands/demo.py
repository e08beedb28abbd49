"""`scorewatch demo`: watch a simulated summarizer agent being scored live.

Without `--model` the judge is simulated (a loopback OpenAI-compatible server replaying the demo
dataset's annotations), so the demo needs no API key and no network. With `--model` the
summarization scorer's judge is that model, through litellm, with the provider's usual
credentials from the environment.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from ._judge_keys import quiet_key_warnings

__all__ = ["add_arguments", "run"]


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def _share(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return value


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"not a port: {text}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        default=None,
        help="a litellm model id for a real judge (e.g. openai/gpt-4o-mini; its API key from the "
        "environment). Default: the simulated judge, no key needed",
    )
    parser.add_argument(
        "--duration",
        type=_positive,
        default=None,
        metavar="SECONDS",
        help="how long the agent serves requests (default 45, or 60 with --prometheus)",
    )
    parser.add_argument(
        "--rate", type=_positive, default=4.0, metavar="RPS", help="agent requests per second"
    )
    parser.add_argument(
        "--port",
        type=_port,
        default=None,
        help="port of /metrics on 127.0.0.1 (default 9464, or a free one if it is taken; "
        "0: any free one)",
    )
    parser.add_argument(
        "--prometheus",
        action="store_true",
        help="also run the `prometheus` binary (if installed) with the short-window rules",
    )
    parser.add_argument(
        "--db", type=Path, default=None, metavar="PATH", help="SQLite file for the results"
    )
    parser.add_argument(
        "--sample-rate",
        type=_share,
        default=0.5,
        metavar="SHARE",
        help="share of requests scored (deterministic sampling), default 0.5",
    )
    parser.add_argument("--seed", type=int, default=None, help="make the run repeatable")


def run(args: argparse.Namespace) -> int:
    if args.model is not None and (missing := _missing_key(args.model)) is not None:
        print(f"scorewatch demo: {missing}", file=sys.stderr)
        return 2
    from ..demo.session import (
        DEFAULT_DURATION_S,
        DEFAULT_DURATION_WITH_PROMETHEUS_S,
        DemoOptions,
        run_demo,
    )

    duration = args.duration
    if duration is None:
        duration = DEFAULT_DURATION_WITH_PROMETHEUS_S if args.prometheus else DEFAULT_DURATION_S
    options = DemoOptions(
        model=args.model,
        duration_s=duration,
        rate=args.rate,
        port=args.port,
        prometheus=args.prometheus,
        db_path=args.db,
        sample_rate=args.sample_rate,
        seed=args.seed,
    )
    return asyncio.run(run_demo(options))


def _missing_key(model: str) -> str | None:
    """The judge's line when its key is certainly missing: said before the demo starts, instead
    of in every scored request's failure."""
    from ..judge.litellm_judge import LiteLLMJudge

    with quiet_key_warnings():
        return LiteLLMJudge(model).missing_api_key()
