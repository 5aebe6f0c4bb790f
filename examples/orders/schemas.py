# orders/schemas.py: the models. The context is the data of a token.
# A payload is the data of an event.
from __future__ import annotations

from pydantic import BaseModel


class Item(BaseModel):
    """The context of each token of `orders`."""

    title: str
    verdict: Verdict | None = None


class Verdict(BaseModel):
    """The payload of the event `reviewed`."""

    approved: bool
    note: str = ""
