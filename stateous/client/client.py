"""`Client`: one control plane over HTTP, synchronous, one request per call."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Self

import httpx

from stateous.client import routes
from stateous.client.base import BaseClient
from stateous.client.batch import Answer, Start, StartPlan
from stateous.client.errors import Refused
from stateous.client.pages import Page, next_cursor
from stateous.client.wire import Request


class Client(BaseClient):
    """The control plane at `url`, for programs: `with Client(url) as c: c.start("T-1")`.

    Each method sends exactly one request and returns the decoded answer; nothing is retried
    (after a `503` with code `database_busy`, the caller tries again). Errors: `Unreachable`
    (no answer), `Refused` / `NotFound` (a status of 400 or more), `ClientError` (a bad URL, or
    an answer that is not the control plane's). `AsyncClient` is the same for asyncio.
    """

    def __init__(
        self,
        url: str | Sequence[str],
        *,
        timeout: float = 30.0,
        auth_token: str | None = None,
        actor: str | None = None,
        via: str = "client",
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(url, timeout=timeout, auth_token=auth_token, actor=actor, via=via)
        self._http = httpx.Client(
            timeout=httpx.Timeout(timeout), headers=self._headers, transport=transport
        )

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
        return self._object(self._acting(routes.start(token, context), reason))

    def start_many(
        self,
        starts: Iterable[Start],
        *,
        batch_size: int = 500,
        progress: Callable[[list[Answer]], None] | None = None,
        reason: str | None = None,
    ) -> list[Answer]:
        """Start each `(token, context)` in order with `POST /tokens/batch`, `batch_size` (1 to
        1000) a request; one answer each, `{"status", "body"}`: `201` started, `200` it existed
        (unchanged), else the refusal envelope of that start. `progress` gets each batch's
        answers as they come; `reason` goes with each start's `by` as in `start`. A control plane
        without the route gets one `POST /tokens` each."""
        plan = StartPlan(self, starts, batch_size, reason)
        for group in plan.groups:
            items = plan.sendable(group)
            got: list[Answer] = []
            if items and not plan.single:
                try:
                    got = plan.batch_answers(self._object(plan.batch(items)), items)
                except Refused as exc:
                    plan.refused(exc)
            if items and plan.single:
                got = [plan.one_answer(self._exchange(plan.one(item))) for item in items]
            done = plan.place(group, got)
            if progress is not None:
                progress(done)
        return plan.answers

    def get(self, token: str) -> dict[str, Any]:
        """The token: `token`, `state`, `status`, `visit`, `context`, `entered_at` (+ `parent`)."""
        return self._object(routes.get(token))

    def tokens(
        self,
        *,
        status: str | None = None,
        parent: str | None = None,
        limit: int | None = None,
        context: Mapping[str, Any] | None = None,
        after: str | None = None,
    ) -> Page:
        """Tokens, most recently moved first; `limit` 1–1000, the server's default 100. The
        answer is a `Page`: a list, with `next` the cursor of the next page (`after=`) or None.

        `context` finds tokens by their searchable context keys: every key must hold
        (`{"customer": "acme", "order_id": 4711}`). A key the workflow does not search by is
        `Refused` with code `invalid_argument`; a key still being filled, `search_not_ready`."""
        return self._page(routes.tokens(status, parent, limit, context, after))

    def history(self, token: str) -> list[Any]:
        """The token's ledger in `seq` order, each entry `{seq, at, kind, data}`."""
        return self._list(routes.history(token))

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
        return self._object(self._acting(routes.fire(token, event, payload, key), reason))

    def pause(self, token: str, *, reason: str | None = None) -> dict[str, Any]:
        """Pause an active token: its events are held, its tasks wait, its timers stand still."""
        return self._object(self._acting(routes.steer(token, "pause"), reason))

    def resume(self, token: str, *, reason: str | None = None) -> dict[str, Any]:
        """Resume a paused token: the held events apply in arrival order."""
        return self._object(self._acting(routes.steer(token, "resume"), reason))

    def cancel(self, token: str, *, reason: str | None = None) -> dict[str, Any]:
        """Cancel an active or paused token for good."""
        return self._object(self._acting(routes.steer(token, "cancel"), reason))

    def retry(self, token: str, *, reason: str | None = None) -> dict[str, Any]:
        """Retry a failed token: it enters again the state it failed in."""
        return self._object(self._acting(routes.steer(token, "retry"), reason))

    def move(
        self,
        token: str,
        state: str,
        context: dict[str, Any] | None = None,
        *,
        reason: str | None = None,
    ) -> dict[str, Any]:
        """Move a token by hand to `state`, with optional context writes."""
        return self._object(self._acting(routes.move(token, state, context), reason))

    def why(self, token: str) -> dict[str, Any]:
        """Why the token is not moving: `{"token", "findings": [{"code", "sentence", "since"?}]}`."""
        return self._object(routes.why(token))

    def migrate(
        self,
        token: str,
        to: str | None = None,
        states: dict[str, str] | None = None,
        context: dict[str, Any] | None = None,
        *,
        key: str | None = None,
        reason: str | None = None,
    ) -> dict[str, Any]:
        """Move a live top token to another version: `to` a checksum on record
        (default: the current version), `states` maps its old state to a new one, `context`
        writes keys first. Answers the token; a repeated `key` answers the first answer again."""
        request = routes.migrate(token, to, states, context, key)
        return self._object(self._acting(request, reason))

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
        to: str | None = None,
        states: dict[str, str] | None = None,
        context: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Act on every top token that matches `filter`: a dry run answers
        `{"matched", "tokens"}`; otherwise a job starts and the answer is `{"job", "matched"}`.
        Action `migrate` takes `to`, `states` and `context` as `migrate` does; its
        dry run also answers `refused` (`{code: n}`) and `examples` (`{code: [ids]}`)."""
        migrating = routes.migration(to, states, context)
        request = routes.bulk(action, filter, event, payload, dry_run, migrating)
        return self._object(self._acting(request, reason))

    def bulk_job(self, job: int) -> dict[str, Any]:
        """A bulk job and its progress: `matched`, `done`, `skipped` by code, `status`."""
        return self._object(routes.bulk_job(job))

    def bulk_jobs(self, *, limit: int | None = None, after: str | None = None) -> Page:
        """Bulk jobs, newest first, as a `Page` (`after`: a page's `next`)."""
        return self._page(routes.bulk_jobs(limit, after))

    def stop_bulk(self, job: int) -> dict[str, Any]:
        """Stop a running bulk job; what is done stays done."""
        return self._object(routes.stop_bulk(job))

    def audit(
        self,
        *,
        actor: str | None = None,
        token: str | None = None,
        since: str | None = None,
        limit: int | None = None,
        after: str | None = None,
    ) -> Page:
        """Operators' acts newest first: `{token, seq, at, kind, actor, via, reason, bulk}`, as
        a `Page` (`after`: a page's `next`)."""
        return self._page(routes.audit(actor, token, since, limit, after))

    # ------------------------------------------------------------ schedules

    def add_schedule(
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
        return self._object(self._acting(routes.add_schedule(name, body), reason))

    def schedules(self) -> list[Any]:
        """Every schedule, by name: `{name, cron, tz, context, id, catch_up, paused, next_at,
        last_at, last_token, last_error, last_error_at, failures}`."""
        return self._list(routes.schedules())

    def schedule(self, name: str) -> dict[str, Any]:
        """One schedule (`NotFound`, code `schedule_not_found`, when there is none)."""
        return self._object(routes.schedule(name))

    def replace_schedule(
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
        return self._object(self._acting(routes.replace_schedule(name, body), reason))

    def pause_schedule(self, name: str, *, reason: str | None = None) -> dict[str, Any]:
        """Pause a schedule: it starts nothing until resumed."""
        return self._object(self._acting(routes.schedule_act(name, "pause"), reason))

    def resume_schedule(self, name: str, *, reason: str | None = None) -> dict[str, Any]:
        """Resume a schedule from its first slot after now."""
        return self._object(self._acting(routes.schedule_act(name, "resume"), reason))

    def remove_schedule(self, name: str, *, reason: str | None = None) -> dict[str, Any]:
        """Remove a schedule (the tokens it started stay); answers it as it was."""
        return self._object(self._acting(routes.remove_schedule(name), reason))

    # ------------------------------------------------------------ retention

    def export(
        self, ended_before: str, *, after: str | None = None, limit: int | None = None
    ) -> dict[str, Any]:
        """A page of ended top tokens that ended before `ended_before` (ISO 8601), in id order
        after `after`: `{"tokens": [{"token", "history", "children"}], "next"}`; `next` is the
        `after` of the next page, None after the last."""
        return self._object(routes.export(ended_before, after, limit))

    def prune(
        self, tokens: list[str], ended_before: str, *, reason: str | None = None
    ) -> dict[str, Any]:
        """Delete these ended top tokens that ended before `ended_before`, with their history
        and children, for good: `{"pruned": n, "skipped": {code: n}}`."""
        return self._object(self._acting(routes.prune(tokens, ended_before), reason))

    def import_tokens(
        self, entries: list[dict[str, Any]], *, reason: str | None = None
    ) -> dict[str, Any]:
        """Put a page of exported tokens back (1 to 1000 entries of `export`'s pages, or lines of
        a `stateous prune --export` file, as objects; the body at most 1 MiB), skipping those
        whose id is there already: `{"imported": n, "skipped": n, "keys_pending": n}`;
        `keys_pending` counts the tokens put back whose search keys are indexed only once their
        graph is served there. Needs an `admin` token."""
        return self._object(self._acting(routes.import_tokens(entries), reason))

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
        return self._object(routes.report(task, event, payload, attempt))

    def inbox(
        self, *, state: str | None = None, limit: int | None = None, after: str | None = None
    ) -> Page:
        """The waiting tasks of live tokens, the longest waiting first, as a `Page`
        (`after`: a page's `next`): each
        `{task, token, state, visit, status, since, note, events: [{event, payload_schema}]}`."""
        return self._page(routes.inbox(state, limit, after))

    def supervisors(self) -> list[Any]:
        """The supervisors seen lately with their `status`: live, stale or gone."""
        return self._list(routes.supervisors())

    def stats(self) -> dict[str, Any]:
        """Tokens by status and live work by state: `{tokens: {status: n},
        states: {state: {active, paused, queued, claimed, waiting, supervisors}}, …}`."""
        return self._object(routes.stats())

    def workflow(self, checksum: str | None = None) -> dict[str, Any]:
        """The graph document the control plane serves; with `checksum`, that version's
        (`NotFound` with code `version_not_found` for one never served)."""
        return self._object(routes.workflow(checksum))

    def versions(self) -> list[Any]:
        """The versions on record, newest first: each `{checksum, structure,
        current, first_served_at, live}`."""
        return self._list(routes.versions())

    # ------------------------------------------------------------ pages (issue 32)

    def every(self, listing: Callable[..., Page], /, **filters: Any) -> Iterator[Any]:
        """Every row of a listing (`tokens`, `inbox`, `audit`, `bulk_jobs`) with `filters`,
        page after page, one request a page: `for t in c.every(c.tokens, status="active")`.

        Each page starts after the last row of the one before (a keyset, never an offset): a
        row that moves while the walk goes on (a token that enters a state) may come twice or
        not at all."""
        after: str | None = None
        while True:
            page = listing(**filters, after=after)
            yield from page
            if page.next is None:
                return
            after = page.next

    # ------------------------------------------------------------ one request

    def _object(self, request: Request) -> dict[str, Any]:
        return self._as_object(self._read(self._exchange(request)))

    def _list(self, request: Request) -> list[Any]:
        return self._as_list(self._read(self._exchange(request)))

    def _page(self, request: Request) -> Page:
        response = self._exchange(request)
        return Page(self._as_list(self._read(response)), next_cursor(response))

    def _exchange(self, request: Request) -> httpx.Response:
        """Send `request`, failing over as `BaseClient` rules; the answer, or `Unreachable`."""
        for left in self._tries():
            try:
                response = self._http.request(
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
