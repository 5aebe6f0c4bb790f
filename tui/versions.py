"""The versions of the workflow as the console shows them: pure text from
`GET /workflow/versions` (also `/stats`' `versions`) and a bulk `migrate`'s dry run.

The names and the refusals line are the CLI's too (`stateous.model.versions`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from stateous.model.versions import short

Versions = Sequence[Mapping[str, Any]]
"""The rows of `GET /workflow/versions`, newest first."""


def versions_of(stats: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """`/stats`' `versions` (none from a control plane that serves no versions side by side)."""
    found = (stats or {}).get("versions")
    return [row for row in found if isinstance(row, Mapping)] if isinstance(found, list) else []


def live_versions(versions: Versions) -> int:
    """How many versions have live tokens."""
    return sum(1 for row in versions if _live(row) > 0)


def version_names(versions: Versions) -> dict[str, str]:
    """Each structure's name, the 8 hex digits of its newest checksum (the first in the list)."""
    names: dict[str, str] = {}
    for row in versions:
        structure = row.get("structure")
        if isinstance(structure, str) and structure not in names:
            names[structure] = short(row.get("checksum"))
    return names


def token_version(token: Mapping[str, Any], names: Mapping[str, str]) -> str:
    """The version a token runs on: its structure's name, else the structure's 8 hex digits;
    empty for a token without a structure."""
    structure = token.get("structure")
    if not isinstance(structure, str):
        return ""
    return names.get(structure) or short(structure)


def current_version(versions: Versions) -> Mapping[str, Any] | None:
    """The version new tokens start on, None when no row says so."""
    return next((row for row in versions if row.get("current") is True), None)


def checksum_of(structure: str, versions: Versions) -> str | None:
    """The checksum a token of `structure` runs on: the newest version of that structure (the
    first in the list, as a migration's `from` names it); None when none is on record."""
    return next(
        (str(row["checksum"]) for row in versions
         if row.get("structure") == structure and isinstance(row.get("checksum"), str)),
        None,
    )  # fmt: skip


def older_states(
    current: Mapping[str, Any] | None, graphs: Mapping[str, Mapping[str, Any]], versions: Versions
) -> dict[str, str]:
    """The states that only older versions with live tokens have, each with the 8 hex digits of
    the newest such version that has it: `{"review": "99ab12cd"}`. A child workflow's state is
    `<workflow>/<state>`, as `/stats` names it. `graphs` are the graph documents by checksum."""
    known = set(graph_state_names(current))
    found: dict[str, str] = {}
    for row in versions:
        graph = graphs.get(str(row.get("checksum")))
        if row.get("current") is True or _live(row) == 0 or graph is None:
            continue
        for name in graph_state_names(graph):
            if name not in known and name not in found:
                found[name] = short(row.get("checksum"))
    return found


def graph_state_names(graph: Mapping[str, Any] | None) -> list[str]:
    """The states of a graph document in order: the main workflow's, then `<workflow>/<state>`."""
    if not graph:
        return []
    names = [str(s) for s in graph.get("states") or {}]
    for workflow, body in (graph.get("workflows") or {}).items():
        if isinstance(body, Mapping):
            names.extend(f"{workflow}/{s}" for s in body.get("states") or {})
    return names


HINTS = {
    "same_version": "it runs on {to} already",
    "token_not_active": "only an active, paused or failed token migrates",
    "token_in_parallel": "it is in a parallel state; migrate it after the join",
    "unknown_state": "version {to} has no state '{state}'; map it with the CLI: "
    "stateous token migrate {token} --map {state}=<state>",
    "invalid_context": "its context does not fit version {to}; give the values with the CLI: "
    "stateous token migrate {token} --context JSON",
}
"""Why one token cannot migrate, by the dry run's code, and what to do about it."""


def one_refusal(token: Mapping[str, Any], code: str, to: str) -> str:
    """`unknown_state: version 77ef12ab has no state 'review'; map it with the CLI: …`."""
    hint = HINTS.get(code, "the control plane refuses it")
    return f"{code}: " + hint.format(to=to, state=token.get("state"), token=token.get("token"))


def _live(row: Mapping[str, Any]) -> int:
    live = row.get("live")
    return live if isinstance(live, int) else 0
