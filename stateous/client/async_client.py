"""`AsyncClient`: `Client` for asyncio, the same methods, errors and fail-over, awaited."""

from __future__ import annotations

from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Mapping,
    Sequence,
)
from types import TracebackType
from typing import Any, Self

import httpx

from stateous.client import routes
from stateous.client.base import BaseClient
from stateous.client.batch import Answer, Start, StartPlan
from stateous.client.errors import Refused
from stateous.client.pages import Page, next_cursor
from stateous.client.wire import Request


class AsyncClient(BaseClient):
    """The control plane at `url`, for asyncio: `async with AsyncClient(url) as c: await c.get(…)`.

    Every method is `Client`'s, a coroutine here; the requests, answers, errors and fail-over
    are the same, built by the same code (`routes`, `wire`, `BaseClient`).
    """

    def __init__(
        self,
        url: str | Sequence[str],
        *,
        timeout: float = 30.0,
        auth_token: str | None = None,
        actor: str | None = None,
        via: str = "client",
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(url, timeout=timeout, auth_token=auth_token, actor=actor, via=via)
        self._http = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout), headers=self._headers, transport=transport
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the connections; the client sends nothing more."""
        await self._http.aclose()

    # ------------------------------------------------------------ tokens

    async def start(
        self, token: str, context: dict[str, Any] | None = None, *, reason: str | None = None
    ) -> dict[str, Any]:
        """As `Client.start`."""
        return await self._object(self._acting(routes.start(token, context), reason))

    async def start_many(
        self,
        starts: Iterable[Start],
        *,
        batch_size: int = 500,
        progress: Callable[[list[Answer]], None] | None = None,
        reason: str | None = None,
    ) -> list[Answer]:
        """As `Client.start_many`."""
        plan = StartPlan(self, starts, batch_size, reason)
        for group in plan.groups:
            items = plan.sendable(group)
            got: list[Answer] = []
            if items and not plan.single:
                try:
                    got = plan.batch_answers(await self._object(plan.batch(items)), items)
                except Refused as exc:
                    plan.refused(exc)
            if items and plan.single:
                got = [plan.one_answer(await self._exchange(plan.one(item))) for item in items]
            done = plan.place(group, got)
            if progress is not None:
                progress(done)
        return plan.answers

    async def get(self, token: str) -> dict[str, Any]:
        """As `Client.get`."""
        return await self._object(routes.get(token))

    async def tokens(
        self,
        *,
        status: str | None = None,
        parent: str | None = None,
        limit: int | None = None,
        context: Mapping[str, Any] | None = None,
        after: str | None = None,
    ) -> Page:
        """As `Client.tokens`."""
        return await self._page(routes.tokens(status, parent, limit, context, after))

    async def history(self, token: str) -> list[Any]:
        """As `Client.history`."""
        return await self._list(routes.history(token))

    async def fire(
        self,
        token: str,
        event: str,
        payload: dict[str, Any] | None = None,
        *,
        key: str | None = None,
        reason: str | None = None,
    ) -> dict[str, Any]:
        """As `Client.fire`."""
        return await self._object(self._acting(routes.fire(token, event, payload, key), reason))

    async def pause(self, token: str, *, reason: str | None = None) -> dict[str, Any]:
        """As `Client.pause`."""
        return await self._object(self._acting(routes.steer(token, "pause"), reason))

    async def resume(self, token: str, *, reason: str | None = None) -> dict[str, Any]:
        """As `Client.resume`."""
        return await self._object(self._acting(routes.steer(token, "resume"), reason))

    async def cancel(self, token: str, *, reason: str | None = None) -> dict[str, Any]:
        """As `Client.cancel`."""
        return await self._object(self._acting(routes.steer(token, "cancel"), reason))

    async def retry(self, token: str, *, reason: str | None = None) -> dict[str, Any]:
        """As `Client.retry`."""
        return await self._object(self._acting(routes.steer(token, "retry"), reason))

    async def move(
        self,
        token: str,
        state: str,
        context: dict[str, Any] | None = None,
        *,
        reason: str | None = None,
    ) -> dict[str, Any]:
        """As `Client.move`."""
        return await self._object(self._acting(routes.move(token, state, context), reason))

    async def why(self, token: str) -> dict[str, Any]:
        """As `Client.why`."""
        return await self._object(routes.why(token))

    async def migrate(
        self,
        token: str,
        to: str | None = None,
        states: dict[str, str] | None = None,
        context: dict[str, Any] | None = None,
        *,
        key: str | None = None,
        reason: str | None = None,
    ) -> dict[str, Any]:
        """As `Client.migrate`."""
        request = routes.migrate(token, to, states, context, key)
        return await self._object(self._acting(request, reason))

    # ------------------------------------------------------------ bulk jobs and the audit

    async def bulk(
        self,
        action: str,
        filter: dict[str, Any] | None = None,
        *,
        event: str | None = None,
        payload: dict[str, Any] | None = None,
        dry_run: bool = False,
        reason: str | None = None,
        to: str | None = None,
        states: dict[str, str] | None = None,
        context: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """As `Client.bulk`."""
        migrating = routes.migration(to, states, context)
        request = routes.bulk(action, filter, event, payload, dry_run, migrating)
        return await self._object(self._acting(request, reason))

    async def bulk_job(self, job: int) -> dict[str, Any]:
        """As `Client.bulk_job`."""
        return await self._object(routes.bulk_job(job))

    async def bulk_jobs(self, *, limit: int | None = None, after: str | None = None) -> Page:
        """As `Client.bulk_jobs`."""
        return await self._page(routes.bulk_jobs(limit, after))

    async def stop_bulk(self, job: int) -> dict[str, Any]:
        """As `Client.stop_bulk`."""
        return await self._object(routes.stop_bulk(job))

    async def audit(
        self,
        *,
        actor: str | None = None,
        token: str | None = None,
        since: str | None = None,
        limit: int | None = None,
        after: str | None = None,
    ) -> Page:
        """As `Client.audit`."""
        return await self._page(routes.audit(actor, token, since, limit, after))

    # ------------------------------------------------------------ schedules

    async def add_schedule(
        self,
        name: str,
        cron: str,
        *,
        tz: str | None = None,
        context: dict[str, Any] | None = None,
        id: str | None = None,
        catch_up: str | None = None,
        paused: bool = False,
        reason: str | None = None,
    ) -> dict[str, Any]:
        """Save a new schedule: the token of each slot of `cron` (5 fields) in zone `tz` starts
        on the current version; `id` the token id pattern (`{name}`, `{at}`), `catch_up` none,
        last or all. Answers the schedule with its `next_at`."""
        body = routes.schedule_body(cron, tz, context, id, catch_up, paused)
        return await self._object(self._acting(routes.add_schedule(name, body), reason))

    async def schedules(self) -> list[Any]:
        """Every schedule, by name: `{name, cron, tz, context, id, catch_up, paused, next_at,
        last_at, last_token, last_error, last_error_at, failures}`."""
        return await self._list(routes.schedules())

    async def schedule(self, name: str) -> dict[str, Any]:
        """One schedule (`NotFound`, code `schedule_not_found`, when there is none)."""
        return await self._object(routes.schedule(name))

    async def replace_schedule(
        self,
        name: str,
        cron: str,
        *,
        tz: str | None = None,
        context: dict[str, Any] | None = None,
        id: str | None = None,
        catch_up: str | None = None,
        paused: bool = False,
        reason: str | None = None,
    ) -> dict[str, Any]:
        """Replace a schedule's fields (those not given take their defaults)."""
        body = routes.schedule_body(cron, tz, context, id, catch_up, paused)
        return await self._object(self._acting(routes.replace_schedule(name, body), reason))

    async def pause_schedule(self, name: str, *, reason: str | None = None) -> dict[str, Any]:
        """Pause a schedule: it starts nothing until resumed."""
        return await self._object(self._acting(routes.schedule_act(name, "pause"), reason))

    async def resume_schedule(self, name: str, *, reason: str | None = None) -> dict[str, Any]:
        """Resume a schedule from its first slot after now."""
        return await self._object(self._acting(routes.schedule_act(name, "resume"), reason))

    async def remove_schedule(self, name: str, *, reason: str | None = None) -> dict[str, Any]:
        """Remove a schedule (the tokens it started stay); answers it as it was."""
        return await self._object(self._acting(routes.remove_schedule(name), reason))

    # ------------------------------------------------------------ retention

    async def export(
        self, ended_before: str, *, after: str | None = None, limit: int | None = None
    ) -> dict[str, Any]:
        """As `Client.export`."""
        return await self._object(routes.export(ended_before, after, limit))

    async def prune(
        self, tokens: list[str], ended_before: str, *, reason: str | None = None
    ) -> dict[str, Any]:
        """As `Client.prune`."""
        return await self._object(self._acting(routes.prune(tokens, ended_before), reason))

    async def import_tokens(
        self, entries: list[dict[str, Any]], *, reason: str | None = None
    ) -> dict[str, Any]:
        """As `Client.import_tokens`."""
        return await self._object(self._acting(routes.import_tokens(entries), reason))

    # ------------------------------------------------------------ tasks and the graph

    async def report(
        self,
        task: int,
        event: str,
        payload: dict[str, Any] | None = None,
        *,
        attempt: int | None = None,
    ) -> dict[str, Any]:
        """As `Client.report`."""
        return await self._object(routes.report(task, event, payload, attempt))

    async def inbox(
        self, *, state: str | None = None, limit: int | None = None, after: str | None = None
    ) -> Page:
        """As `Client.inbox`."""
        return await self._page(routes.inbox(state, limit, after))

    async def supervisors(self) -> list[Any]:
        """As `Client.supervisors`."""
        return await self._list(routes.supervisors())

    async def stats(self) -> dict[str, Any]:
        """As `Client.stats`."""
        return await self._object(routes.stats())

    async def workflow(self, checksum: str | None = None) -> dict[str, Any]:
        """As `Client.workflow`."""
        return await self._object(routes.workflow(checksum))

    async def versions(self) -> list[Any]:
        """As `Client.versions`."""
        return await self._list(routes.versions())

    # ------------------------------------------------------------ pages (issue 32)

    async def every(
        self, listing: Callable[..., Awaitable[Page]], /, **filters: Any
    ) -> AsyncIterator[Any]:
        """As `Client.every`: `async for t in c.every(c.tokens, status="active")`."""
        after: str | None = None
        while True:
            page = await listing(**filters, after=after)
            for row in page:
                yield row
            if page.next is None:
                return
            after = page.next

    # ------------------------------------------------------------ one request

    async def _object(self, request: Request) -> dict[str, Any]:
        return self._as_object(self._read(await self._exchange(request)))

    async def _list(self, request: Request) -> list[Any]:
        return self._as_list(self._read(await self._exchange(request)))

    async def _page(self, request: Request) -> Page:
        response = await self._exchange(request)
        return Page(self._as_list(self._read(response)), next_cursor(response))

    async def _exchange(self, request: Request) -> httpx.Response:
        """As `Client._exchange`, awaited."""
        for left in self._tries():
            try:
                response = await self._http.request(
                    request.method,
                    self.url + request.path,
                    json=request.body,
                    params=request.params,
                    headers=request.headers,
                )
            except httpx.RequestError as exc:
                if (failed := self._no_answer(exc, left)) is not None:
                    raise failed from None
                continue
            if not self._moves_on(response, left):
                break
        return response  # the last URL's try always answers or raises
