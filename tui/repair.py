"""The console's requests of spec 80 §3-4: retry, move and why, over the console's `ControlPlane`.

The console always says who acts (spec 80 §1): `by` with `via: "console"` and the actor from
`$STATEOUS_ACTOR`, else the login name and host.
"""

from __future__ import annotations

from typing import Any

from stateous.tui.api import ControlPlane, console_by, segment


async def retry(plane: ControlPlane, token: str) -> dict[str, Any]:
    """`POST /tokens/{id}/retry`; the token after it."""
    path = f"/tokens/{segment(token)}/retry"
    return dict((await plane.request("POST", path, body={"by": console_by()}))[1])


async def move(plane: ControlPlane, token: str, state: str) -> dict[str, Any]:
    """`POST /tokens/{id}/move` to `state`; the token after it."""
    path = f"/tokens/{segment(token)}/move"
    body = {"to": state, "by": console_by()}
    return dict((await plane.request("POST", path, body=body))[1])


async def why(plane: ControlPlane, token: str) -> list[dict[str, Any]]:
    """`GET /tokens/{id}/why`: the findings, most important first."""
    answer = await plane.get(f"/tokens/{segment(token)}/why")
    findings = answer.get("findings") if isinstance(answer, dict) else None
    return [f for f in findings if isinstance(f, dict)] if isinstance(findings, list) else []
