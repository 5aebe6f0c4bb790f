"""The engine: one module per internal workflow (start, fire, claim, report, ...)."""
