"""The test knobs of `stateous serve`: the environment's durations over its settings."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from stateous.control.knobs import KNOBS, with_env_knobs
from stateous.control.settings import Settings
from stateous.model.environment import InvalidEnvironment, variable

GIVEN = Settings(graph_path=Path("x.json"), lease=timedelta(seconds=7), tick=0.5)


@pytest.fixture(autouse=True)
def no_knobs(monkeypatch: pytest.MonkeyPatch) -> None:
    for field in KNOBS:
        monkeypatch.delenv(variable(field), raising=False)


def test_without_knobs_the_settings_stay_as_given() -> None:
    assert with_env_knobs(GIVEN) == GIVEN


def test_each_knob_set_replaces_its_duration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATEOUS_LEASE_SECONDS", "3")
    monkeypatch.setenv("STATEOUS_SINCE_SECONDS", "0.5")
    monkeypatch.setenv("STATEOUS_HOLD_LAPSE_SECONDS", "2")
    monkeypatch.setenv("STATEOUS_STOP_WAIT_SECONDS", "1")
    monkeypatch.setenv("STATEOUS_TICK_SECONDS", "")  # empty: unset, the given tick stays
    found = with_env_knobs(GIVEN)
    assert (found.lease, found.since_every, found.sqlite_hold_lapse) == (
        timedelta(seconds=3),
        timedelta(seconds=0.5),
        timedelta(seconds=2),
    )
    assert (found.stop_wait, found.tick) == (1.0, 0.5)


def test_a_knob_that_cannot_be_used_stops_serve(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATEOUS_TICK_SECONDS", "-1")
    with pytest.raises(InvalidEnvironment) as refused:
        with_env_knobs(GIVEN)
    assert refused.value.message == (
        "the environment variable STATEOUS_TICK_SECONDS is '-1'; it must be a number of seconds "
        "above 0"
    )
