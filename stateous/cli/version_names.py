"""The versions as people read and name them: 8 or 12 hex digits of a checksum, a prefix
(`--to`, `--checksum`) resolved to its checksum, and a token's version on its line."""

from __future__ import annotations

from typing import Any

from stateous.client import Client
from stateous.client.wire import wrong_shape
from stateous.model.errors import StateousError
from stateous.model.versions import PREFIX, digits, version_note

__all__ = ["FIELDS", "VersionError", "resolve", "version_note", "version_rows"]

FIELDS = ("checksum", "structure", "current", "first_served_at", "live")
"""The fields of each row of `GET /workflow/versions`."""


class VersionError(StateousError):
    """A `--to` that names no version on record, or more than one."""

    code = "version_not_found"


def version_rows(client: Client) -> list[dict[str, Any]]:
    """`GET /workflow/versions`, newest first, each row checked for the fields it carries."""
    rows = client.versions()
    for row in rows:
        if not isinstance(row, dict) or any(name not in row for name in FIELDS):
            raise wrong_shape(client.url)
    return rows


def resolve(client: Client, given: str, *, unknown: str | None = None) -> str:
    """The checksum `given` names (`token migrate --to`, `init supervisor --checksum`): a full
    `sha256:` and 64 hex digits as it is (the control plane says whether it is on record), else
    the one version on record whose hex digits start with `given` (with or without `sha256:`);
    `VersionError` when none or several do. `unknown` is the sentence for a prefix that no
    version starts with (default: one that points at `stateous versions`)."""
    wanted = given.lower().removeprefix(PREFIX)
    if len(wanted) == 64:
        return PREFIX + wanted
    if not wanted:
        raise VersionError(f"{given!r} names no version: give hex digits of a checksum")
    found = [str(row["checksum"]) for row in version_rows(client)]
    matches = [checksum for checksum in found if digits(checksum, 64).startswith(wanted)]
    if not matches:
        raise VersionError(
            unknown
            or f"no version on record starts with {wanted}; see them with: stateous versions"
        )
    if len(matches) > 1:
        named = ", ".join(f"{PREFIX}{digits(m, 12)}…" for m in matches)
        raise VersionError(f"{wanted} names {len(matches)} versions ({named}); give more digits")
    return matches[0]
