"""`scorewatch worker --config scorewatch.toml --queue redis://HOST:PORT/DB`: scores the work
that `scorewatch serve --queue ...` appends to a Redis stream."""

from __future__ import annotations

import argparse
import sys

from ._service_config import add_config_arguments, check_listen, load_service_config

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(
        parser,
        config=" shared with serve",
        queue="the Redis work queue (overrides [queue] url; required one way or the other)",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=None,
        help="scorer runs at once in this worker (default: [live] max_concurrency)",
    )
    parser.add_argument(
        "--consumer", default=None, help="consumer name in the group (default: HOST-PID)"
    )
    parser.add_argument(
        "--metrics-listen",
        default=None,
        metavar="HOST:PORT",
        help="serve Prometheus /metrics here (default: none; OTLP follows [telemetry])",
    )


def run(args: argparse.Namespace) -> int:
    from ..server.config.file import ConfigError

    config = load_service_config(args)
    if args.concurrency is not None and args.concurrency < 1:
        raise ConfigError("--concurrency: must be at least 1")
    if args.metrics_listen is not None:
        check_listen("--metrics-listen", args.metrics_listen)
    from ..server.queue.dependencies import DependencyUnavailableError
    from ..server.queue.worker_process import run_worker

    try:
        return run_worker(
            config,
            concurrency=args.concurrency,
            consumer=args.consumer,
            metrics_listen=args.metrics_listen,
        )
    except DependencyUnavailableError as error:
        print(f"scorewatch worker: {error.message}", file=sys.stderr)
        return 1
