"""Light and dark themes: the Qt palette (Fusion) and the plot colours that go with it."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication


@dataclass(frozen=True, slots=True)
class Theme:
    name: str
    plot_background: str
    plot_foreground: str
    label_fill: tuple[int, int, int, int]
    palette: tuple[str, ...] = ()  # curve colours (empty: the dashboard's default)


LIGHT = Theme("light", "#ffffff", "#202020", (255, 255, 255, 200))
DARK = Theme("dark", "#15181c", "#d8d8d8", (21, 24, 28, 200))
# Stage: black and saturated, for a projector in a lit room.
STAGE = Theme("stage", "#000000", "#ffffff", (0, 0, 0, 220),
              ("#ffd400", "#00e5ff", "#ff4fa3", "#7cff3b", "#ff8c1a", "#b388ff", "#ffffff", "#ff5252"))
THEMES = {"light": LIGHT, "dark": DARK, "stage": STAGE}


def apply_theme(app: QApplication, theme: Theme) -> None:
    app.setStyle("Fusion")
    if theme.name == "light":
        app.setPalette(app.style().standardPalette())
        return
    pal = QPalette()
    base, window, text = QColor("#1e2227"), QColor("#262a30"), QColor("#e0e0e0")
    if theme.name == "stage":
        base, window, text = QColor("#000000"), QColor("#000000"), QColor("#ffffff")
    for role, color in ((QPalette.ColorRole.Window, window), (QPalette.ColorRole.WindowText, text),
                        (QPalette.ColorRole.Base, base), (QPalette.ColorRole.AlternateBase, window),
                        (QPalette.ColorRole.Text, text), (QPalette.ColorRole.Button, window),
                        (QPalette.ColorRole.ButtonText, text), (QPalette.ColorRole.ToolTipBase, window),
                        (QPalette.ColorRole.ToolTipText, text), (QPalette.ColorRole.Highlight, QColor("#3d7bd9")),
                        (QPalette.ColorRole.HighlightedText, QColor("#ffffff"))):
        pal.setColor(role, color)
    pal.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Text, QColor("#808080"))
    pal.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.ButtonText, QColor("#808080"))
    app.setPalette(pal)
