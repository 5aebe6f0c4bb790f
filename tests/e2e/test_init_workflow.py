"""`stateous init workflow` as a real process."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

from stateous import __version__
from stateous.model.mermaid import mermaid
from tests.unit.model import reference as ref

CHECKOUT = Path(__file__).resolve().parents[2]
EXAMPLES = CHECKOUT / "examples"


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "stateous", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_orders_starter(tmp_path: Path) -> None:
    result = run("init", "workflow", "orders", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "wrote    orders/flow.py\n"
        "wrote    orders/schemas.py\n"
        "wrote    orders/pyproject.toml\n"
        "wrote    orders/build/orders.json\n"
        "\n"
        "Next steps:\n"
        "  stateous serve orders/build/orders.json\n"
        "  stateous init supervisor orders/flow.py orders-supervisor\n"
    )
    folder = tmp_path / "orders"
    assert (folder / "flow.py").read_text() == (EXAMPLES / "orders" / "flow.py").read_text()
    assert (folder / "schemas.py").read_text() == (EXAMPLES / "orders" / "schemas.py").read_text()
    graph = (folder / "build" / "orders.json").read_text()
    assert graph == (EXAMPLES / "orders" / "build" / "orders.json").read_text()
    doc = json.loads(graph)
    assert doc["events"]["reviewed"] == {"payload": "Verdict", "into": "verdict"}
    assert doc["schemas"]["Item"]["description"] == "The context of each token of `orders`."
    assert mermaid(doc) == ref.MERMAID_ORDERS
    project = tomllib.loads((folder / "pyproject.toml").read_text())
    assert project["project"] == {
        "name": "orders",
        "version": "0.1.0",
        "requires-python": ">=3.12",
        "dependencies": [f"stateous>={__version__}"],
    }


def test_refusals(tmp_path: Path) -> None:
    result = run("init", "workflow", "Bad", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (
        1,
        "error: workflow name 'Bad' is not valid: use a-z, 0-9, '_' and '-', starting with a letter, at most 64 characters\n",
    )
    assert run("init", "workflow", "orders", cwd=tmp_path).returncode == 0
    result = run("init", "workflow", "orders", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (
        1,
        "error: orders already has flow.py: give a different name, or edit that file\n",
    )
    result = run("init", "workflow", "other", "--stateous-path", str(tmp_path), cwd=tmp_path)
    assert (result.returncode, result.stderr) == (
        1,
        f"error: --stateous-path {tmp_path} is not a Stateous checkout: give the folder that holds its pyproject.toml\n",
    )
    assert not (tmp_path / "other").exists()


def test_kept_files_and_checkout(tmp_path: Path) -> None:
    folder = tmp_path / "shop"
    folder.mkdir()
    (folder / "pyproject.toml").write_text("# mine\n")
    result = run("init", "workflow", "shop", "--stateous-path", str(CHECKOUT), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:4] == [
        "wrote    shop/flow.py",
        "wrote    shop/schemas.py",
        "kept     shop/pyproject.toml",
        "wrote    shop/build/shop.json",
    ]
    assert (folder / "pyproject.toml").read_text() == "# mine\n"
    assert json.loads((folder / "build" / "shop.json").read_text())["workflow"] == "shop"


def test_checkout_table(tmp_path: Path) -> None:
    result = run("init", "workflow", "w", "--stateous-path", str(CHECKOUT), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "w" / "pyproject.toml").read_text()
    assert text.endswith(
        "\n# A local checkout of Stateous: delete this table to use Stateous from PyPI.\n"
        "[tool.uv.sources]\n"
        f'stateous = {{ path = "{CHECKOUT.as_posix()}", editable = true }}\n'
    )


def test_a_broken_schemas_is_kept_and_reported(tmp_path: Path) -> None:
    folder = tmp_path / "x"
    folder.mkdir()
    (folder / "schemas.py").write_text("raise RuntimeError('boom')\n")
    result = run("init", "workflow", "x", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "wrote    x/flow.py",
        "kept     x/schemas.py",
        "wrote    x/pyproject.toml",
    ]
    assert (
        result.stderr
        == f"error: {folder.resolve() / 'flow.py'} does not import: RuntimeError: boom\n"
    )
    assert not (folder / "build").exists()
