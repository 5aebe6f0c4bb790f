"""The supervisor: the folder and its registry, the outbox, the remote, the run loop."""
