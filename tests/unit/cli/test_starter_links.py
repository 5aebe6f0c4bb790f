"""The starter workflow's comments point to a page that exists, not to a website."""

from __future__ import annotations

import re
from pathlib import Path

from stateous.cli.init_workflow import flow_text

ROOT = Path(__file__).resolve().parents[3]


def test_the_starter_links_to_no_website() -> None:
    assert "http" not in flow_text("orders")


def test_the_guide_it_names_is_in_the_repository() -> None:
    pages = re.findall(r"docs/[\w-]+\.md", flow_text("orders"))
    assert pages == ["docs/writing-a-workflow.md"]
    assert (ROOT / pages[0]).is_file()


def test_the_example_is_the_starter() -> None:
    # examples/orders is what `stateous init workflow orders` writes: its comments too.
    assert (ROOT / "examples" / "orders" / "flow.py").read_text() == flow_text("orders")
