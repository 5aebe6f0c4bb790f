# flow.py
from stateous import END, START, Workflow

from schemas import Review, Ticket, Verdict

security = Workflow("security-review", context=Review)
triage = security.state("triage", timeout="1h", retries=1)
approved = security.state("approved")
ok = security.event("ok", payload=Verdict)
fin = security.event("fin")
security.transition(START, triage)
security.transition(triage, approved, on=ok, when="payload.ok == true")
security.transition(triage, END, on=ok, otherwise=True)
security.transition(approved, END, on=fin)

design = Workflow("design-review", context=Review)
look = design.state("look")
seen = design.event("seen")
design.transition(START, look)
design.transition(look, END, on=seen)

flow = Workflow("dev", context=Ticket)
coding = flow.state("coding")
reviews = flow.state(
    "reviews", parallel=[security, design], join="all", inputs=["repo", "branch"], timeout="2d"
)
merging = flow.state("merging")
done = flow.event("done")
merged = flow.event("merged")
flow.transition(START, coding)
flow.transition(coding, reviews, on=done)
flow.transition(
    reviews, merging, on="joined", when="branches.all(status == 'completed' and final == 'approved')"
)
flow.transition(reviews, coding, on="joined", otherwise=True)
flow.transition(reviews, END, on="timeout")
flow.transition(merging, END, on=merged)
