# orders-supervisor/draft.py
from stateous import on_state

from contract import ItemContext, events, states


@on_state(states.draft)
def draft(ctx: ItemContext) -> events.submitted | None:
    if ctx.visit > 1:  # sent back by the review
        ctx.note("the review sent this order back: a person must change it")
        return None  # wait for a person
    return events.submitted()
