"""OpenAI's Batch API, as far as batch-priced scoring uses it: upload a JSONL file of requests,
create a batch of it, read the batch's status, download its output and error files.

The documented calls (https://platform.openai.com/docs/api-reference/batch):
`POST /v1/files` (multipart, `purpose=batch`), `POST /v1/batches` (`input_file_id`,
`endpoint=/v1/chat/completions`, `completion_window=24h`), `GET /v1/batches/{id}`,
`GET /v1/batches?after=...` (to find a batch whose creation a killed run did not record) and
`GET /v1/files/{id}/content`.

This speaks HTTP with the fast judge client's session and rules (`openai_http`): the same base
URL, key, organization, headers and proxies, redirects never followed, bodies read up to a cap.
litellm's file and batch helpers (`litellm.acreate_file`, ...) would do the same through the
openai SDK; the judge already owns these rules for OpenAI-compatible servers, so it keeps them
in one place rather than trusting a second client with the key.

Failures raise what `openai_http` raises (`HttpStatusError`, `MalformedResponseError`, aiohttp's
own); `provider_errors.classify_provider_error` turns them into `JudgeError`s.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import aiohttp

from .openai_http import (
    MalformedResponseError,
    OpenAIChatClient,
    _read_capped,
    _session,
    _status_error,
)

__all__ = ["BATCH_ENDPOINT", "MAX_FILE_BYTES", "TERMINAL_STATUSES", "OpenAIBatchClient"]

BATCH_ENDPOINT = "/v1/chat/completions"
MAX_FILE_BYTES = 512 << 20
"""The most an output or error file may hold: the API accepts input files up to 200 MB, and an
answer file is a few times its input at most."""
TERMINAL_STATUSES = frozenset({"completed", "failed", "expired", "cancelled"})
"""A batch in one of these statuses changes no more (`cancelling` and `finalizing` still do)."""


class OpenAIBatchClient:
    """Files and batches on the server a judge's chat client calls."""

    def __init__(self, chat: OpenAIChatClient) -> None:
        self._chat = chat

    @asynccontextmanager
    async def _request(
        self, method: str, path: str, **arguments: Any
    ) -> AsyncIterator[aiohttp.ClientResponse]:
        session = await _session()
        url = f"{self._chat.base_url()}{path}"
        headers = {"Accept": "application/json", **self._chat.auth_headers()}
        async with session.request(
            method,
            url,
            headers=headers,
            proxy=self._chat.proxy_for(url),
            allow_redirects=False,
            **arguments,
        ) as answer:
            if answer.status >= 300:
                raise _status_error(
                    answer.status, answer.headers, await _read_capped(answer, 1 << 16)
                )
            yield answer

    async def _json(self, method: str, path: str, **arguments: Any) -> dict[str, Any]:
        async with self._request(method, path, **arguments) as answer:
            payload = await _read_capped(answer)
        parsed = json.loads(payload)
        if not isinstance(parsed, dict):
            raise MalformedResponseError(f"{method} {path}: the answer is not a JSON object")
        return parsed

    async def upload(self, lines: bytes, filename: str) -> str:
        """Upload a JSONL file of requests (`purpose=batch`); its file id."""
        form = aiohttp.FormData()
        form.add_field("purpose", "batch")
        form.add_field("file", lines, filename=filename, content_type="application/jsonl")
        created = await self._json("POST", "/files", data=form)
        return _id_of(created, "file")

    async def create(self, input_file_id: str, metadata: Mapping[str, str]) -> dict[str, Any]:
        """Create a batch of the uploaded file's chat-completion requests (24-hour window)."""
        body = {
            "input_file_id": input_file_id,
            "endpoint": BATCH_ENDPOINT,
            "completion_window": "24h",
            "metadata": dict(metadata),
        }
        created = await self._json("POST", "/batches", json=body)
        _id_of(created, "batch")
        return created

    async def retrieve(self, batch_id: str) -> dict[str, Any]:
        return await self._json("GET", f"/batches/{batch_id}")

    async def find_by_input(self, input_file_id: str, pages: int = 10) -> dict[str, Any] | None:
        """The batch created from `input_file_id`, among the most recent `pages` pages of
        batches; None when there is none (its creation never reached the server)."""
        after: str | None = None
        for _ in range(pages):
            query = {"limit": "100", **({"after": after} if after else {})}
            listing = await self._json("GET", "/batches", params=query)
            data = listing.get("data")
            if not isinstance(data, list):
                raise MalformedResponseError("GET /batches: no `data` list")
            for batch in data:
                if isinstance(batch, dict) and batch.get("input_file_id") == input_file_id:
                    return batch
            if not listing.get("has_more") or not data:
                return None
            after = str(data[-1].get("id"))
        return None

    async def content(self, file_id: str) -> bytes:
        """A file's bytes (an output or error file: JSONL)."""
        async with self._request("GET", f"/files/{file_id}/content") as answer:
            return await _read_capped(answer, MAX_FILE_BYTES)


def _id_of(created: Mapping[str, Any], what: str) -> str:
    identifier = created.get("id")
    if not isinstance(identifier, str) or not identifier:
        raise MalformedResponseError(f"the created {what} has no id")
    return identifier
