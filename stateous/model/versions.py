"""Versions as people read them: a checksum's first hex digits, and a
migration dry run's refusals as one line. The CLI, the console, the control plane's sentences
and the supervisor's log line all name versions this way."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PREFIX = "sha256:"


def digits(checksum: object, count: int) -> str:
    """The first `count` hex digits of a `sha256:…` checksum or structure (`?` if not text)."""
    return checksum.removeprefix(PREFIX)[:count] if isinstance(checksum, str) else "?"


def short(checksum: object) -> str:
    """A version as people read it: the first 8 hex digits (`99ab12cd`)."""
    return digits(checksum, 8)


def refused_counts(preview: Mapping[str, Any]) -> dict[str, int]:
    """A dry run's refusals by code (a bulk `migrate`'s; none for other actions)."""
    refused = preview.get("refused")
    return {str(code): int(n) for code, n in refused.items()} if isinstance(refused, dict) else {}


def refused_line(
    refused: Mapping[str, int],
    examples: object,
    reasons: object = None,
    hints: Mapping[str, str] | None = None,
) -> str:
    """`refused: 3 unknown_state (FAIL-1, FAIL-2, FAIL-3), 1 invalid_context (ORD-9)`: each code
    with its count and the first ids the dry run gave (`...` when there are more), the most
    refused first, or `refused: none`. The job skips these tokens.

    A code with a reason (the dry run's `reasons`) says it after the code, and one with a hint
    (what the caller can do, such as `add it with --context`) after the ids:
    `3 invalid_context: 'priority' is required (ORD-4, ...); add it with --context`."""
    shown = examples if isinstance(examples, dict) else {}
    why = reasons if isinstance(reasons, dict) else {}
    parts = []
    # The most refused first, then by code: the same line for the same refusals, in any order.
    for code, count in sorted(refused.items(), key=lambda item: (-item[1], item[0])):
        ids = [str(token) for token in shown.get(code, [])]
        more = [] if len(ids) >= count else ["..."]
        named = f" ({', '.join([*ids, *more])})" if ids else ""
        reason = f": {why[code]}" if isinstance(why.get(code), str) else ""
        hint = (hints or {}).get(code)
        parts.append(f"{count:,} {code}{reason}{named}" + (f"; {hint}" if hint else ""))
    return "refused: " + (", ".join(parts) if parts else "none")


def context_hint(reason: object, flag: str) -> str:
    """What to do about an `invalid_context` reason with `flag` (`--context`): `add it` for a
    field that is required, else `set it`."""
    verb = "add" if isinstance(reason, str) and reason.endswith(" is required") else "set"
    return f"{verb} it with {flag}"


def version_note(token: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> str:
    """` (version 99ab12cd; new tokens start on 77ef12ab)` for a token that is not on the
    current version's structure, else empty (also for a token or an answer without structures).

    A token's version is the newest checksum of its structure (as `migrated`'s `from` says)."""
    structure = token.get("structure")
    current = next((row for row in rows if row.get("current") is True), None)
    if not isinstance(structure, str) or current is None or current["structure"] == structure:
        return ""
    mine = next((row["checksum"] for row in rows if row.get("structure") == structure), None)
    if mine is None:
        return ""
    return f" (version {short(mine)}; new tokens start on {short(current['checksum'])})"
