"""The import rules of CONTRIBUTING.md, read from the source of every module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# (importing package, forbidden package prefixes)
RULES: list[tuple[str, tuple[str, ...]]] = [
    ("stateous.control", ("stateous.supervisor",)),
    ("stateous.supervisor", ("stateous.control",)),
    (
        "stateous.model",
        (
            "stateous.compiler",
            "stateous.control",
            "stateous.supervisor",
            "stateous.client",
            "stateous.cli",
            "stateous.tui",
            "litestar",
            "sqlalchemy",
            "httpx",
            "textual",
        ),
    ),
    (
        "stateous.compiler",
        (
            "stateous.control",
            "stateous.supervisor",
            "stateous.client",
            "stateous.cli",
            "stateous.tui",
        ),
    ),
    (
        "stateous.client",
        ("stateous.control", "stateous.supervisor", "stateous.compiler", "stateous.tui"),
    ),
    (
        "stateous.tui",
        ("stateous.control", "stateous.supervisor", "stateous.compiler", "stateous.cli"),
    ),
]

# `from stateous import X` resolves lazily to these modules (stateous/__init__.py).
LAZY_EXPORTS = {
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


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    """Every module that `path` imports, with `from stateous import X` resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            if node.module == "stateous":
                found.update(LAZY_EXPORTS[a.name] for a in node.names if a.name in LAZY_EXPORTS)
            else:
                found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


def forbidden_edges(package: str, forbidden: tuple[str, ...]) -> list[str]:
    base = ROOT.joinpath(*package.split("."))
    files = sorted(base.rglob("*.py")) if base.is_dir() else []
    edges = []
    for path in files:
        for imported in sorted(imports_of(path)):
            if any(imported == f or imported.startswith(f + ".") for f in forbidden):
                edges.append(f"{module_name(path)} imports {imported}")
    return edges


@pytest.mark.parametrize(("package", "forbidden"), RULES, ids=[r[0] for r in RULES])
def test_no_forbidden_import(package: str, forbidden: tuple[str, ...]) -> None:
    assert forbidden_edges(package, forbidden) == []


def test_the_rule_catches_a_forbidden_edge(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from stateous.control.store import tables\nimport httpx\n", encoding="utf-8")
    assert imports_of(bad) >= {"stateous.control.store", "stateous.control.store.tables", "httpx"}
    resolved = imports_of(_write(tmp_path / "lazy.py", "from stateous import Context\n"))
    assert "stateous.supervisor.routine" in resolved


def test_lazy_exports_match_the_package() -> None:
    import stateous

    assert LAZY_EXPORTS == stateous._EXPORTS


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path
