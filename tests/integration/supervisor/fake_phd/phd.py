"""A stand-in for PHD (`poly-harness-dispatcher`) with the surface the sdlc `coding` routine uses.

The "agent" answers `{"event": "done"}` after three events, and reports a session id after the
first one. `FAKE_PHD_FAIL=session` makes every run fail with the error kind `session`.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ERROR_KINDS = ("idle", "session", "harness", "timeout", "unknown")


class CwdNotFound(Exception):
    """`Spec.cwd` does not exist."""


@dataclass
class Stack:
    path: str

    @classmethod
    def load(cls, path: str) -> Stack:
        return cls(path)


@dataclass
class Credentials:
    host: str

    @classmethod
    def from_host(cls, name: str) -> Credentials:
        return cls(name)


@dataclass
class Spec:
    harness: str
    model: str
    stack: Stack
    cwd: str
    credentials: Credentials
    output_schema: dict[str, Any] | None = None
    idle_timeout_s: float | None = None
    timeout_s: float = 1800


@dataclass
class Inputs:
    msg: str


@dataclass
class Event:
    kind: str
    summary: str


@dataclass
class Error:
    kind: str
    message: str


@dataclass
class Result:
    status: str
    structured_output: Any = None
    error: Error | None = None
    warnings: list[str] = field(default_factory=list)


class Handle:
    def __init__(self, resumed: str | None) -> None:
        self.session_id: str | None = None
        self._resumed = resumed

    async def events(self) -> AsyncIterator[Event]:
        yield Event("message", "reading the code")
        self.session_id = self._resumed or "sess-1"
        yield Event("status", "")
        yield Event("tool_result", "the tests pass")

    async def wait(self) -> Result:
        if os.environ.get("FAKE_PHD_FAIL") == "session":
            return Result("failed", error=Error("session", "the session is gone"))
        return Result("succeeded", structured_output={"event": "done"})


class _Run:
    def __init__(self, spec: Spec, session_id: str | None) -> None:
        if not Path(spec.cwd).is_dir():
            raise CwdNotFound(spec.cwd)
        self.handle = Handle(session_id)

    async def __aenter__(self) -> Handle:
        return self.handle

    async def __aexit__(self, *exc: object) -> None:
        return None


class Dispatcher:
    def __init__(self, spec: Spec) -> None:
        self.spec = spec

    def run(self, inputs: Inputs, session_id: str | None = None) -> _Run:
        return _Run(self.spec, session_id)
