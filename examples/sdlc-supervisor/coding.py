"""The routine of `coding`: a coding agent run with PHD (`pip install "stateous[phd]"`).

It resumes the agent's session on a retry (the session id is kept in `ctx.memory`), writes each
step of the agent as a note, and lets PHD hold the answer to the outcomes `coding` may have.
"""

from __future__ import annotations

import phd
from stateous import on_state

from contract import TicketContext, events, states


@on_state(states.coding)
async def coding(ctx: TicketContext) -> events.done | events.stuck:
    spec = phd.Spec(
        harness="claude",
        model="sonnet",
        stack=phd.Stack.load("stacks/dev"),
        cwd=ctx["repo"],
        credentials=phd.Credentials.from_host("claude"),
        output_schema=states.coding.outcome_schema(),
        idle_timeout_s=900,
    )
    message = f"Make the tests of {ctx['repo']} pass. Answer `done`, or `stuck` with no way on."
    async with phd.Dispatcher(spec).run(
        phd.Inputs(msg=message), session_id=ctx.memory.get("dev")
    ) as handle:
        async for event in handle.events():
            if handle.session_id is not None and ctx.memory.get("dev") != handle.session_id:
                ctx.memory["dev"] = handle.session_id  # resume here after a crash or a retry
            ctx.note(event.summary)
        result = await handle.wait()
    if result.status != "succeeded":
        if result.error is not None and result.error.kind == "session" and "dev" in ctx.memory:
            del ctx.memory["dev"]  # the session cannot be resumed: the retry starts fresh
        kind = result.error.kind if result.error is not None else "unknown"
        raise RuntimeError(f"the agent did not finish: {kind}")
    return states.coding.outcome(result.structured_output)
