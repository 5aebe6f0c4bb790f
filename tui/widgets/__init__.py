"""The console's widgets, each with its own DEFAULT_CSS."""

from __future__ import annotations

from tui.widgets.banner import Banner
from tui.widgets.states import StatesPanel
from tui.widgets.status_bar import StatusBar

__all__ = ["Banner", "StatesPanel", "StatusBar"]
