"""A real `scorewatch serve` taking `bench_floor.py`'s `traces-scored` batches, for callgrind.

    python benchmarks/profile_traces.py --batches 8 --bodies /tmp/bodies.pickle --repeats 0
    python benchmarks/profile_traces_serve.py --bodies /tmp/bodies.pickle --batches N \
        [--src TREE/src] [--callgrind OUT]

Starts serve with `bench_floor.py`'s `traces-scored` configuration (one model-free scorer,
tool-call accuracy, on every agent span; SQLite sink; quiet period 0.5 s, parent wait 1 s) from
the sources in `--src` (default: this tree's), under `--callgrind OUT` (valgrind's callgrind, the
whole process and all its threads, `PYTHONHASHSEED=0`) when given; posts `--batches` of the
pre-built protobuf batches one after another, waits until every run is extracted and scored
(`/v1/stats`), and stops serve (SIGTERM: callgrind writes its file at exit). Instructions per
batch are the difference of two batch counts: (Ir(N2) - Ir(N1)) / (N2 - N1), each batch 103
runs of 5 spans. `callgrind_annotate --inclusive=yes OUT` then splits the process's instructions
between the trace thread (`_file`, `_take_ready`), the HTTP loop and the scoring loop.
"""

from __future__ import annotations

import argparse
import pickle
import signal
import sys
import tempfile
import time
from pathlib import Path

import httpx
from bench_floor import CONFIG, TRACES_TABLE, _wait_url, spawn_for_profile

BENCH = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bodies", type=Path, required=True, help="profile_traces.py's batches")
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--src", type=Path, default=BENCH.parent / "src")
    parser.add_argument("--callgrind", type=Path, help="run serve under callgrind, output here")
    args = parser.parse_args()
    bodies = pickle.loads(args.bodies.read_bytes())  # our own file (profile_traces.py)
    with tempfile.TemporaryDirectory(prefix="profile-traces-serve-") as folder:
        directory = Path(folder)
        (directory / "scorewatch.toml").write_text(
            CONFIG.format(
                http="httptools",
                sampling=1.0,
                kind="tool-call-accuracy-code",
                options='options = { expected_tool = "lookup_order" }',
                extra=TRACES_TABLE,
            )
        )
        command = [
            sys.executable, "-m", "scorewatch", "serve", "--config", "scorewatch.toml",
            "--listen", "127.0.0.1:0", "--workers", "1",
        ]  # fmt: skip
        process, stderr = spawn_for_profile(command, directory, args.src, args.callgrind)
        try:
            # Under valgrind the imports alone take minutes on a loaded machine.
            url = _wait_url(stderr, process, "scorewatch serve: listening on", timeout=900)
            with httpx.Client(timeout=600) as client:
                started = time.monotonic()
                retried = 0
                for index in range(args.batches):
                    while True:
                        answer = client.post(
                            f"{url}/v1/traces",
                            content=bodies[index % len(bodies)],
                            headers={"content-type": "application/x-protobuf"},
                        )
                        # Under valgrind on a loaded machine the scoring loop lags and serve
                        # asks to retry (`busy`): send the batch again, as an exporter would
                        # (a refused batch's cost is in the counts: say how many there were).
                        if answer.status_code != 429:
                            break
                        retried += 1
                        time.sleep(float(answer.headers.get("retry-after", "1")))
                    answer.raise_for_status()
                if retried:
                    print(f"{retried} batches answered 429 and sent again", file=sys.stderr)
                runs = args.batches * 103
                while True:
                    stats = client.get(f"{url}/v1/stats").json()
                    scored = stats["scored"] + stats["failed"]
                    if scored >= runs and stats["queued"] == 0 and stats["in_flight"] == 0:
                        break
                    time.sleep(0.5)
                print(
                    f"{args.batches} batches scored in {time.monotonic() - started:.1f} s: "
                    + ", ".join(f"{k} {v}" for k, v in stats.items() if v and "traces_" in k),
                    file=sys.stderr,
                )
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(600)


if __name__ == "__main__":
    main()
