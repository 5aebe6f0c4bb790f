"""The control plane: the HTTP API, the engine's internal workflows, the store and the clock."""
