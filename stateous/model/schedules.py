"""Schedules: the checks of a schedule's fields and its slots in its zone.

A slot is a wall-clock time of the zone that the cron expression names. Slots are computed on
wall-clock times (cronsim on naive datetimes) and then placed in the zone, so daylight-saving
time follows one rule: a wall-clock time that does not exist (the hour skipped in spring) is
no slot at all, and a wall-clock time that happens twice (the hour repeated in autumn) is one
slot, at its first occurrence. Times given and answered here are naive UTC, as the store keeps
them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

NAME = re.compile(r"[a-z0-9-]{1,64}")
#: The token id a pattern must make (the form `POST /tokens` accepts).
TOKEN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
CATCH_UPS = ("none", "last", "all")
DEFAULT_ID = "{name}-{at}"
DEFAULT_TZ = "UTC"
DEFAULT_CATCH_UP = "last"
#: `catch_up: all` starts at most this many missed slots (the newest ones, oldest first).
MOST_CAUGHT_UP = 1000
#: `catch_up: all` starts at most this many slots in one transaction (a step).
SLOTS_A_STEP = 50
#: With `catch_up: none`, a slot is on time (not missed) while the clock is this late at most:
#: a cron expression counts in minutes, and a restart takes seconds.
ON_TIME = timedelta(minutes=1)
#: The parts of a schedule's body (`by` is the operator's actor and reason).
PARTS = ("name", "cron", "tz", "context", "id", "catch_up", "paused", "by")
#: How far a wall clock moves at a daylight-saving change, at most (Lord Howe: 30 minutes).
_SHIFT = timedelta(hours=2)


class ScheduleProblem(ValueError):
    """A field of a schedule that cannot be used; the message names it."""


@dataclass(frozen=True)
class ScheduleSpec:
    """A schedule's fields as saved."""

    name: str
    cron: str
    tz: str = DEFAULT_TZ
    context: Mapping[str, Any] | None = None
    id: str = DEFAULT_ID
    catch_up: str = DEFAULT_CATCH_UP
    paused: bool = False

    @property
    def zone(self) -> tzinfo:
        """The zone of the slots."""
        return zone_of(self.tz)

    def token_id(self, slot: datetime) -> str:
        """The token id of a slot (naive UTC): the pattern with `{name}` and `{at}` filled."""
        return token_id(self.id, self.name, wall_text(slot, self.zone))


def check_name(name: Any) -> str:
    """A schedule's name, or the problem naming it."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise ScheduleProblem(
            "'name' is 1 to 64 lower-case letters, digits or '-', e.g. nightly-report"
        )
    return name


def check_cron(cron: Any) -> str:
    """A 5-field cron expression that names at least one time, or the problem naming it."""
    if not isinstance(cron, str) or len(cron) > 256:
        raise ScheduleProblem("'cron' is a cron expression of 5 fields, e.g. '0 9 * * 1-5'")
    fields = cron.split()
    if len(fields) != 5:
        raise ScheduleProblem(
            f"'cron' has {len(fields)} field{'' if len(fields) == 1 else 's'}; a schedule's cron expression has 5 "
            "(minute hour day-of-month month day-of-week), e.g. '0 9 * * 1-5'"
        )
    try:
        next(CronSim(" ".join(fields), datetime(2000, 1, 1)))
    except (CronSimError, StopIteration) as exc:
        why = str(exc) or "it names no time"
        raise ScheduleProblem(f"'cron' cannot be read: {why}") from exc
    return " ".join(fields)


def zone_of(tz: str) -> tzinfo:
    """The zone of an IANA name (`UTC` is the same as UTC)."""
    return UTC if tz == "UTC" else ZoneInfo(tz)


def check_tz(tz: Any) -> str:
    """An IANA zone name, or the problem naming it."""
    if not isinstance(tz, str) or not 1 <= len(tz) <= 64:
        raise ScheduleProblem("'tz' is an IANA time zone, e.g. Europe/Paris")
    try:
        zone_of(tz)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ScheduleProblem(f"'tz' {tz!r} is no IANA time zone, e.g. Europe/Paris") from exc
    return tz


def token_id(pattern: str, name: str, at: str) -> str:
    """A pattern with `{name}` and `{at}` filled in."""
    return pattern.replace("{name}", name).replace("{at}", at)


def check_id(pattern: Any, name: str) -> str:
    """An id pattern whose every slot makes its own valid token id, or the problem naming it."""
    if not isinstance(pattern, str) or not 1 <= len(pattern) <= 128:
        raise ScheduleProblem("'id' is a token id pattern with {at}, e.g. '{name}-{at}'")
    if "{at}" not in pattern:
        raise ScheduleProblem(
            "'id' has no {at}: each slot needs its own token id, e.g. '{name}-{at}'"
        )
    # Every `{at}` is 13 characters of digits and one T, so one example decides for all slots.
    example = token_id(pattern, name, "20261016T2048")
    if not TOKEN_ID.fullmatch(example):
        raise ScheduleProblem(
            f"'id' makes the token id {example!r}; a token id is a letter or digit, then up to "
            "127 letters, digits, '.', '_' or '-' ({name} and {at} are the only fields)"
        )
    return pattern


def check_spec(body: Mapping[str, Any], name: str | None = None) -> ScheduleSpec:
    """A schedule's body checked (`name` from the path, if any), or the problem naming the part."""
    unknown = [part for part in body if part not in PARTS]
    if unknown:
        raise ScheduleProblem(
            f"a schedule has no part {unknown[0]!r}; its parts are " + ", ".join(PARTS)
        )
    given = body.get("name", name)
    if name is not None and given != name:
        raise ScheduleProblem(f"'name' is {given!r}, but the path names the schedule {name!r}")
    checked = check_name(given)
    if "cron" not in body:
        raise ScheduleProblem("a schedule needs 'cron', a cron expression of 5 fields")
    context = body.get("context")
    if context is not None and not isinstance(context, dict):
        raise ScheduleProblem("'context' is a JSON object, or null")
    catch_up = body.get("catch_up", DEFAULT_CATCH_UP)
    if catch_up not in CATCH_UPS:
        raise ScheduleProblem("'catch_up' is one of " + ", ".join(CATCH_UPS))
    paused = body.get("paused", False)
    if not isinstance(paused, bool):
        raise ScheduleProblem("'paused' is true or false")
    return ScheduleSpec(
        name=checked,
        cron=check_cron(body["cron"]),
        tz=check_tz(body.get("tz", DEFAULT_TZ)),
        context=context,
        id=check_id(body.get("id", DEFAULT_ID), checked),
        catch_up=catch_up,
        paused=paused,
    )


# --- slots ----------------------------------------------------------------------------------


def wall_of(when: datetime, zone: tzinfo) -> datetime:
    """A naive UTC time as the zone's naive wall-clock time."""
    return when.replace(tzinfo=UTC).astimezone(zone).replace(tzinfo=None)


def wall_text(when: datetime, zone: tzinfo) -> str:
    """A slot's `{at}`: its wall-clock time in the zone, `YYYYMMDDTHHMM`."""
    return wall_of(when, zone).strftime("%Y%m%dT%H%M")


def utc_of(wall: datetime, zone: tzinfo) -> datetime | None:
    """A wall-clock time of the zone as naive UTC, its first occurrence when it happens twice;
    None when it does not exist (skipped by daylight-saving time)."""
    placed = wall.replace(tzinfo=zone, fold=0)
    when = placed.astimezone(UTC)
    if when.astimezone(zone).replace(tzinfo=None) != wall:
        return None
    return when.replace(tzinfo=None)


def _margin(when: datetime, zone: tzinfo) -> timedelta:
    """How far to look beyond `when` on the wall clock: nothing unless the zone's offset
    changes near it."""
    if zone is UTC:
        return timedelta(0)
    offsets = {
        (when + step).replace(tzinfo=UTC).astimezone(zone).utcoffset() for step in (-_SHIFT, _SHIFT)
    }
    return _SHIFT if len(offsets) > 1 else timedelta(0)


def _walls(cron: str, wall: datetime, reverse: bool = False) -> Iterator[datetime]:
    # Naive datetimes: cronsim counts wall-clock minutes with no daylight-saving fix-up of its
    # own (it would move a skipped time to the next real minute, where a skipped time is no slot).
    return iter(CronSim(cron, wall, reverse=reverse))


def slots_after(spec: ScheduleSpec, after: datetime) -> Iterator[datetime]:
    """The slots (naive UTC) strictly after `after` (naive UTC), in order."""
    zone = spec.zone
    # From a little before near a daylight-saving change, so that a repeated hour's first
    # occurrences are not missed when `after` is in its second one; the filter keeps only
    # what is after.
    for wall in _walls(spec.cron, wall_of(after, zone) - _margin(after, zone)):
        when = utc_of(wall, zone)
        if when is not None and when > after:
            yield when


def next_slot(spec: ScheduleSpec, after: datetime) -> datetime:
    """The first slot strictly after `after`."""
    return next(slots_after(spec, after))


def due_slots(spec: ScheduleSpec, since: datetime, now: datetime, most: int) -> list[datetime]:
    """The slots from `since` to `now` (both included), newest first, at most `most`."""
    zone = spec.zone
    found: list[datetime] = []
    # Back from a little after now, for the same reason as in `slots_after` (and a second
    # after, since cronsim answers times before the one it is given, and `now` may be a slot).
    later = _margin(now, zone) + timedelta(seconds=1)
    for wall in _walls(spec.cron, wall_of(now, zone) + later, reverse=True):
        when = utc_of(wall, zone)
        if when is None or when > now:
            continue
        if when < since or len(found) >= most:
            break
        if not found or when < found[-1]:
            found.append(when)
    return found


@dataclass(frozen=True)
class Plan:
    """What one step of the clock does with a due schedule: start the tokens of `slots`
    (oldest first; none: a skip) and move `next_at` on, in one transaction."""

    slots: tuple[datetime, ...]
    next_at: datetime


def plan(spec: ScheduleSpec, next_at: datetime, now: datetime) -> Plan | None:
    """The step for a schedule whose next slot is `next_at`, by its `catch_up`; None when no
    slot is due. `all` starts at most `SLOTS_A_STEP` slots a step, oldest first (of the newest
    1,000 due)."""
    if next_at > now:
        return None
    if spec.catch_up == "all":
        return _plan_all(spec, next_at, now)
    due = due_slots(spec, next_at, now, 1)
    after = next_slot(spec, now)
    if not due or (spec.catch_up == "none" and now - due[0] > ON_TIME):
        return Plan((), after)
    return Plan((due[0],), after)


def _plan_all(spec: ScheduleSpec, next_at: datetime, now: datetime) -> Plan:
    """`all`'s step: the due slots from the first, unless more than 1,000 are due (then from
    the oldest of the newest 1,000), at most `SLOTS_A_STEP` of them."""
    first = next_slot(spec, next_at - timedelta(microseconds=1))
    if first > now:
        return Plan((), first)
    # Slots are a minute apart at least, so fewer than 1,000 minutes hold fewer than 1,000
    # slots: the common step needs no count of the backlog (a count each step would make a
    # long catch-up quadratic).
    if now - first >= timedelta(minutes=MOST_CAUGHT_UP):
        first = due_slots(spec, first, now, MOST_CAUGHT_UP)[-1]
    slots = [first]
    for when in slots_after(spec, first):
        if when > now or len(slots) == SLOTS_A_STEP:
            return Plan(tuple(slots), when)
        slots.append(when)
    raise AssertionError("a cron expression names times without end")  # pragma: no cover


def _instant(text: Any) -> datetime | None:
    """An answered time (ISO 8601 with `Z`) as naive UTC; None when absent or unreadable."""
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


def error_fixed(schedule: Mapping[str, Any]) -> bool:
    """Whether a schedule's last error (as answered) was fixed: a later slot's token started.

    The error stays on record after that, with its time; a display says it is fixed."""
    failed = _instant(schedule.get("last_error_at"))
    started = _instant(schedule.get("last_at"))
    return failed is not None and started is not None and started > failed


def upcoming(spec: ScheduleSpec, after: datetime, count: int) -> list[datetime]:
    """The next `count` slots after `after` (naive UTC)."""
    found: list[datetime] = []
    for when in slots_after(spec, after):
        found.append(when)
        if len(found) == count:
            break
    return found
