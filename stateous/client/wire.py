"""What the clients send and how they read answers, without I/O: shared by `Client` and
`AsyncClient`, which differ only in how a request travels."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

from stateous.client.errors import ClientError, NotFound, Refused, Unreachable

BODY_EXCERPT = 200
"""A refusal without an `error` sentence shows at most this many characters of its body."""


@dataclass(frozen=True)
class Request:
    """One request to a control plane, relative to its URL."""

    method: str
    path: str
    body: dict[str, Any] | None = None
    params: dict[str, str] = field(default_factory=dict)
    headers: dict[bytes, bytes] | None = None


def segment(value: str | int) -> str:
    """`value` percent-encoded as one path segment: every reserved character escaped, `/` too."""
    return quote(str(value), safe="")


def query(**given: object) -> dict[str, str]:
    """The query parameters that were given (None left out), as text."""
    return {name: str(value) for name, value in given.items() if value is not None}


def _strict_constant(word: str) -> Any:
    raise ValueError(f"{word} is not a JSON value")


def decode_json(text: str) -> Any:
    """Strict JSON (no `NaN` or `Infinity`); raises `ValueError` (or `RecursionError`)."""
    return json.loads(text, parse_constant=_strict_constant)


def header_value(key: str) -> bytes:
    """`key` as a header value, UTF-8; a control character cannot travel in a header at all."""
    if any(ord(char) < 32 or ord(char) == 127 for char in key):
        raise ClientError("an idempotency key may not hold control characters")
    return key.encode("utf-8")


# ------------------------------------------------------------ the fail-over rule


def sent_nowhere(exc: httpx.RequestError) -> bool:
    """Whether a request surely did nothing: it never reached a control plane."""
    return isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)


def not_serving(response: httpx.Response) -> bool:
    """Whether a control plane said it serves no database now (`503 not_serving`)."""
    return response.status_code == 503 and refusal_code(response) == "not_serving"


def unreachable(exc: httpx.RequestError, url: str) -> Unreachable:
    """The error of a request to `url` that got no answer."""
    detail = transport_detail(exc)
    return Unreachable(f"cannot reach the control plane at {url}: {detail}", detail=detail)


def transport_detail(exc: httpx.RequestError) -> str:
    """One line that says why no answer came (the name of the failure when it says nothing)."""
    text = " ".join(str(exc).split())
    if isinstance(exc, httpx.TimeoutException):
        return f"no answer in time ({text})" if text else "no answer in time"
    return text or type(exc).__name__


# ------------------------------------------------------------ answers


def read(response: httpx.Response, url: str) -> Any:
    """The decoded answer of `url`'s control plane; `Refused` for a status of 400 or more,
    `ClientError` for an answer that is not JSON."""
    if response.status_code >= 400:
        raise refusal(response, url)
    try:
        return decode_json(response.text)
    except (ValueError, RecursionError):
        raise ClientError(
            f"the control plane at {url} answered {response.status_code} with "
            "something that is not JSON; check the URL"
        ) from None


def wrong_shape(url: str) -> ClientError:
    """The error of a JSON answer that is not what the route answers."""
    return ClientError(
        f"the control plane at {url} sent an answer of the wrong shape; check the URL"
    )


def refusal_code(response: httpx.Response) -> str | None:
    """The refusal code of an answer, if it has the envelope."""
    try:
        body = response.json()
    except ValueError:
        return None
    code = body.get("code") if isinstance(body, dict) else None
    return code if isinstance(code, str) else None


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
