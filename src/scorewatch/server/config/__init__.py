"""serve's configuration: `scorewatch.toml` (`file.py`) and what is built from it alone.

The `[queue]` and `[traces]` tables (`queue_settings.py`, `traces_settings.py`), the scorer
entries of `[[scorers]]` (`scorer_entries.py`), the sinks and the reader behind `GET /v1/scores`
(`stores.py`), and the log format of a serve or worker process (`process_logging.py`). Nothing
here knows HTTP, the intakes or the queue.
"""
