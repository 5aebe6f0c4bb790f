"""The `stateous` command."""
