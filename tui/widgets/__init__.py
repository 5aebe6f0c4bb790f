"""The console's widgets, each with its own DEFAULT_CSS."""

from __future__ import annotations

from stateous.tui.widgets.banner import Banner
from stateous.tui.widgets.states import StatesPanel
from stateous.tui.widgets.status_bar import StatusBar

__all__ = ["Banner", "StatesPanel", "StatusBar"]
