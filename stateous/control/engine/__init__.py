"""The engine: one module per internal workflow of spec 30."""
