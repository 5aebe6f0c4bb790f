"""The operator console, `stateous console`: speaks HTTP, reads outboxes read-only."""
