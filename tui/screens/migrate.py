"""`M`: move a token, or every token of a `*` selection, to the current version,
after a confirmation that shows what a dry run found refused.

One token's check is a bulk dry run of the one id (`{"tokens": [id]}`): the control plane runs
every check of the migration on it and writes nothing. A token it refuses is not asked about:
the refusal shows in the error line, with what to do (a state the new version lacks needs the
CLI's `--map`; the console migrates to the current version as the states are named). A token it
takes is asked about (`refused: none`), then migrated by `POST /tokens/{id}/migrate`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from textual import work

from stateous.model.history import display_state, token_line
from stateous.model.versions import refused_counts, refused_line, short
from stateous.tui.screens.confirm import ConfirmScreen
from stateous.tui.screens.steering import SteeringScreen
from stateous.tui.versions import (
    current_version,
    one_refusal,
    token_version,
    version_names,
)

WRAPS = "wraps"
"""The class of a confirmation whose question wraps its long lines (app.tcss)."""


def migrate_question(token: Mapping[str, Any], versions: list[Any], to: str) -> str:
    """`Migrate token 'O-1' (in review, version 99ab12cd) to 77ef12ab, the current version?`
    and what happens to it."""
    ident, state = token.get("token"), display_state(token.get("state"))
    mine = token_version(token, version_names(versions)) or "?"
    then = (
        "It stays failed in that state; R then retries it on the new version."
        if token.get("status") == "failed"
        else f"It enters '{state}' again on the new version, as a new visit."
    )
    return (
        f"Migrate token '{ident}' (in {state}, version {mine}) to {to}, the current version?\n"
        f"{then}\nrefused: none"
    )


class MigratingScreen(SteeringScreen):
    """A steering screen with `M`: migrate the selected token to the current version."""

    def action_migrate(self) -> None:
        """Check, ask, then migrate the selected token to the current version."""
        token = self._steerable()
        if token is not None:
            self.confirm_migrate(token)

    async def current_target(self) -> tuple[list[Any], str] | None:
        """The versions on record and the current one's checksum (None: not known, notified)."""
        versions = await self.console.call(self.console.plane.versions())
        if versions is None:
            return None
        current = current_version([v for v in versions if isinstance(v, dict)])
        if current is None:
            self.notify("the control plane names no current version", severity="warning")
            return None
        return versions, str(current["checksum"])

    @work(exclusive=True, group="steer")
    async def confirm_migrate(self, token: dict[str, Any]) -> None:
        """The dry run of this token; a refusal in the error line, else ask, then migrate."""
        plane, ident = self.console.plane, str(token["token"])
        target = await self.current_target()
        if target is None:
            return
        versions, to = target
        check = plane.bulk("migrate", {"tokens": [ident]}, dry_run=True, to=to)
        preview = await self.console.call(check)
        if preview is None:
            return
        refused = refused_counts(preview)
        if refused or not preview.get("matched"):
            code = next(iter(refused), "token_not_found")
            self.notify(one_refusal(token, code, short(to)), title="refused", severity="error")
            return
        confirm = ConfirmScreen(migrate_question(token, versions, short(to)), "Migrate it",
                                reason=True)  # fmt: skip
        confirm.add_class(WRAPS)
        if not await self.app.push_screen_wait(confirm):
            return
        answer = await self.console.call(
            plane.migrate(ident, to=to, reason=confirm.reason_text or None)
        )
        self._answered(answer, "migrate")

    def _answered(self, answer: dict[str, Any] | None, title: str) -> None:
        if answer is not None:
            self.show_token(answer)
            self.notify(str(token_line(answer)), title=title)
        self.refresh_now()


def selection_refusals(preview: Mapping[str, Any]) -> tuple[int, str]:
    """A selection's dry run as (tokens the job would migrate, the `refused: …` line)."""
    refused = refused_counts(preview)
    matched = int(preview.get("matched") or 0)
    line = refused_line(refused, preview.get("examples"), preview.get("reasons"))
    return matched - sum(refused.values()), line
