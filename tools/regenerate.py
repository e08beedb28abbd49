"""The command line every generator of committed files shares: grafana/generate.py,
grafana/postgres_dashboard.py and deploy/prometheus/generate_rules.py each say which files they
own and what those hold; this writes the ones whose content changed, or with `--check` lists the
stale ones (and files left in a generated folder that nothing generates any more) and exits 1."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

__all__ = ["REPO", "main", "stale_files", "write_files"]

REPO = Path(__file__).resolve().parents[1]


def stale_files(expected: Mapping[Path, str], listed: Iterable[Path] = ()) -> list[Path]:
    """Files whose content is not `expected`, then the `listed` files (a generated folder's
    current listing) that are not expected at all."""
    stale = [
        path
        for path, content in expected.items()
        if not path.exists() or path.read_text(encoding="utf-8") != content
    ]
    return stale + [path for path in listed if path not in expected]


def write_files(expected: Mapping[Path, str]) -> list[Path]:
    """Writes the files whose content differs; returns them."""
    written = []
    for path, content in expected.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != content:
            path.write_text(content, encoding="utf-8")
            written.append(path)
    return written


def main(
    description: str,
    expected: Callable[[], Mapping[Path, str]],
    listed: Callable[[], Iterable[Path]] = lambda: (),
    argv: list[str] | None = None,
) -> int:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="fail if a generated file is stale")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_files(expected(), listed())
        for path in stale:
            print(f"stale: {path.relative_to(REPO)}", file=sys.stderr)
        return 1 if stale else 0
    for path in write_files(expected()):
        print(f"wrote {path.relative_to(REPO)}")
    return 0
