"""Sending outbox messages in a test: the sender's round, then their removal from the outbox,
which follows the answers without holding up the sender (`Sender._leave`)."""

from __future__ import annotations

from stateous.supervisor.outbox import Message
from stateous.supervisor.sender import Sender


async def send_settled(sender: Sender, messages: list[Message]) -> set[int]:
    """`sender.send(messages)`, then wait until the answered ones have left the outbox."""
    stuck = await sender.send(messages)
    await sender.removed()
    return stuck
