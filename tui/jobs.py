"""A bulk job's progress as the console shows it: pure text from `GET /bulk/{job}`."""

from __future__ import annotations

from typing import Any


def handled(job: dict[str, Any]) -> int:
    """Tokens acted on or skipped so far."""
    skipped = job.get("skipped")
    counts = skipped.values() if isinstance(skipped, dict) else ()
    return int(job.get("done") or 0) + sum(int(n) for n in counts)


def progress_text(job: dict[str, Any]) -> str:
    """`120/1,204` of a job."""
    return f"{handled(job):,}/{int(job.get('matched') or 0):,}"


def job_status_line(job: dict[str, Any]) -> str:
    """The status bar's part: `bulk 7 cancel 120/1,204` (and how it ended)."""
    action = str(job.get("action"))
    tail = "" if job.get("status") == "running" else f" {job.get('status')}"
    return f"bulk {job.get('job')} {action} {progress_text(job)}{tail}"
