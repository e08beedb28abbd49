"""`scorewatch scorers`: list the prebuilt scorers and what they need, from their cards."""

from __future__ import annotations

import argparse

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=("table", "json"), default="table")


def run(args: argparse.Namespace) -> int:
    import json

    from ..scorers.registry import PREBUILT

    rows = [
        {
            "name": name,
            "id": spec.id,
            "judge": "llm" if spec.needs_model else "none",
            "direction": spec.direction,
            "description": spec.description,
            "required_options": list(spec.required_options),
            "one_of_options": list(spec.one_of_options),
        }
        for name, spec in sorted(PREBUILT.items())
    ]
    if args.format == "json":
        print(json.dumps(rows, indent=2))
        return 0
    width = max(len(row["name"]) for row in rows)
    for row in rows:
        print(f"{row['name']:<{width}}  {row['judge']:<4}  {row['description']}")
    return 0
