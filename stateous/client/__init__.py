"""The Python client of the control plane (HTTP only)."""
