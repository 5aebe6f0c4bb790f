"""`BaseClient`: what `Client` and `AsyncClient` share apart from I/O: the URLs and fail-over,
who acts, and the reading of answers (as procrastinate's `BaseConnector`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import httpx

from stateous.client.errors import Unreachable
from stateous.client.url import check_urls
from stateous.client.wire import Request, not_serving, read, sent_nowhere, unreachable, wrong_shape
from stateous.model.actor import default_actor


class BaseClient:
    """The state and the rules of a client of one or several control planes."""

    def __init__(
        self,
        url: str | Sequence[str],
        *,
        timeout: float,
        auth_token: str | None,
        actor: str | None,
        via: str,
    ) -> None:
        #: Every control plane to use (a list, or URLs separated by commas); `url` is
        #: the one in use, the next after a failover.
        self.urls = check_urls(url)
        self.url = self.urls[0]
        self.timeout = timeout
        #: Who acts: sent as `by` with each change, with the call's `reason`.
        self.actor = actor
        self.via = via  # `cli` and `console` say so; programs are `client`
        self._headers = {"Authorization": f"Bearer {auth_token}"} if auth_token else {}

    def by(self, body: dict[str, Any], reason: str | None) -> dict[str, Any]:
        """`body` with `by` when an actor or a reason is set (`via: "client"`)."""
        if self.actor is None and reason is None:
            return body
        by: dict[str, Any] = {"actor": self.actor or default_actor()}
        if reason:
            by["reason"] = reason
        by["via"] = self.via
        return {**body, "by": by}

    def _acting(self, request: Request, reason: str | None) -> Request:
        """`request` with the `by` of a change."""
        return replace(request, body=self.by(request.body or {}, reason))

    # ------------------------------------------------------------ the fail-over rule

    def _tries(self) -> range:
        """How many URLs are left after each try: one try per URL at most."""
        return range(len(self.urls) - 1, -1, -1)

    def _no_answer(self, exc: httpx.RequestError, left: int) -> Unreachable | None:
        """After a request that got no answer: None to send it to the next URL at once (it
        surely did nothing), else the error to raise. Either way, the next URL is used from now
        on: the request may have been applied, and the caller decides whether to send it again.
        """
        failed = unreachable(exc, self.url)
        self._fail_over()
        return None if left and sent_nowhere(exc) else failed

    def _moves_on(self, response: httpx.Response, left: int) -> bool:
        """After an answer: whether to send the request to the next URL (`503 not_serving`: the
        control plane there serves no database, so it did nothing)."""
        if left and not_serving(response):
            self._fail_over()
            return True
        return False

    def _fail_over(self) -> None:
        """Use the next URL from now on (the first again after the last)."""
        self.url = self.urls[(self.urls.index(self.url) + 1) % len(self.urls)]

    # ------------------------------------------------------------ answers

    def _read(self, response: httpx.Response) -> Any:
        return read(response, self.url)

    def _as_object(self, answer: Any) -> dict[str, Any]:
        if not isinstance(answer, dict):
            raise wrong_shape(self.url)
        return answer

    def _as_list(self, answer: Any) -> list[Any]:
        if not isinstance(answer, list):
            raise wrong_shape(self.url)
        return answer
