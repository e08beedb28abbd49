"""`scorewatch serve --config scorewatch.toml`: the HTTP scoring service."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from ._judge_keys import missing_key_lines, quiet_key_warnings
from ._service_config import add_config_arguments, check_listen, load_service_config

if TYPE_CHECKING:
    from ..server.config.file import ServeConfig

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_config_arguments(
        parser,
        config="",
        queue="append accepted work to this Redis stream for `scorewatch worker` processes "
        "(overrides [queue] url; default: score in this process)",
    )
    parser.add_argument(
        "--listen", default=None, help="HOST:PORT, overriding [server] listen (port 0: any free)"
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        metavar="N",
        help="processes serving the port, overriding [server] workers (default: one per core)",
    )
    parser.add_argument(
        "--traces-listen",
        default=None,
        metavar="HOST:PORT",
        help="overriding [traces] listen, the OTLP/HTTP trace listener (e.g. when a Collector "
        "already holds 4318)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="validate the configuration, build the scorers and reach the configured Redis "
        "and PostgreSQL, then exit (1 naming what is unreachable)",
    )


def run(args: argparse.Namespace) -> int:
    from ..server.config.file import ConfigError

    config = load_service_config(args)
    if args.listen is not None:
        check_listen("--listen", args.listen)
        server = config.server.model_copy(update={"listen": args.listen})
        config = config.model_copy(update={"server": server})
    if args.workers is not None:
        if args.workers < 1:
            raise ConfigError(f"--workers: expected a count of at least 1, got {args.workers}")
        server = config.server.model_copy(update={"workers": args.workers})
        config = config.model_copy(update={"server": server})
    if args.traces_listen is not None:
        config = _with_traces_listen(config, args.traces_listen)
    if args.check:
        from ..server.config.scorer_entries import build_scorers
        from ..server.http.auth import resolve_token
        from ..server.queue.dependencies import DependencyUnavailableError, require_dependencies

        resolve_token(config)
        with quiet_key_warnings():  # reported below, once per judge model
            built = build_scorers(config)
        missing = missing_key_lines((s.id, s.scorer) for s in built)
        if missing:
            for line in missing:
                print(f"scorewatch serve: {args.config}: {line}", file=sys.stderr)
            return 2
        try:
            require_dependencies(config)
        except DependencyUnavailableError as error:
            print(f"scorewatch serve: {error.message}", file=sys.stderr)
            return 1
        print(f"{args.config}: OK ({len(built)} scorer(s): {', '.join(s.id for s in built)})")
        return 0
    from ..server.http.serve_process import serve

    return serve(config)


def _with_traces_listen(config: ServeConfig, listen: str) -> ServeConfig:
    from ..server.config.file import ConfigError

    check_listen("--traces-listen", listen)
    if config.traces is None:
        raise ConfigError("--traces-listen: the configuration has no [traces] table")
    traces = config.traces.model_copy(update={"listen": listen})
    return config.model_copy(update={"traces": traces})
