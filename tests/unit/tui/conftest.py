"""Fixtures of the console's tests: UTC as local time, recorded answers, a frozen console."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from stateous.tui.app import ConsoleApp, make_console
from tests.unit.tui.recorded import NOW, Recorded, transport


@pytest.fixture(autouse=True)
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Local time is UTC in these tests, so the times on screen are the same everywhere."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def recorded() -> Recorded:
    """The recorded control plane's data (a fresh copy per test)."""
    return Recorded()


@pytest.fixture
def console(recorded: Recorded, tmp_path: Path) -> Callable[..., ConsoleApp]:
    """A factory of consoles fed by the recorded control plane, clock frozen at NOW."""

    def make(**options: Any) -> ConsoleApp:
        options.setdefault("refresh", 60.0)
        options.setdefault("frozen", True)
        return make_console(
            "http://control-plane.test:8080",
            transport=transport(recorded),
            clock=lambda: NOW,
            settings_file=tmp_path / "console.yaml",
            **options,
        )

    return make
