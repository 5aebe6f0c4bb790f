"""`Client`: one control plane over HTTP, synchronous, one request per call (spec 50 §4)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import Any, Self
from urllib.parse import quote

import httpx

from stateous.client.errors import ClientError, NotFound, Refused, Unreachable
from stateous.client.url import check_urls
from stateous.model.actor import default_actor

BODY_EXCERPT = 200
"""A refusal without an `error` sentence shows at most this many characters of its body."""


def segment(value: str | int) -> str:
    """`value` percent-encoded as one path segment: every reserved character escaped, `/` too."""
    return quote(str(value), safe="")


def _strict_constant(word: str) -> Any:
    raise ValueError(f"{word} is not a JSON value")


def decode_json(text: str) -> Any:
    """Strict JSON (no `NaN` or `Infinity`); raises `ValueError` (or `RecursionError`)."""
    return json.loads(text, parse_constant=_strict_constant)


class Client:
    """The control plane at `url`, for programs: `with Client(url) as c: c.start("T-1")`.

    Each method sends exactly one request and returns the decoded answer; nothing is retried
    (after a `503` with code `database_busy`, the caller tries again). Errors: `Unreachable`
    (no answer), `Refused` / `NotFound` (a status of 400 or more), `ClientError` (a bad URL, or
    an answer that is not the control plane's).
    """

    def __init__(
        self,
        url: str | Sequence[str],
        *,
        timeout: float = 30.0,
        auth_token: str | None = None,
        actor: str | None = None,
        via: str = "client",
    ) -> None:
        #: Every control plane to use (spec 85 §3: a list, or URLs separated by commas); `url` is
        #: the one in use, the next after a failover.
        self.urls = check_urls(url)
        self.url = self.urls[0]
        self.timeout = timeout
        #: Who acts (spec 80 §1): sent as `by` with each change, with the call's `reason`.
        self.actor = actor
        self.via = via  # `cli` and `console` say so; programs are `client`
        headers = {"Authorization": f"Bearer {auth_token}"} if auth_token else {}
        self._http = httpx.Client(timeout=httpx.Timeout(timeout), headers=headers)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection; the client sends nothing more."""
        self._http.close()

    # ------------------------------------------------------------ tokens

    def start(
        self, token: str, context: dict[str, Any] | None = None, *, reason: str | None = None
    ) -> dict[str, Any]:
        """Start `token` with `context`; an existing token comes back unchanged."""
        body = self.by({"token": token, "context": context or {}}, reason)
        return self._object("POST", "/tokens", body=body)

    def start_many(
        self,
        starts: Iterable[tuple[str, dict[str, Any] | None]],
        *,
        batch_size: int = 500,
        progress: Callable[[list[dict[str, Any]]], None] | None = None,
        reason: str | None = None,
    ) -> list[dict[str, Any]]:
        """Start each `(token, context)` in order with `POST /tokens/batch`, `batch_size` (1 to
        1000) a request; one answer each, `{"status", "body"}`: `201` started, `200` it existed
        (unchanged), else the refusal envelope of that start. `progress` gets each batch's
        answers as they come; `reason` goes with each start's `by` as in `start`. A control plane
        without the route gets one `POST /tokens` each."""
        from stateous.client.batch import start_many  # it imports this module

        return start_many(self, starts, batch_size=batch_size, progress=progress, reason=reason)

    def get(self, token: str) -> dict[str, Any]:
        """The token: `token`, `state`, `status`, `visit`, `context`, `entered_at` (+ `parent`)."""
        return self._object("GET", f"/tokens/{segment(token)}")

    def tokens(
        self, *, status: str | None = None, parent: str | None = None, limit: int | None = None
    ) -> list[Any]:
        """Tokens, most recently moved first; `limit` 1–1000, the server's default 100."""
        given = {"status": status, "parent": parent, "limit": limit}
        params = {name: str(value) for name, value in given.items() if value is not None}
        return self._list("GET", "/tokens", params=params)

    def history(self, token: str) -> list[Any]:
        """The token's ledger in `seq` order, each entry `{seq, at, kind, data}`."""
        return self._list("GET", f"/tokens/{segment(token)}/history")

    def fire(
        self,
        token: str,
        event: str,
        payload: dict[str, Any] | None = None,
        *,
        key: str | None = None,
        reason: str | None = None,
    ) -> dict[str, Any]:
        """Fire `event`; with a repeated `key` the answer is `{"duplicate": True, "token": …}`."""
        body: dict[str, Any] = self.by({} if payload is None else {"payload": payload}, reason)
        headers = None if key is None else {b"Idempotency-Key": _header_value(key)}
        path = f"/tokens/{segment(token)}/events/{segment(event)}"
        return self._object("POST", path, body=body, headers=headers)

    def pause(self, token: str, *, reason: str | None = None) -> dict[str, Any]:
        """Pause an active token: its events are held, its tasks wait, its timers stand still."""
        return self._object("POST", f"/tokens/{segment(token)}/pause", body=self.by({}, reason))

    def resume(self, token: str, *, reason: str | None = None) -> dict[str, Any]:
        """Resume a paused token: the held events apply in arrival order."""
        return self._object("POST", f"/tokens/{segment(token)}/resume", body=self.by({}, reason))

    def cancel(self, token: str, *, reason: str | None = None) -> dict[str, Any]:
        """Cancel an active or paused token for good."""
        return self._object("POST", f"/tokens/{segment(token)}/cancel", body=self.by({}, reason))

    def retry(self, token: str, *, reason: str | None = None) -> dict[str, Any]:
        """Retry a failed token: it enters again the state it failed in (spec 80 §3)."""
        return self._object("POST", f"/tokens/{segment(token)}/retry", body=self.by({}, reason))

    def move(
        self,
        token: str,
        state: str,
        context: dict[str, Any] | None = None,
        *,
        reason: str | None = None,
    ) -> dict[str, Any]:
        """Move a token by hand to `state`, with optional context writes (spec 80 §3)."""
        body: dict[str, Any] = {"to": state}
        if context is not None:
            body["context"] = context
        path = f"/tokens/{segment(token)}/move"
        return self._object("POST", path, body=self.by(body, reason))

    def why(self, token: str) -> dict[str, Any]:
        """Why the token is not moving: `{"token", "findings": [{"code", "sentence", "since"?}]}`."""
        return self._object("GET", f"/tokens/{segment(token)}/why")

    def by(self, body: dict[str, Any], reason: str | None) -> dict[str, Any]:
        """`body` with `by` (spec 80 §1) when an actor or a reason is set (`via: "client"`)."""
        if self.actor is None and reason is None:
            return body
        by: dict[str, Any] = {"actor": self.actor or default_actor()}
        if reason:
            by["reason"] = reason
        by["via"] = self.via
        return {**body, "by": by}

    # ------------------------------------------------------------ bulk jobs and the audit

    def bulk(
        self,
        action: str,
        filter: dict[str, Any] | None = None,
        *,
        event: str | None = None,
        payload: dict[str, Any] | None = None,
        dry_run: bool = False,
        reason: str | None = None,
    ) -> dict[str, Any]:
        """Act on every top token that matches `filter` (spec 80 §2): a dry run answers
        `{"matched", "tokens"}`; otherwise a job starts and the answer is `{"job", "matched"}`."""
        body: dict[str, Any] = {"action": action, "filter": filter or {}}
        if event is not None:
            body["event"] = event
        if payload is not None:
            body["payload"] = payload
        if dry_run:
            body["dry_run"] = True
        return self._object("POST", "/bulk", body=self.by(body, reason))

    def bulk_job(self, job: int) -> dict[str, Any]:
        """A bulk job and its progress: `matched`, `done`, `skipped` by code, `status`."""
        return self._object("GET", f"/bulk/{segment(job)}")

    def bulk_jobs(self, *, limit: int | None = None) -> list[Any]:
        """Bulk jobs, newest first."""
        params = {} if limit is None else {"limit": str(limit)}
        return self._list("GET", "/bulk", params=params)

    def stop_bulk(self, job: int) -> dict[str, Any]:
        """Stop a running bulk job; what is done stays done."""
        return self._object("POST", f"/bulk/{segment(job)}/stop", body={})

    def audit(
        self,
        *,
        actor: str | None = None,
        token: str | None = None,
        since: str | None = None,
        limit: int | None = None,
    ) -> list[Any]:
        """Operators' acts newest first: `{token, seq, at, kind, actor, via, reason, bulk}`."""
        given = {"actor": actor, "token": token, "since": since, "limit": limit}
        params = {name: str(value) for name, value in given.items() if value is not None}
        return self._list("GET", "/audit", params=params)

    # ------------------------------------------------------------ tasks and the graph

    def report(
        self,
        task: int,
        event: str,
        payload: dict[str, Any] | None = None,
        *,
        attempt: int | None = None,
    ) -> dict[str, Any]:
        """Report `event` as the outcome of a waiting task (work that went on outside)."""
        body: dict[str, Any] = {"kind": "event", "event": event}
        if payload is not None:
            body["payload"] = payload
        if attempt is not None:
            body["attempt"] = attempt
        return self._object("POST", f"/tasks/{segment(task)}/report", body=body)

    def inbox(self, *, state: str | None = None, limit: int | None = None) -> list[Any]:
        """The waiting tasks of live tokens, the longest waiting first (spec 80 §6): each
        `{task, token, state, visit, status, since, note, events: [{event, payload_schema}]}`."""
        given = {"state": state, "limit": limit}
        params = {name: str(value) for name, value in given.items() if value is not None}
        return self._list("GET", "/inbox", params=params)

    def supervisors(self) -> list[Any]:
        """The supervisors seen lately with their `status`: live, stale or gone (spec 80 §5)."""
        return self._list("GET", "/supervisors")

    def workflow(self) -> dict[str, Any]:
        """The graph document the control plane serves."""
        return self._object("GET", "/workflow")

    # ------------------------------------------------------------ one request

    def _object(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        answer = self._send(method, path, **kwargs)
        if not isinstance(answer, dict):
            raise self._wrong_shape()
        return answer

    def _list(self, method: str, path: str, **kwargs: Any) -> list[Any]:
        answer = self._send(method, path, **kwargs)
        if not isinstance(answer, list):
            raise self._wrong_shape()
        return answer

    def _wrong_shape(self) -> ClientError:
        return ClientError(
            f"the control plane at {self.url} sent an answer of the wrong shape; check the URL"
        )

    def _send(
        self,
        method: str,
        path: str,
        *,
        body: dict[str, Any] | None = None,
        params: dict[str, str] | None = None,
        headers: dict[bytes, bytes] | None = None,
    ) -> Any:
        """Send one request and decode the answer, or raise the matching `ClientError`.

        With several URLs (spec 85 §3), a request that surely did nothing there (no connection,
        or `503 not_serving`) is sent to the next one at once; any other failure moves the next
        call on to the next URL, and is raised (the request may have been applied).
        """
        for left in range(len(self.urls) - 1, -1, -1):
            try:
                response = self._http.request(
                    method, self.url + path, json=body, params=params, headers=headers
                )
            except httpx.RequestError as exc:
                failed = Unreachable(
                    f"cannot reach the control plane at {self.url}: {transport_detail(exc)}"
                )
                self._fail_over()
                if left and isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
                    continue
                raise failed from None
            if response.status_code == 503 and left and _code(response) == "not_serving":
                self._fail_over()
                continue
            break
        if response.status_code >= 400:
            raise refusal(response, self.url)
        try:
            return decode_json(response.text)
        except (ValueError, RecursionError):
            raise ClientError(
                f"the control plane at {self.url} answered {response.status_code} with "
                "something that is not JSON; check the URL"
            ) from None

    def _fail_over(self) -> None:
        """Use the next URL from now on (the first again after the last)."""
        self.url = self.urls[(self.urls.index(self.url) + 1) % len(self.urls)]


def _code(response: httpx.Response) -> str | None:
    """The refusal code of an answer, if it has the envelope."""
    try:
        body = response.json()
    except ValueError:
        return None
    code = body.get("code") if isinstance(body, dict) else None
    return code if isinstance(code, str) else None


def _header_value(key: str) -> bytes:
    """`key` as a header value, UTF-8; a control character cannot travel in a header at all."""
    if any(ord(char) < 32 or ord(char) == 127 for char in key):
        raise ClientError("an idempotency key may not hold control characters")
    return key.encode("utf-8")


def transport_detail(exc: httpx.RequestError) -> str:
    """One line that says why no answer came (the name of the failure when it says nothing)."""
    text = " ".join(str(exc).split())
    if isinstance(exc, httpx.TimeoutException):
        return f"no answer in time ({text})" if text else "no answer in time"
    return text or type(exc).__name__


def refusal(response: httpx.Response, url: str) -> Refused:
    """The `Refused` (or `NotFound`) of an answer with a status of 400 or more."""
    message, code = _refusal_parts(response)
    cls = NotFound if response.status_code == 404 else Refused
    return cls(response.status_code, message, url=url, code=code)


def _refusal_parts(response: httpx.Response) -> tuple[str, str | None]:
    """The answer's `error` and `code`; else its first 200 characters; else the reason phrase."""
    text = response.text
    try:
        body = decode_json(text)
    except (ValueError, RecursionError):
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        code = body.get("code")
        return body["error"], code if isinstance(code, str) else None
    excerpt = " ".join(text.strip()[:BODY_EXCERPT].split())
    return excerpt or response.reason_phrase or str(response.status_code), None
