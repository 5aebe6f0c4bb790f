"""Stateous: a process as a graph of states, kept durable by a control plane.

The public names are loaded lazily, so that importing one side (the control
plane, a supervisor, the client) does not import the others.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.3.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "Workflow": "stateous.model.authoring",
    "START": "stateous.model.authoring",
    "END": "stateous.model.authoring",
    "on_state": "stateous.supervisor.routine",
    "Context": "stateous.supervisor.routine",
    "Occurrence": "stateous.supervisor.routine",
    "StateRef": "stateous.supervisor.routine",
    "OutcomeError": "stateous.supervisor.routine",
    "Client": "stateous.client",
}

__all__ = [
    "END",
    "START",
    "Client",
    "Context",
    "Occurrence",
    "OutcomeError",
    "StateRef",
    "Workflow",
    "__version__",
    "on_state",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'stateous' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
