"""The `scorewatch` command: `demo`, `serve`, `worker`, `eval`, `score-traces`, `rescore`, `report`,
`scorers`, `erase`.

Each subcommand lives in its own module and is imported only when chosen, so `scorewatch --help`
stays fast and a missing optional dependency only affects its own command.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

__all__ = ["main"]

# subcommand -> (module, help). Each module defines `add_arguments(parser)` and `run(args) -> int`.
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("scorewatch.commands.demo", "watch a simulated agent being scored live"),
    "serve": ("scorewatch.commands.serve", "run the HTTP scoring service"),
    "worker": ("scorewatch.commands.worker", "score work from a Redis Streams queue"),
    "eval": ("scorewatch.commands.eval", "score a dataset (JSONL or CSV) and gate on thresholds"),
    "score-traces": (
        "scorewatch.commands.score_traces",
        "score the agent runs in OpenTelemetry trace files (Collector file exporter output)",
    ),
    "rescore": (
        "scorewatch.commands.rescore",
        "judge stored runs (SQLite, PostgreSQL) again with a new scorer version, beside the old "
        "rows",
    ),
    "report": (
        "scorewatch.commands.report",
        "an HTML report of an earlier eval run, or compare two runs (a CI gate)",
    ),
    "scorers": ("scorewatch.commands.scorers", "list the prebuilt scorers"),
    "erase": (
        "scorewatch.commands.erase",
        "delete stored score rows by target, trace id, run id or time range (with an audit line)",
    ),
    "calibrate": (
        "scorewatch.commands.calibrate",
        "a scorer's agreement with human-labelled items and its best threshold (a CI gate)",
    ),
    "labels": ("scorewatch.commands.labels", "import human labels of scored runs (JSONL or CSV)"),
}


def _available() -> dict[str, tuple[str, str]]:
    from importlib.util import find_spec

    return {name: spec for name, spec in COMMANDS.items() if find_spec(spec[0]) is not None}


def _version() -> str:
    """The installed distribution's version; the package's own when run from a source tree."""
    from importlib import metadata

    from ._version import __version__

    try:
        return metadata.version("scorewatch")
    except metadata.PackageNotFoundError:
        return __version__


def main(argv: Sequence[str] | None = None) -> int:
    from .judge.prices import offline_by_default

    offline_by_default()
    from .commands._help import EXAMPLES, TOP_LEVEL_EXAMPLES, epilog

    parser = argparse.ArgumentParser(
        prog="scorewatch",
        description=__doc__.splitlines()[0],
        epilog=epilog(TOP_LEVEL_EXAMPLES),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"scorewatch {_version()}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    runners: dict[str, Callable[[argparse.Namespace], int]] = {}
    args_list = list(sys.argv[1:] if argv is None else argv)
    chosen = next((a for a in args_list if not a.startswith("-")), None)
    for name, (module_name, help_text) in _available().items():
        sub = subparsers.add_parser(
            name,
            help=help_text,
            description=help_text,
            epilog=epilog(EXAMPLES[name]),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        if name == chosen:
            module = importlib.import_module(module_name)
            module.add_arguments(sub)
            runners[name] = module.run
    args = parser.parse_args(args_list)
    from .errors import ScorewatchError

    try:
        return runners[args.command](args)
    except ScorewatchError as error:
        # What a command refuses (a bad file, option or configuration) is one line naming the
        # command, never a traceback, and exit code 2, whichever command it was.
        print(f"scorewatch {args.command}: {error.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
