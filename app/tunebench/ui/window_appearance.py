"""The window's presentation state: full screen, theme and font scale, set together so that the order they
change in never matters and leaving stage or dark leaves nothing behind. A part of MainWindow (ui/main_window.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QApplication

from tunebench.ui.theme import THEMES, Theme, apply_appearance

if TYPE_CHECKING:
    # For the checker, the mixin is the widget it is mixed into (MainWindow puts QMainWindow before it, so the
    # MRO is the same); at run time it is a plain class and adds nothing to the Qt side.
    from PySide6.QtWidgets import QWidget as _WindowBase
else:
    _WindowBase = object


class WindowAppearance(_WindowBase):
    """MainWindow's theme and font scale; uses its status line, dashboard and compare view."""

    theme: Theme
    font_scale: float
    status: Any
    dashboard: Any
    compare: Any
    history: Any
    sweep_results: Any
    tune_results: Any

    def show_message(self, text: str) -> None: ...  # (MainWindow's)

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
        self.history.apply_theme(theme)
        self.sweep_results.knee.apply_theme(theme)
        self.tune_results.apply_theme(theme)

    def set_theme(self, name: str) -> None:
        self.set_appearance(THEMES[name], self.font_scale)

    def toggle_theme(self) -> None:
        self.set_theme("dark" if self.theme.name == "light" else "light")

    def scale_fonts(self, factor: float) -> None:
        """A+/A-: fonts, never the window. Qt grows a window to the minimum size of its bigger contents (1111 px on
        a 1080 screen); the window keeps its size, and a scale whose contents no longer fit the screen is not
        taken (one line says so)."""
        scale = self.font_scale * factor
        if abs(scale - round(scale)) < 1e-9:
            scale = round(scale)  # A+ then A- is 1.0 again, not 0.9999999
        old_scale, old_size = self.font_scale, self.size()
        self.set_appearance(self.theme, scale)
        if self.isFullScreen() or self.isMaximized():
            return
        screen = (self.screen() or QApplication.primaryScreen()).availableGeometry()
        need = self.minimumSizeHint()
        # refused where the window would have to grow past the screen (its contents' new minimum beyond both)
        too_tall = need.height() > max(screen.height(), old_size.height())
        too_wide = need.width() > max(screen.width(), old_size.width())
        if factor > 1 and (too_tall or too_wide):
            self.set_appearance(self.theme, old_scale)
            self.resize(old_size)
            self.show_message(f"fonts at {scale:.2f}x would not fit the window on this screen ({screen.width()}x"
                              f"{screen.height()}): kept at {old_scale:.2f}x (full screen or hiding a dock makes room)")
            return
        self.resize(old_size)  # as it was: the fonts changed, not the window
