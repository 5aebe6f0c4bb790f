"""The console's HTTP client: every route the console calls, with refusals as exceptions."""

from __future__ import annotations

import json
import os
from typing import Any
from urllib.parse import quote

import httpx

from stateous.model.actor import default_actor
from stateous.model.errors import StateousError

JSON = Any


class Refused(StateousError):
    """The control plane answered with a refusal: `code` and the sentence of spec 20 §1.7."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message, code=code)
        self.status = status

    @property
    def line(self) -> str:
        """The refusal as the console shows it: `<code>: <sentence>`."""
        return f"{self.code}: {self.message}"


class Unreachable(StateousError):
    """No answer came: the connection failed, timed out, or the answer was not JSON."""

    code = "unreachable"


def console_by(reason: str | None = None) -> dict[str, Any]:
    """The `by` the console sends with every change: `via: "console"`, and the reason given."""
    by: dict[str, Any] = {"actor": default_actor()}
    if reason:
        by["reason"] = reason[:500]
    by["via"] = "console"
    return by


def segment(value: str) -> str:
    """`value` percent-encoded as one path segment (`/` too), as the token commands send it."""
    return quote(value, safe="")


def _refusal(response: httpx.Response) -> Refused:
    """Build the refusal of a non-2xx answer, from the envelope when there is one."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return Refused(response.status_code, str(body.get("code", "error")), body["error"])
    text = response.text.strip()[:200] or response.reason_phrase
    return Refused(response.status_code, "error", text)


def _code(response: httpx.Response) -> str | None:
    """The refusal code of an answer, if it has the envelope."""
    try:
        body = response.json()
    except ValueError:
        return None
    code = body.get("code") if isinstance(body, dict) else None
    return code if isinstance(code, str) else None


class ControlPlane:
    """The routes of spec 20 and 70 that the console uses, over one `httpx.AsyncClient`.

    `transport` lets tests serve recorded answers from an in-process ASGI app; the command
    uses the network. The bearer token of spec 70 §5 is sent when `STATEOUS_AUTH_TOKEN` is set.
    """

    def __init__(
        self,
        url: str,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout: float = 10.0,
        auth_token: str | None = None,
    ) -> None:
        # Several control planes on one database (spec 85 §3): URLs separated by commas; `url`
        # is the one in use.
        self.urls = [part.strip().rstrip("/") for part in url.split(",") if part.strip()]
        self.urls = self.urls or [url.rstrip("/")]
        self.url = self.urls[0]
        token = auth_token if auth_token is not None else os.environ.get("STATEOUS_AUTH_TOKEN")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.AsyncClient(transport=transport, timeout=timeout, headers=headers)

    async def close(self) -> None:
        """Close the connection pool."""
        await self._client.aclose()

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, JSON]:
        """Send one request; answer (status, JSON or None for a 204).

        Raises `Refused` for a status of 400 or more and `Unreachable` when no JSON answer came.
        """
        clean = {k: v for k, v in (params or {}).items() if v is not None}
        for left in range(len(self.urls) - 1, -1, -1):
            try:
                response = await self._client.request(
                    method, self.url + path, params=clean, json=body, headers=headers
                )
            except httpx.HTTPError as exc:
                # No answer: the next URL from now on; at once when nothing was sent.
                self._fail_over()
                if left and isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
                    continue
                if isinstance(exc, httpx.TimeoutException):
                    raise Unreachable("no answer within the time limit") from None
                raise Unreachable(str(exc) or type(exc).__name__) from None
            if left and response.status_code == 503 and _code(response) == "not_serving":
                self._fail_over()
                continue
            break
        if response.status_code >= 400:
            raise _refusal(response)
        if response.status_code == 204:
            return 204, None
        try:
            return response.status_code, json.loads(response.text)
        except ValueError:
            raise Unreachable(
                f"answered {response.status_code} with something that is not JSON; check the URL"
            ) from None

    def _fail_over(self) -> None:
        self.url = self.urls[(self.urls.index(self.url) + 1) % len(self.urls)]

    async def get(self, path: str, **params: Any) -> JSON:
        """GET `path` with the query `params` (None values left out); the JSON answer."""
        return (await self.request("GET", path, params=params))[1]

    # Reads of spec 20.
    async def health(self) -> dict[str, Any]:
        """`GET /health`: the workflow's name and checksum."""
        return dict(await self.get("/health"))

    async def workflow(self) -> dict[str, Any]:
        """`GET /workflow`: the graph document."""
        return dict(await self.get("/workflow"))

    async def tokens(
        self, *, status: str | None = None, parent: str | None = None, limit: int = 1000
    ) -> list[dict[str, Any]]:
        """`GET /tokens`: most recently moved first."""
        return list(await self.get("/tokens", status=status, parent=parent, limit=limit))

    async def token(self, token: str) -> dict[str, Any]:
        """`GET /tokens/{id}`."""
        return dict(await self.get(f"/tokens/{segment(token)}"))

    async def history(self, token: str, after: int | None = None) -> list[dict[str, Any]]:
        """`GET /tokens/{id}/history`, only the entries after `after` when it is given."""
        return list(await self.get(f"/tokens/{segment(token)}/history", after=after))

    # Reads of spec 70 §1.
    async def tasks(
        self,
        *,
        status: str | None = None,
        token: str | None = None,
        state: str | None = None,
        supervisor: str | None = None,
        limit: int = 1000,
    ) -> list[dict[str, Any]]:
        """`GET /tasks` with its filters, newest first."""
        found = await self.get(
            "/tasks", status=status, token=token, state=state, supervisor=supervisor, limit=limit
        )
        return list(found)

    async def token_tasks(self, token: str) -> list[dict[str, Any]]:
        """`GET /tokens/{id}/tasks`, in id order."""
        return list(await self.get(f"/tokens/{segment(token)}/tasks"))

    async def timers(self, token: str) -> list[dict[str, Any]]:
        """`GET /tokens/{id}/timers`."""
        return list(await self.get(f"/tokens/{segment(token)}/timers"))

    async def memory(self, token: str) -> list[dict[str, Any]]:
        """`GET /tokens/{id}/memory`."""
        return list(await self.get(f"/tokens/{segment(token)}/memory"))

    async def stats(self) -> dict[str, Any]:
        """`GET /stats`: counts by status and by state."""
        return dict(await self.get("/stats"))

    # Reads of spec 80 §5-6.
    async def supervisors(self) -> list[dict[str, Any]]:
        """`GET /supervisors`: each supervisor seen lately with its status."""
        return list(await self.get("/supervisors"))

    async def inbox(self, *, limit: int = 1000) -> list[dict[str, Any]]:
        """`GET /inbox`: the waiting tasks of live tokens, the longest waiting first."""
        return list(await self.get("/inbox", limit=limit))

    # Steering.
    async def start(self, token: str, context: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        """`POST /tokens`; answer (created, token)."""
        status, body = await self.request(
            "POST", "/tokens", body={"token": token, "context": context, "by": console_by()}
        )
        return status == 201, dict(body)

    async def fire(
        self, token: str, event: str, payload: dict[str, Any] | None, key: str | None = None
    ) -> tuple[bool, dict[str, Any]]:
        """`POST /tokens/{id}/events/{event}`; answer (duplicate, token)."""
        headers = {"Idempotency-Key": key} if key else None
        body: dict[str, Any] = {} if payload is None else {"payload": payload}
        body["by"] = console_by()
        path = f"/tokens/{segment(token)}/events/{segment(event)}"
        answer = dict((await self.request("POST", path, body=body, headers=headers))[1])
        if answer.get("duplicate") is True and isinstance(answer.get("token"), dict):
            return True, dict(answer["token"])
        return False, answer

    async def steer(self, token: str, action: str, reason: str | None = None) -> dict[str, Any]:
        """`POST /tokens/{id}/pause|resume|cancel`; the token after it."""
        path = f"/tokens/{segment(token)}/{action}"
        return dict((await self.request("POST", path, body={"by": console_by(reason)}))[1])

    # Bulk jobs of spec 80 §2.
    async def bulk(
        self,
        action: str,
        selection: dict[str, Any],
        *,
        event: str | None = None,
        payload: dict[str, Any] | None = None,
        dry_run: bool = False,
        reason: str | None = None,
    ) -> dict[str, Any]:
        """`POST /bulk`: a dry run's `{matched, tokens}`, else the new job's `{job, matched}`."""
        body: dict[str, Any] = {"action": action, "filter": selection}
        if event is not None:
            body["event"] = event
        if payload is not None:
            body["payload"] = payload
        if dry_run:
            body["dry_run"] = True
        else:
            body["by"] = console_by(reason)
        return dict((await self.request("POST", "/bulk", body=body))[1])

    async def bulk_jobs(self, *, limit: int = 100) -> list[dict[str, Any]]:
        """`GET /bulk`: the jobs, newest first."""
        return list(await self.get("/bulk", limit=limit))

    async def bulk_job(self, job: int) -> dict[str, Any]:
        """`GET /bulk/{job}`: one job and its progress."""
        return dict(await self.get(f"/bulk/{job}"))
