"""Redaction's cost on hostile text made of figures (issue 34): what one such item costs the
scoring loop and the sink's writer, which redact it before anything after it.

    .venv/bin/python benchmarks/bench_privacy_hostile.py [--repeats 5] [--only groups-20k,colons]
    .venv/bin/python benchmarks/bench_privacy_hostile.py --case groups-20k  # for callgrind

Each case is one text redacted by a fresh run of a policy redacting everything, its scanner's
caches emptied first (`Scanner.forget`: the text new to the process). The default prints the
process CPU of each case, best of `--repeats`; `--case NAME` redacts it once after a warm-up
(another text of the same shape), inside one `functools.reduce` call, for
`valgrind --tool=callgrind --toggle-collect=functools_reduce`.

The cases (random digits drawn with a fixed seed):
- `groups-20k`: 20 kB of four-digit groups separated by spaces (`1234 5678 9012 ...`), one run
  of figures in which every group may start a card or a phone number;
- `grouped-10k`, `-20k`, `-40k`: random digits with a space or a dash after one in four, the
  same at three sizes (linearity);
- `colons`: `1:` repeated, 16 kB (a number run, and an IPv6 hint at every colon);
- `short-runs-20k`: runs of five four-digit groups, each ended by a letter (many runs, each
  one short enough to be read whole);
- `digits-20k` and `prose-20k`: unbroken digits, and plain prose, for scale.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from functools import reduce

import _common  # noqa: F401  (sets the environment before scorewatch is imported)


def _groups(size: int, seed: int) -> str:
    draw = random.Random(seed)
    return " ".join(f"{draw.randrange(10_000):04d}" for _ in range(size // 5 + 1))[:size]


def _grouped(size: int, seed: int) -> str:
    draw = random.Random(seed)
    out = []
    while len(out) < size:
        out.append(str(draw.randrange(10)))
        if draw.randrange(4) == 0:
            out.append(draw.choice(" -"))
    return "".join(out)[:size]


def _short_runs(size: int, seed: int) -> str:
    draw = random.Random(seed)
    run = lambda: " ".join(f"{draw.randrange(10_000):04d}" for _ in range(5))  # noqa: E731
    return "".join(f"{run()} x " for _ in range(size // 27 + 1))[:size]


def _prose(size: int, seed: int) -> str:
    seed_text = "The parcel left the warehouse on Monday and has not moved since then. "
    return (seed_text * (size // len(seed_text) + 1))[:size]


CASES: dict[str, Callable[[int], str]] = {
    "groups-20k": lambda seed: _groups(20_000, seed),
    "grouped-10k": lambda seed: _grouped(10_000, seed),
    "grouped-20k": lambda seed: _grouped(20_000, seed),
    "grouped-40k": lambda seed: _grouped(40_000, seed),
    "colons": lambda seed: "1:" * 8_000,
    "short-runs-20k": lambda seed: _short_runs(20_000, seed),
    "digits-20k": lambda seed: "".join(
        str(d) for d in random.Random(seed).choices(range(10), k=20_000)
    ),
    "prose-20k": lambda seed: _prose(20_000, seed),
}


def _redact(text: str) -> str:
    from scorewatch.privacy import PrivacyPolicy

    policy = _POLICY.setdefault("policy", PrivacyPolicy(redact=["all"]))
    policy._scanner.forget()
    return policy.start().text(text)


_POLICY: dict[str, object] = {}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--case", choices=sorted(CASES))
    parser.add_argument("--only", default="")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    if args.case:
        _redact(CASES[args.case](2))  # warm-up: imports, compiled patterns
        text = CASES[args.case](1)
        reduce(lambda _, t: _redact(t), [text], "")
        return
    chosen = args.only.split(",") if args.only else list(CASES)
    _redact(CASES["groups-20k"](2))
    print(f"process CPU per redaction, best of {args.repeats}")
    for name in chosen:
        text = CASES[name](1)
        best = float("inf")
        for _ in range(args.repeats):
            started = time.process_time()
            _redact(text)
            best = min(best, time.process_time() - started)
        print(f"{name:>16} {len(text):>7} chars {best * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
