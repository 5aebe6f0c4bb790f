"""Starting many tokens with `POST /tokens/batch`, in requests that fit the API's
limits, falling back to `POST /tokens` one by one against a control plane without the route.

`StartPlan` holds everything but the sending, which `Client` and `AsyncClient` each do.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

import httpx

from stateous.client.base import BaseClient
from stateous.client.errors import Refused
from stateous.client.wire import Request, decode_json, wrong_shape

MOST_STARTS = 1000
"""The most starts one `POST /tokens/batch` takes."""
MOST_BYTES = 1_000_000
"""A batch's body stays below the API's 1 MiB (1,048,576 bytes), with room for the envelope."""
TOO_LARGE = "the body is larger than 1 MiB, the most this API reads"

Start = tuple[str, dict[str, Any] | None]
"""A token id and its context (None: `{}`)."""
Answer = dict[str, Any]
"""`{"status": <HTTP status>, "body": <the token, or the refusal envelope>}`."""
Group = list[dict[str, Any] | Answer]
"""A batch's starts in order: the body of each, or the answer of one that cannot be sent."""


def start_body(token: str, context: dict[str, Any] | None) -> dict[str, Any]:
    """One start as `POST /tokens` takes it."""
    return {"token": token, "context": {} if context is None else context}


def batches(
    client: BaseClient,
    starts: Iterable[Start],
    reason: str | None = None,
    most: int = 500,
    most_bytes: int = MOST_BYTES,
) -> Iterator[Group]:
    """The starts in groups of at most `most`, each group's JSON below `most_bytes`.

    A start too large to travel alone comes as its refusal (`413 bad_request`), in its place.
    """
    group: Group = []
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


class StartPlan:
    """One `start_many`: the groups to send, the answers so far, and whether the control plane
    has the batch route (an older one answers `404 not_found` or `405`: one start a request)."""

    def __init__(
        self,
        client: BaseClient,
        starts: Iterable[Start],
        batch_size: int,
        reason: str | None,
    ) -> None:
        if not 1 <= batch_size <= MOST_STARTS:
            raise ValueError(f"batch_size is 1 to {MOST_STARTS}")
        self.client = client
        self.groups = batches(client, starts, reason, batch_size)
        self.single = False
        self.answers: list[Answer] = []

    @staticmethod
    def sendable(group: Group) -> list[dict[str, Any]]:
        """The starts of `group` to send (the others are answered already)."""
        return [item for item in group if "status" not in item]

    @staticmethod
    def batch(items: list[dict[str, Any]]) -> Request:
        """The `POST /tokens/batch` of `items`."""
        return Request("POST", "/tokens/batch", body={"tokens": items})

    def batch_answers(self, answer: dict[str, Any], items: list[dict[str, Any]]) -> list[Answer]:
        """The answers of a batch, one per item, checked."""
        found = answer.get("answers")
        if (
            not isinstance(found, list)
            or len(found) != len(items)
            or not all(isinstance(a, dict) and isinstance(a.get("status"), int) for a in found)
        ):
            raise wrong_shape(self.client.url)
        return found

    def refused(self, exc: Refused) -> None:
        """A whole batch was refused: raise it, unless the route is missing (then one start a
        request from now on)."""
        if not ((exc.status == 404 and exc.code == "not_found") or exc.status == 405):
            raise exc
        self.single = True

    @staticmethod
    def one(item: dict[str, Any]) -> Request:
        """The `POST /tokens` of one start."""
        return Request("POST", "/tokens", body=item)

    def one_answer(self, response: httpx.Response) -> Answer:
        """One start's answer as the batch route gives it: a refusal is an answer too."""
        try:
            body = decode_json(response.text)
        except (ValueError, RecursionError):
            raise wrong_shape(self.client.url) from None
        if response.status_code >= 400:
            if not isinstance(body, dict) or not isinstance(body.get("error"), str):
                raise wrong_shape(self.client.url)
            body = {"error": body["error"], "code": body.get("code")}
        return {"status": response.status_code, "body": body}

    def place(self, group: Group, got: list[Answer]) -> list[Answer]:
        """The group's answers in order (the sent ones from `got`), kept among all answers."""
        placed = iter(got)
        done = [item if "status" in item else next(placed) for item in group]
        self.answers.extend(done)
        return done
