"""docs/reference/console.md's key table lists every key the console's footer and `?` show.

What the test takes: the bindings with a description of the app and of each full screen
(`tui/screens/`, not the modal dialogs, whose keys their own dialog shows), which is what
the `?` help lists (the footer shows a subset of them). A key counts as listed when it appears
in backquotes in the table of the `## Keys` section, as the footer draws it (`?`, `*`, `/`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.binding import Binding
from textual.screen import ModalScreen, Screen

from stateous.tui.app import ConsoleApp
from stateous.tui.screens.bulk import BulkScreen
from stateous.tui.screens.inbox import InboxScreen
from stateous.tui.screens.leases import LeasesScreen
from stateous.tui.screens.outboxes import OutboxesScreen
from stateous.tui.screens.schedules import SchedulesScreen
from stateous.tui.screens.token import TokenScreen
from stateous.tui.screens.tokens import TokensScreen
from stateous.tui.screens.versions import VersionsScreen

DOC = Path(__file__).resolve().parents[3] / "docs" / "reference" / "console.md"
SCREENS: list[type[object]] = [
    ConsoleApp,
    TokensScreen,
    TokenScreen,
    LeasesScreen,
    OutboxesScreen,
    InboxScreen,
    BulkScreen,
    VersionsScreen,
    SchedulesScreen,
]


def key_table() -> str:
    """The `## Keys` section of the page, up to the next section."""
    text = DOC.read_text()
    return text.split("\n## Keys\n", 1)[1].split("\n## ", 1)[0]


def shown_keys(owner: type[object]) -> list[str]:
    """The keys `?` lists for `owner`, as drawn: its key_display, else its first key."""
    # Textual's own bindings (tab, ctrl+c on every Screen) are not the console's to document.
    ours = [
        vars(cls).get("BINDINGS", [])
        for cls in owner.__mro__
        if cls.__module__.startswith("stateous.")
    ]
    return [
        binding.key_display or binding.key.split(",")[0]
        for bindings in ours
        for binding in bindings
        if isinstance(binding, Binding) and binding.description
    ]


KEYS = sorted({(owner.__name__, key) for owner in SCREENS for key in shown_keys(owner)})


def test_every_full_screen_is_walked() -> None:
    # A new screen of tui/screens/ must be added to SCREENS, or this fails.
    import stateous.tui.screens as package

    found = set()
    for module in Path(package.__file__).parent.glob("*.py"):
        name = f"stateous.tui.screens.{module.stem}"
        found |= {
            value
            for value in vars(__import__(name, fromlist=["_"])).values()
            if isinstance(value, type)
            and issubclass(value, Screen)
            and not issubclass(value, ModalScreen)
            and value.__module__ == name
            and "BINDINGS" in vars(value)
        }
    assert found <= set(SCREENS), found - set(SCREENS)
    assert ("ConsoleApp", "b") in KEYS


@pytest.mark.parametrize(("screen", "key"), KEYS)
def test_each_key_is_in_the_table(screen: str, key: str) -> None:
    assert f"`{key}`" in key_table(), (screen, key)
