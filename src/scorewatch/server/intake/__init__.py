"""How accepted traffic reaches the scoring engine (`live/engine.py`).

`interface.py` is what the HTTP layer sees (`Intake`, `ScoreItem`, `Admission`); `admission.py`
decides a request's items as `LiveScoring` would; `in_process.py` scores in this process on a
`scoring_loop.py` thread, admitting by queue delay (`throughput.py`) and by the HTTP loop's lag
(`loop_lag.py`); `redis_queue.py` appends to the work queue instead; `otlp_traces.py` assembles
OTLP traces into runs in front of either; `choice.py` picks one from the configuration.
"""
