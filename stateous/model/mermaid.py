"""The Mermaid state diagram of a graph document."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["mermaid"]

_BUILT_IN = ("timeout", "error", "joined")
_ENDPOINTS = ("__start__", "__end__")


def mermaid(graph_doc: Mapping[str, Any]) -> str:
    """The `stateDiagram-v2` text of `graph_doc`, ending with a newline."""
    lines = ["stateDiagram-v2", "    direction LR"]
    children = graph_doc.get("workflows") or {}
    _draw(graph_doc, children, "", 1, lines)
    return "\n".join(lines) + "\n"


def _id(name: str) -> str:
    return name.replace("-", "_")


def _decl(sid: str, label: str) -> str:
    return f"{sid} " if sid == label else f'"{label}" as {sid} '


def _draw(
    body: Mapping[str, Any], children: Mapping[str, Any], prefix: str, depth: int, lines: list[str]
) -> None:
    indent = "    " * depth
    for name, entry in (body.get("states") or {}).items():
        sid = prefix + _id(name)
        parallel = entry.get("parallel") if isinstance(entry, Mapping) else None
        if parallel:
            lines.append(f"{indent}state {_decl(sid, name)}{{")
            for i, child in enumerate(parallel):
                if i > 0:
                    lines.append(f"{indent}    --")
                region = f"{sid}__{_id(child)}"
                lines.append(f"{indent}    state {_decl(region, child)}{{")
                _draw(children.get(child) or {}, children, region + "__", depth + 2, lines)
                lines.append(f"{indent}    }}")
            lines.append(f"{indent}}}")
        elif sid != name:
            lines.append(f'{indent}state "{name}" as {sid}')
    for t in body.get("transitions") or []:
        source, target = _node(t.get("from"), prefix), _node(t.get("to"), prefix)
        label = _label(t)
        lines.append(f"{indent}{source} --> {target}" + (f": {label}" if label else ""))


def _node(name: Any, prefix: str) -> str:
    return "[*]" if name in _ENDPOINTS else prefix + _id(str(name))


def _label(t: Mapping[str, Any]) -> str:
    on = t.get("on")
    text = "" if on is None else (f"({on})" if on in _BUILT_IN else str(on))
    if "when" in t:
        text += f" [{t['when']}]"
    elif t.get("otherwise"):
        text += " [otherwise]"
    return text.strip()
