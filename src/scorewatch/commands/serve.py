"""`scorewatch serve --config scorewatch.toml`: the HTTP scoring service."""

from __future__ import annotations

import argparse
import sys

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        "-c",
        default="scorewatch.toml",
        help="the TOML configuration file (default: ./scorewatch.toml)",
    )
    parser.add_argument(
        "--listen", default=None, help="HOST:PORT, overriding [server] listen (port 0: any free)"
    )
    parser.add_argument(
        "--queue",
        default=None,
        metavar="redis://HOST:PORT/DB",
        help="append accepted work to this Redis stream for `scorewatch worker` processes "
        "(overrides [queue] url; default: score in this process)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="validate the configuration, build the scorers and reach the configured Redis "
        "and PostgreSQL, then exit (1 naming what is unreachable)",
    )


def run(args: argparse.Namespace) -> int:
    from ..server.config import ConfigError, load_config, parse_listen, with_queue_url

    try:
        config = load_config(args.config)
        if args.listen is not None:
            try:
                parse_listen(args.listen)
            except ValueError as error:
                raise ConfigError(f"--listen: {error}") from None
            server = config.server.model_copy(update={"listen": args.listen})
            config = config.model_copy(update={"server": server})
        if args.queue is not None:
            config = with_queue_url(config, args.queue)
        if args.check:
            from ..server.auth import resolve_token
            from ..server.dependencies import DependencyUnavailableError, require_dependencies
            from ..server.scorers import build_scorers

            resolve_token(config)
            built = build_scorers(config)
            try:
                require_dependencies(config)
            except DependencyUnavailableError as error:
                print(f"scorewatch serve: {error.message}", file=sys.stderr)
                return 1
            print(f"{args.config}: OK ({len(built)} scorer(s): {', '.join(s.id for s in built)})")
            return 0
        from ..server.runner import serve

        return serve(config)
    except ConfigError as error:
        print(f"scorewatch serve: {error.message}", file=sys.stderr)
        return 2
