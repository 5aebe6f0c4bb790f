"""The control plane's figures for `GET /metrics`, on a registry of its own.

Counters and the latency histogram are kept as requests and clock work happen; the figures
about rows (tokens and tasks by status, the queue) are read from the database when scraped,
in one short read transaction, so they are right after a restart too.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from stateous.control.store.figures import Figures

__all__ = ["CONTENT_TYPE", "Metrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""The media type of the Prometheus text exposition format."""

# Request latencies of a workflow engine's API: from a fraction of a millisecond (a claim that
# finds nothing) to the 60 seconds of the longest long-poll claim.
LATENCY_BUCKETS = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
)  # fmt: skip


class _RowFigures(Collector):
    """Reads the figures about rows at scrape time (through `read`, one transaction)."""

    def __init__(self, read: Callable[[], Figures | None], now: Callable[[], datetime]) -> None:
        self._read = read
        self._now = now

    def describe(self) -> list[Metric]:
        # No figures at registration: the database is read only when scraped.
        return []

    def collect(self) -> Iterator[Metric]:
        figures = self._read()
        if figures is None:
            return
        tokens = GaugeMetricFamily("stateous_tokens", "Tokens by status.", labels=["status"])
        for status, count in figures.tokens.items():
            tokens.add_metric([status], count)
        yield tokens
        tasks = GaugeMetricFamily("stateous_tasks", "Tasks by status.", labels=["status"])
        for status, count in figures.tasks.items():
            tasks.add_metric([status], count)
        yield tasks
        queued = GaugeMetricFamily(
            "stateous_queued_tasks", "Queued tasks per state.", labels=["state"]
        )
        for state, count in sorted(figures.queued.items()):
            queued.add_metric([state], count)
        yield queued
        age = 0.0
        if figures.oldest_queued_at is not None:
            age = max(0.0, (self._now() - figures.oldest_queued_at).total_seconds())
        yield GaugeMetricFamily(
            "stateous_oldest_queued_age_seconds",
            "Age of the oldest queued task (0 when none is queued).",
            value=age,
        )
        supervisors = GaugeMetricFamily(
            "stateous_supervisors", "Supervisors by status.", labels=["status"]
        )
        for status, count in figures.supervisors.items():
            supervisors.add_metric([status], count)
        yield supervisors
        live = GaugeMetricFamily(
            "stateous_tokens_live",
            "Active and paused top tokens by structure.",
            labels=["structure"],
        )
        for structure, count in sorted(figures.live.items()):
            live.add_metric([structure[: len("sha256:") + 12]], count)
        yield live
        failures = CounterMetricFamily(
            "stateous_schedule_failures",
            "Slots of each schedule whose token did not start, since the schedule was made.",
            labels=["schedule"],
        )
        for name, count in figures.schedule_failures.items():
            failures.add_metric([name], count)
        yield failures


@dataclass
class Metrics:
    """The figures of one control plane, on its own registry (never the global one)."""

    registry: CollectorRegistry = field(
        default_factory=lambda: CollectorRegistry(auto_describe=False)
    )

    def __post_init__(self) -> None:
        r = self.registry
        self.claims = Counter(
            "stateous_claims", "Claims answered, by result.", ["result"], registry=r
        )
        self.reports = Counter("stateous_reports", "Reports accepted.", registry=r)
        self.refusals = Counter(
            "stateous_refusals", "Requests refused, by refusal code.", ["code"], registry=r
        )
        self._timed: dict[tuple[str, str], Histogram] = {}
        self.latency = Histogram(
            "stateous_request_duration_seconds",
            "Time to answer a request, by route.",
            ["method", "route"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.lease_expiries = Counter(
            "stateous_lease_expiries", "Leases the clock ended.", registry=r
        )
        self.timers_fired = Counter("stateous_timers_fired", "Timers the clock fired.", registry=r)
        self.last_tick = Gauge(
            "stateous_clock_last_tick_timestamp_seconds",
            "When the clock last ticked (Unix time; 0 before the first tick).",
            registry=r,
        )
        self.waiting_claims = Gauge(
            "stateous_waiting_claims", "Long-poll claims waiting now.", registry=r
        )
        self._rows: _RowFigures | None = None

    def read_rows_with(
        self, read: Callable[[], Figures | None], now: Callable[[], datetime]
    ) -> None:
        """Register the scrape-time reader of the row figures (once per control plane)."""
        if self._rows is None:
            self._rows = _RowFigures(read, now)
            self.registry.register(self._rows)

    def after_commit(self, call: str, result: Any) -> None:
        """Count the clock's work: `lease expiry` and `timer` calls that did something."""
        if call == "clock":
            self.last_tick.set(time.time())
        elif call == "lease expiry" and result:
            self.lease_expiries.inc()
        elif call == "timer" and result:
            self.timers_fired.inc()

    def observe(
        self, method: str, route: str, status: int, code: str | None, seconds: float
    ) -> None:
        """Count one answered request."""
        timed = self._timed.get((method, route))
        if timed is None:  # `labels` checks and locks on each call: its child is kept instead
            timed = self._timed[(method, route)] = self.latency.labels(method, route)
        timed.observe(seconds)
        if code is not None:
            self.refusals.labels(code).inc()
        if route == "/tasks/claim":
            if status == 200:
                self.claims.labels("granted").inc()
            elif status == 204:
                self.claims.labels("empty").inc()
        elif route == "/tasks/{task}/report" and status == 200:
            self.reports.inc()

    def exposition(self) -> bytes:
        """The registry in the Prometheus text format."""
        return generate_latest(self.registry)
