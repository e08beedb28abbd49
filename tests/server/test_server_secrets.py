"""Secrets in stored rows and in the configuration, against real `scorewatch serve` processes
(issue 17, item 5): metadata and request-context keys that look like secrets are redacted in
every stored row; a configuration with a secret written into it is refused, naming the key and
never echoing the secret."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from serve_support import ServeProcess, run_serve, sqlite_rows, wait_idle, write_config

pytestmark = pytest.mark.e2e

SECRET = "sk-live-PLANTED-9f3b"

CONFIG = """\
[[scorers]]
id = "length"
factory = "sw_test_scorers:make_length_scorer"

[sinks]
sqlite = "scores.db"
jsonl = "scores.jsonl"
"""


def test_secret_looking_metadata_keys_are_redacted_in_every_stored_row(tmp_path: Path) -> None:
    metadata = {
        "apiKey": SECRET,
        "nested": {"Authorization": f"Bearer {SECRET}", "x-api-key": SECRET},
        "list": [{"access_token": SECRET, "refresh_token": SECRET}],
        "client_secret": SECRET,
        "password": SECRET,
        "tokens_used": 42,  # not a secret: kept
        "author": "kept",
        # Issue 28 item 13: these were stored in clear.
        "openai_key": SECRET,
        "key": SECRET,
        "bearer": SECRET,
        "pass": SECRET,
        "callback": f"https://agent:{SECRET}@hooks.example.com/x?access_token={SECRET}&page=2",
        "urls": [f"postgresql://app:{SECRET}@db/scores", f"https://{SECRET}@github.com/o/r"],
        "keywords": "kept",
    }
    body = {
        "scorers": ["length"],
        "target": "bot",
        "input": "q",
        "output": "a",
        "metadata": metadata,
        "request_context": {"session_id": SECRET, "tenant": "acme"},
    }
    with ServeProcess(write_config(tmp_path, CONFIG)) as serve:
        with httpx.Client(base_url=serve.url, timeout=30) as client:
            assert client.post("/v1/scores", json=body).status_code == 202
            wait_idle(client)
            listed = client.get("/v1/scores").json()["scores"]
        assert serve.terminate() == 0
    [row] = listed
    assert row["metadata"]["tokens_used"] == 42 and row["metadata"]["author"] == "kept"
    assert row["metadata"]["apiKey"] == "[redacted]"
    assert row["metadata"]["nested"] == {"Authorization": "[redacted]", "x-api-key": "[redacted]"}
    assert row["requestContext"] == {"session_id": "[redacted]", "tenant": "acme"}
    for key in ("openai_key", "key", "bearer", "pass"):
        assert row["metadata"][key] == "[redacted]", key
    assert row["metadata"]["callback"] == (
        "https://[redacted]@hooks.example.com/x?access_token=[redacted]&page=2"
    )
    assert row["metadata"]["urls"] == [
        "postgresql://[redacted]@db/scores",
        "https://[redacted]@github.com/o/r",
    ]
    assert row["metadata"]["keywords"] == "kept"
    stored = json.dumps(sqlite_rows(tmp_path / "scores.db"))
    stored += (tmp_path / "scores.jsonl").read_text("utf-8")
    stored += json.dumps(listed)
    assert SECRET not in stored
    assert SECRET not in serve.stderr()


def test_a_secret_written_into_the_configuration_is_refused(tmp_path: Path) -> None:
    cases = {
        "judge": (
            f'[judge]\nmodel = "openai/x"\nmodel_options = {{ api_key = "{SECRET}" }}\n',
            "judge.model_options: api_key: secrets never go in the file",
        ),
        "scorer": (
            f'model_options = {{ timeout = 5, auth_token = "{SECRET}" }}\n',
            "scorers[0].model_options: auth_token: secrets never go in the file",
        ),
        "postgres": (
            f'[sinks]\npostgres = "host=db user=app password={SECRET}"\n',
            "sinks.postgres: the DSN holds a password",
        ),
        "postgres-url": (
            f'[sinks]\npostgres = "postgresql://app:{SECRET}@db/scores"\n',
            "sinks.postgres: the DSN holds a password",
        ),
        "queue": (
            f'[queue]\nurl = "redis://:{SECRET}@cache:6379/0"\n',
            "queue.url: 'redis://[redacted]@cache:6379/0' holds a password",
        ),
    }
    for name, (extra, expected) in cases.items():
        directory = tmp_path / name
        scorer = '[[scorers]]\nid = "length"\nfactory = "sw_test_scorers:make_length_scorer"\n'
        body = scorer + extra if name == "scorer" else extra + "\n" + scorer
        code, stderr = run_serve(write_config(directory, body), "--check")
        assert code == 2, (name, stderr)
        assert expected in stderr, (name, stderr)
        assert SECRET not in stderr, name
