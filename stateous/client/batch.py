"""Starting many tokens with `POST /tokens/batch` (spec 75 §3), in requests that fit the API's
limits, falling back to `POST /tokens` one by one against a control plane without the route."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

import httpx

from stateous.client.errors import ClientError, Refused, Unreachable

MOST_STARTS = 1000
"""The most starts one `POST /tokens/batch` takes."""
MOST_BYTES = 1_000_000
"""A batch's body stays below the API's 1 MiB (1,048,576 bytes), with room for the envelope."""
TOO_LARGE = "the body is larger than 1 MiB, the most this API reads"

Start = tuple[str, dict[str, Any] | None]
"""A token id and its context (None: `{}`)."""
Answer = dict[str, Any]
"""`{"status": <HTTP status>, "body": <the token, or the refusal envelope>}`."""


class Client(Protocol):
    """What of `stateous.client.Client` this module uses (it imports this module)."""

    url: str
    _http: httpx.Client

    def by(self, body: dict[str, Any], reason: str | None) -> dict[str, Any]: ...

    def _object(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]: ...

    def _wrong_shape(self) -> ClientError: ...


def start_body(token: str, context: dict[str, Any] | None) -> dict[str, Any]:
    """One start as `POST /tokens` takes it."""
    return {"token": token, "context": {} if context is None else context}


def batches(
    client: Client,
    starts: Iterable[Start],
    reason: str | None = None,
    most: int = 500,
    most_bytes: int = MOST_BYTES,
) -> Iterator[list[dict[str, Any] | Answer]]:
    """The starts in groups of at most `most`, each group's JSON below `most_bytes`.

    A start too large to travel alone comes as its refusal (`413 bad_request`), in its place.
    """
    group: list[dict[str, Any] | Answer] = []
    size = 0
    for token, context in starts:
        body = client.by(start_body(token, context), reason)
        length = len(json.dumps(body, ensure_ascii=False).encode("utf-8")) + 1
        if length + 16 > most_bytes:
            body = {"status": 413, "body": {"error": TOO_LARGE, "code": "bad_request"}}
            length = 0
        elif group and (len(group) >= most or size + length > most_bytes):
            yield group
            group, size = [], 0
        group.append(body)
        size += length
    if group:
        yield group


def start_many(
    client: Client,
    starts: Iterable[Start],
    *,
    batch_size: int = 500,
    progress: Callable[[list[Answer]], None] | None = None,
    reason: str | None = None,
) -> list[Answer]:
    """Start each (token, context) in order; one answer each, as `POST /tokens/batch` gives it.

    `progress` is called with each batch's answers as they come. A refusal of one start is its
    answer (nothing is raised for it); a refusal of a whole request raises `Refused`.
    """
    if not 1 <= batch_size <= MOST_STARTS:
        raise ValueError(f"batch_size is 1 to {MOST_STARTS}")
    answers: list[Answer] = []
    single = False
    for group in batches(client, starts, reason, batch_size):
        sendable = [item for item in group if "status" not in item]
        got: list[Answer] = []
        if sendable and not single:
            try:
                got = _send_batch(client, sendable)
            except Refused as exc:
                if not _no_such_route(exc):
                    raise
                single = True  # an older control plane: one request per start from now on
        if sendable and single:
            got = [_start_one(client, item) for item in sendable]
        placed = iter(got)
        done = [item if "status" in item else next(placed) for item in group]
        answers.extend(done)
        if progress is not None:
            progress(done)
    return answers


def _send_batch(client: Client, items: list[dict[str, Any]]) -> list[Answer]:
    answer = client._object("POST", "/tokens/batch", body={"tokens": items})
    found = answer.get("answers")
    if (
        not isinstance(found, list)
        or len(found) != len(items)
        or not all(isinstance(a, dict) and isinstance(a.get("status"), int) for a in found)
    ):
        raise client._wrong_shape()
    return found


def _no_such_route(exc: Refused) -> bool:
    """A control plane without `POST /tokens/batch` answers `404 not_found` or `405`."""
    return (exc.status == 404 and exc.code == "not_found") or exc.status == 405


def _start_one(client: Client, item: dict[str, Any]) -> Answer:
    """One start through `POST /tokens`, answered as the batch route would."""
    try:
        response = client._http.post(client.url + "/tokens", json=item)
    except httpx.RequestError as exc:
        detail = " ".join(str(exc).split()) or type(exc).__name__
        raise Unreachable(f"cannot reach the control plane at {client.url}: {detail}") from None
    try:
        body = json.loads(response.text)
    except (ValueError, RecursionError):
        raise client._wrong_shape() from None
    if response.status_code >= 400:
        if not isinstance(body, dict) or not isinstance(body.get("error"), str):
            raise client._wrong_shape()
        body = {"error": body["error"], "code": body.get("code")}
    return {"status": response.status_code, "body": body}
