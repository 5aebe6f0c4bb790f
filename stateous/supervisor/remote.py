"""The supervisor's HTTP calls to the control plane (httpx), and what counts as no answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

__all__ = ["Answer", "NoAnswer", "Remote", "UnreadableAnswer"]

REQUEST_TIMEOUT = 30.0
_NO_ANSWER_STATUSES = (502, 503, 504)


class NoAnswer(Exception):  # an outcome of a call, not a failure of ours
    """The call got no answer: a transport error, a timeout, or 502/503/504.

    `text` is the log line of spec 40 §4.8 without `; trying again in <n>s`.
    """

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class UnreadableAnswer(ValueError):
    """A refusal whose body is not JSON: the callers log it with its traceback (spec 40 §4.7)."""

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
    """An HTTP client bound to one control plane's base URL."""

    def __init__(
        self,
        url: str,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        auth_token: str | None = None,
    ) -> None:
        self.url = url
        # The bearer token of spec 70 §5 goes with every call when the folder has one.
        headers = {"Authorization": f"Bearer {auth_token}"} if auth_token else {}
        self._client = httpx.AsyncClient(
            base_url=url,
            timeout=REQUEST_TIMEOUT,
            transport=transport,
            trust_env=False,
            headers=headers,
        )

    async def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Answer:
        """One request; an Answer for any status but 502/503/504, else NoAnswer."""
        try:
            response = await self._client.request(method, path, json=body)
        except httpx.HTTPError as exc:
            reason = str(exc).strip() or type(exc).__name__
            raise NoAnswer(f"cannot reach the control plane at {self.url} ({reason})") from None
        try:
            parsed = response.json() if response.content else None
        except ValueError:
            parsed = _Unreadable(response.text)
        answer = Answer(response.status_code, parsed)
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


@dataclass(frozen=True)
class _Unreadable:
    """A body that is not JSON."""

    text: str
