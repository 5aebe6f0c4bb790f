# GENERATED from the `orders` workflow — do not edit.
# sha256:5d372a02e9ff02387e83f50718b6df0a057eff8608391c28334e2a7c51e5ac3b
from __future__ import annotations

from pydantic import BaseModel

from stateous import Context, Occurrence, StateRef

__workflow__ = "orders"
__checksum__ = "sha256:5d372a02e9ff02387e83f50718b6df0a057eff8608391c28334e2a7c51e5ac3b"


class Verdict(BaseModel):
    approved: bool
    note: str = ""


class Item(BaseModel):
    title: str
    verdict: Verdict | None = None


ItemContext = Context[Item]


class events:
    class submitted(Occurrence[None]):
        name = "submitted"

    class reviewed(Occurrence[Verdict]):
        name = "reviewed"


class states:
    draft = StateRef("draft", emits=(events.submitted,))
    review = StateRef("review", emits=(events.reviewed,))
