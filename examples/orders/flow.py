# orders/flow.py: the workflow. `stateous compile orders/flow.py` checks it and writes
# the graph file, orders/build/orders.json.
from stateous import END, START, Workflow

from schemas import Item, Verdict

# The workflow and its name. Each token has a context: an Item (see schemas.py).
flow = Workflow("orders", context=Item)

# The states. A token is in one state at a time. A routine does the work of a state.
# `timeout=` and `retries=` are optional. See the guide,
# docs/writing-a-workflow.md in the Stateous repository.
draft = flow.state("draft")
review = flow.state("review")

# The events: the outcomes that move a token. A payload is optional.
submitted = flow.event("submitted")  # no payload
# The payload is a Verdict; `into=` also saves it in the context, as `verdict`.
reviewed = flow.event("reviewed", payload=Verdict, into="verdict")

# The transitions: where each event takes a token. START and END begin and end each token.
flow.transition(START, draft)  # a new token goes to `draft` at once
flow.transition(draft, review, on=submitted)
# A guard (`when=`) is optional. Here, the payload of `reviewed` chooses the target.
flow.transition(review, END, on=reviewed, when="payload.approved == true")
# `otherwise=True` marks the transition to use when no guard matches.
flow.transition(review, draft, on=reviewed, otherwise=True)
