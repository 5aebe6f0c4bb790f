"""The lines of `stateous token why` and of the console's findings.

Pure, like `stateous.model.history`: the answer of `GET /tokens/{id}/why` in, `Line`s out. One
line per finding: `  <code>: <sentence> (since HH:MM:SS)`, the time in this computer's zone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import tzinfo
from typing import Any

from stateous.model.history import STYLE_BAD, STYLE_GOOD, STYLE_QUIET, Line, local_time

# The colour of each code: what needs a person in the error colour, a healthy token in green.
_CODE_STYLES = {
    "ended": "bold",
    "paused": "dark_orange",
    "no_supervisor": STYLE_BAD,
    "queued_behind": STYLE_GOOD,
    "claimed": STYLE_GOOD,
    "supervisor_gone": STYLE_BAD,
    "retrying": "yellow",
    "waiting_outside": "yellow",
    "timer": "",
    "children": "",
    "last_event_refused": STYLE_BAD,
}


def finding_line(finding: Mapping[str, Any], tz: tzinfo | None = None) -> Line:
    """`  <code>: <sentence>`, then ` (since HH:MM:SS)` when the finding has a time."""
    code = str(finding.get("code", "?"))
    segments: list[tuple[str, str]] = [
        ("  ", ""),
        (code, _CODE_STYLES.get(code, "")),
        (": ", ""),
        (str(finding.get("sentence", "")), ""),
    ]
    since = finding.get("since")
    if since is not None:
        segments.append((f" (since {local_time(since, tz)})", STYLE_QUIET))
    return Line(tuple(segments))


def finding_lines(findings: Sequence[Mapping[str, Any]], tz: tzinfo | None = None) -> list[Line]:
    """One line per finding, in the order the control plane gave (most important first)."""
    return [finding_line(finding, tz) for finding in findings]
