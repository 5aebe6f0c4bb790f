"""The supervisor's HTTP calls to the control plane (httpx on a lean transport), and what counts as
no answer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from stateous.client.url import split_urls
from stateous.supervisor.transport import LeanTransport

__all__ = ["Answer", "NoAnswer", "Remote", "UnreadableAnswer"]

REQUEST_TIMEOUT = 30.0
_NO_ANSWER_STATUSES = (502, 503, 504)


class NoAnswer(Exception):  # an outcome of a call, not a failure of ours
    """The call got no answer: a transport error, a timeout, or 502/503/504.

    `text` is the `cannot reach the control plane at <url> (...)` log line without
    `; trying again in <n>s`.
    """

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class UnreadableAnswer(ValueError):
    """A refusal whose body is not JSON: the callers log it with its traceback."""

    def __init__(self, status: int) -> None:
        super().__init__(f"the control plane answered {status} with a body that is not JSON")
        self.status = status


@dataclass(frozen=True)
class Answer:
    """An answer of the control plane: its status and its JSON body (None for a 204)."""

    status: int
    body: Any

    @property
    def ok(self) -> bool:
        """A 2xx answer."""
        return 200 <= self.status < 300

    @property
    def code(self) -> str:
        """The refusal code, or "" when the body has none."""
        code = self.body.get("code") if isinstance(self.body, dict) else None
        return code if isinstance(code, str) else ""

    @property
    def sentence(self) -> str:
        """The refusal sentence (or the status when the body has none)."""
        error = self.body.get("error") if isinstance(self.body, dict) else None
        return error if isinstance(error, str) else f"it answered {self.status}"


class Remote:
    """An HTTP client of one control plane, or of several on one database: `url`
    is a list, or URLs separated by commas; the one in use is `url`."""

    def __init__(
        self,
        url: str | Sequence[str],
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        auth_token: str | None = None,
    ) -> None:
        self.urls = [u.rstrip("/") for u in split_urls(url)] or [str(url)]
        self.url = self.urls[0]
        self._urls: dict[tuple[str, str], httpx.URL] = {}
        # The optional bearer token goes with every call when the folder has one.
        headers = {"Authorization": f"Bearer {auth_token}"} if auth_token else {}
        self._client = httpx.AsyncClient(
            timeout=REQUEST_TIMEOUT,
            transport=transport if transport is not None else LeanTransport(),
            trust_env=False,
            headers=headers,
        )

    async def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Answer:
        """One request; an Answer for any status but 502/503/504, else NoAnswer.

        With several URLs, a transport error or `503 not_serving` moves on to the next: at once
        when the request surely did nothing there (no connection, `not_serving`), else from the
        next call (the caller's retry, which the replay rules make safe).
        """
        for left in range(len(self.urls) - 1, -1, -1):
            try:
                return await self._call_one(method, path, body)
            except _Next as failed:
                self._fail_over()
                if not (left and failed.untouched):
                    raise NoAnswer(failed.text) from None
        raise AssertionError("unreachable")

    def _url(self, path: str) -> httpx.URL:
        """The URL of `path` at the control plane in use, parsed once."""
        url = self._urls.get((self.url, path))
        if url is None:
            if len(self._urls) > 256:  # paths that name tasks: keep the cache small
                self._urls.clear()
            url = self._urls[(self.url, path)] = httpx.URL(self.url + path)
        return url

    def _fail_over(self) -> None:
        self.url = self.urls[(self.urls.index(self.url) + 1) % len(self.urls)]

    async def _call_one(self, method: str, path: str, body: dict[str, Any] | None) -> Answer:
        try:
            response = await self._client.request(method, self._url(path), json=body)
        except httpx.HTTPError as exc:
            reason = str(exc).strip() or type(exc).__name__
            untouched = isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
            raise _Next(
                f"cannot reach the control plane at {self.url} ({reason})", untouched
            ) from None
        try:
            parsed = response.json() if response.content else None
        except ValueError:
            parsed = _Unreadable(response.text)
        answer = Answer(response.status_code, parsed)
        if answer.status == 503 and answer.code == "not_serving":
            raise _Next(self._no_answer(answer), untouched=True)
        if response.status_code in _NO_ANSWER_STATUSES:
            raise NoAnswer(self._no_answer(answer))
        if not answer.ok and isinstance(parsed, _Unreadable):
            # A refusal always has the JSON envelope: this answer is no control plane's.
            raise UnreadableAnswer(response.status_code)
        return answer

    def _no_answer(self, answer: Answer) -> str:
        if answer.code == "not_serving":
            return (
                f"the control plane at {self.url} does not serve its database now "
                f"(not_serving): {answer.sentence}"
            )
        if answer.code:
            return (
                f"cannot reach the control plane at {self.url} "
                f"(it answered {answer.status}, {answer.code}: {answer.sentence})"
            )
        return f"cannot reach the control plane at {self.url} (it answered {answer.status})"

    async def aclose(self) -> None:
        """Close the connections."""
        await self._client.aclose()


class _Next(Exception):
    """This URL gave no answer; `untouched`: the request surely did nothing there."""

    def __init__(self, text: str, untouched: bool) -> None:
        super().__init__(text)
        self.text = text
        self.untouched = untouched


@dataclass(frozen=True)
class _Unreadable:
    """A body that is not JSON."""

    text: str
