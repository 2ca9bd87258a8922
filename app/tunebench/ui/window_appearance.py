"""The window's presentation state: full screen, theme and font scale, set together so that the order they
change in never matters and leaving stage or dark leaves nothing behind. A part of MainWindow (ui/main_window.py)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QApplication

from tunebench.ui.theme import THEMES, Theme, apply_appearance


class WindowAppearance:
    """MainWindow's theme and font scale; uses its status line, dashboard and compare view."""

    theme: Theme
    font_scale: float
    status: Any
    dashboard: Any
    compare: Any

    def toggle_full_screen(self) -> None:
        if self.isFullScreen():
            self.showNormal()
        else:
            self.showFullScreen()

    def set_appearance(self, theme: Theme, scale: float) -> None:
        """The window's look from its two inputs, theme and font scale, whatever the order they change in:
        the application (font, then palette), the dashboard, the compare view."""
        self.theme, self.font_scale = theme, max(0.6, min(3.0, scale))
        app = QApplication.instance()
        if isinstance(app, QApplication):
            apply_appearance(app, theme, self.font_scale)
            # Qt passes the new font and palette on to widgets through posted events: deliver them now, so
            # every size computed from here on (leaving stage: the window's minimum size, from docks still
            # hidden) is of the new fonts, not of the ones before
            for kind in (QEvent.Type.ApplicationFontChange, QEvent.Type.FontChange,
                         QEvent.Type.ApplicationPaletteChange, QEvent.Type.PaletteChange):
                QApplication.sendPostedEvents(None, kind)
        self.status.fix_clock_width()
        self.dashboard.set_appearance(theme, self.font_scale)
        self.compare.apply_theme(theme)

    def set_theme(self, name: str) -> None:
        self.set_appearance(THEMES[name], self.font_scale)

    def toggle_theme(self) -> None:
        self.set_theme("dark" if self.theme.name == "light" else "light")

    def scale_fonts(self, factor: float) -> None:
        scale = self.font_scale * factor
        if abs(scale - round(scale)) < 1e-9:
            scale = round(scale)  # A+ then A- is 1.0 again, not 0.9999999
        self.set_appearance(self.theme, scale)
