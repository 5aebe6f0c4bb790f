"""The console's client: `AsyncClient` acting as the console, with the reads only it makes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from stateous.client import AsyncClient, ClientError, Page, Refused, Unreachable, routes
from stateous.client.wire import Request, query, segment
from stateous.model.actor import default_actor
from stateous.model.environment import environment

REASON_LIMIT = 500
"""The longest reason a change carries; a longer one is cut."""

PAGE = 100
"""The rows the console asks for in one request of a listing: one refresh stays within 100 ms
at a million tokens (1000 rows a listing took 190 ms to 1.1 s); more pages are
asked for only as the operator scrolls to them."""

PREFIX_MOST = 128
"""The longest id prefix `GET /tokens?prefix=` takes; a longer one is applied by the console."""


def refusal_line(refusal: Refused) -> str:
    """A refusal as the console shows it: `<code>: <sentence>` (`error` for an answer without
    the envelope, from a proxy for example)."""
    return f"{refusal.code or 'error'}: {refusal.message}"


def trouble(error: ClientError) -> str:
    """Why no usable answer came, as the banner shows it after the control plane's URL."""
    return error.detail if isinstance(error, Unreachable) else str(error)


def fired(answer: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    """The answer of a fire as (duplicate, token): a repeated idempotency key changed nothing."""
    if answer.get("duplicate") is True and isinstance(answer.get("token"), dict):
        return True, dict(answer["token"])
    return False, answer


class ControlPlane(AsyncClient):
    """The control plane as the console uses it: every change says who acts (`via: "console"`,
    the actor of `$STATEOUS_ACTOR` or the login), and the reads that programs do not need.
    The optional bearer token is `STATEOUS_AUTH_TOKEN`'s unless one is given.

    `transport` lets tests serve recorded answers from an in-process ASGI app.
    """

    def __init__(
        self,
        url: str,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout: float = 10.0,
        auth_token: str | None = None,
    ) -> None:
        token = auth_token if auth_token is not None else environment().auth_token
        super().__init__(
            url,
            timeout=timeout,
            auth_token=token,
            actor=default_actor(),
            via="console",
            transport=transport,
        )

    def by(self, body: dict[str, Any], reason: str | None) -> dict[str, Any]:
        """As `AsyncClient.by`, the reason cut to 500 characters."""
        return super().by(body, reason[:REASON_LIMIT] if reason else reason)

    async def start_new(self, token: str, context: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        """`POST /tokens`; answer (created, token): an existing token comes back unchanged."""
        response = await self._exchange(self._acting(routes.start(token, context), None))
        return response.status_code == 201, self._as_object(self._read(response))

    async def steer(self, token: str, action: str, reason: str | None = None) -> dict[str, Any]:
        """`pause`, `resume` or `cancel` `token`; the token after it."""
        act = {"pause": self.pause, "resume": self.resume, "cancel": self.cancel}[action]
        return await act(token, reason=reason)

    async def findings(self, token: str) -> list[dict[str, Any]]:
        """`GET /tokens/{id}/why`: the findings, most important first."""
        found = (await self.why(token)).get("findings")
        return [f for f in found if isinstance(f, dict)] if isinstance(found, list) else []

    async def history(self, token: str, after: int | None = None) -> list[Any]:
        """`GET /tokens/{id}/history`, only the entries after `after` when it is given."""
        return await self._list(routes.history(token, after))

    async def token_page(
        self,
        *,
        status: str | None = None,
        state: str | None = None,
        prefix: str = "",
        context: Mapping[str, Any] | None = None,
        after: str | None = None,
        limit: int = PAGE,
    ) -> Page:
        """One page of `GET /tokens`, most recently moved first, with the tokens screen's
        filters (`state` a state's own name, `prefix` the start of the ids, each
        context key as `context.KEY=JSON`); its `next` is the `after` of the page after it, or
        None on the last page (the answer's `Link` header, issue 32)."""
        request = routes.tokens(status, None, limit, context, after)
        more = query(state=state, prefix=prefix if 0 < len(prefix) <= PREFIX_MOST else None)
        return await self._page(Request("GET", "/tokens", params=request.params | more))

    # Reads that only the console makes.
    async def health(self) -> dict[str, Any]:
        """`GET /health`: the workflow's name and checksum."""
        return await self._object(Request("GET", "/health"))

    async def stats(self) -> dict[str, Any]:
        """`GET /stats`: counts by status and by state."""
        return await self._object(Request("GET", "/stats"))

    async def tasks(
        self,
        *,
        status: str | None = None,
        token: str | None = None,
        state: str | None = None,
        supervisor: str | None = None,
        limit: int = 1000,
    ) -> list[Any]:
        """`GET /tasks` with its filters, newest first."""
        params = query(status=status, token=token, state=state, supervisor=supervisor, limit=limit)
        return await self._list(Request("GET", "/tasks", params=params))

    async def token_tasks(self, token: str) -> list[Any]:
        """`GET /tokens/{id}/tasks`, in id order."""
        return await self._list(Request("GET", f"/tokens/{segment(token)}/tasks"))

    async def timers(self, token: str) -> list[Any]:
        """`GET /tokens/{id}/timers`."""
        return await self._list(Request("GET", f"/tokens/{segment(token)}/timers"))

    async def memory(self, token: str) -> list[Any]:
        """`GET /tokens/{id}/memory`."""
        return await self._list(Request("GET", f"/tokens/{segment(token)}/memory"))
