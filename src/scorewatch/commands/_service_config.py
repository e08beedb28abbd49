"""What `scorewatch serve` and `scorewatch worker` read alike: `--config` and `--queue`, and
HOST:PORT options. The server modules load only when a command runs, not at `--help`."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..server.config.file import ServeConfig

__all__ = ["add_config_arguments", "check_listen", "load_service_config"]


def add_config_arguments(parser: argparse.ArgumentParser, *, config: str, queue: str) -> None:
    """`--config/-c FILE` and `--queue redis://...`, with each command's own help text."""
    parser.add_argument(
        "--config",
        "-c",
        default="scorewatch.toml",
        help=f"the TOML configuration file{config} (default: ./scorewatch.toml)",
    )
    parser.add_argument("--queue", default=None, metavar="redis://HOST:PORT/DB", help=queue)


def load_service_config(args: argparse.Namespace) -> ServeConfig:
    """The configuration file, with `--queue` overriding its [queue] url; raises ConfigError."""
    from ..server.config.file import load_config, with_queue_url

    config = load_config(args.config)
    if args.queue is not None:
        config = with_queue_url(config, args.queue)
    return config


def check_listen(option: str, value: str) -> None:
    """Raises ConfigError naming `option` when `value` is no HOST:PORT."""
    from ..server.config.file import ConfigError, parse_listen

    try:
        parse_listen(value)
    except ValueError as error:
        raise ConfigError(f"{option}: {error}") from None
