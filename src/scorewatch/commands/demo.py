"""`scorewatch demo`: for now, a small example scorer run that prints its result."""

from __future__ import annotations

import argparse

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", default=None, help="the response to score")


def run(args: argparse.Namespace) -> int:
    import scorewatch as sw

    scorer = (
        sw.create_scorer(id="quality", name="Quality Scorer", description="Response quality")
        .preprocess(lambda ctx: {"word_count": len(ctx.run.output.split(" "))})
        .analyze(
            lambda ctx: {"has_substance": ctx.results.preprocess_step_result["word_count"] > 10}
        )
        .generate_score(
            lambda ctx: 1.0 if ctx.results.analyze_step_result["has_substance"] else 0.0
        )
        .generate_reason(
            lambda ctx: (
                f"Score: {ctx.score}. Response has "
                f"{ctx.results.preprocess_step_result['word_count']} words."
            )
        )
    )
    outputs = (
        [args.output]
        if args.output
        else [
            "Machine learning lets computers learn patterns from data instead of explicit rules.",
            "It is a kind of AI.",
        ]
    )
    for output in outputs:
        result = scorer.run_sync(input="What is machine learning?", output=output)
        print(f"score={result.score}  reason={result.reason!r}  output={output!r}")
    return 0
