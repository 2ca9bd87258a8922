"""Light and dark themes: the Qt palette (Fusion) and the plot colours that go with it, and the one function
that applies a theme and a font scale to the application together (the window's appearance is those two
inputs, nothing else: applying them in any order, or again, ends in the same state)."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import QColor, QFont, QPalette
from PySide6.QtWidgets import QApplication


@dataclass(frozen=True, slots=True)
class Theme:
    name: str
    plot_background: str
    plot_foreground: str
    label_fill: tuple[int, int, int, int]
    palette: tuple[str, ...] = ()  # curve colours (empty: the dashboard's default)


LIGHT = Theme("light", "#ffffff", "#202020", (255, 255, 255, 235))
DARK = Theme("dark", "#15181c", "#d8d8d8", (21, 24, 28, 235))
# Stage: black and saturated, for a projector in a lit room.
STAGE = Theme("stage", "#000000", "#ffffff", (0, 0, 0, 235),
              ("#ffd400", "#00e5ff", "#ff4fa3", "#7cff3b", "#ff8c1a", "#b388ff", "#ffffff", "#ff5252"))
THEMES = {"light": LIGHT, "dark": DARK, "stage": STAGE}


_BASE_FONT: dict[str, QFont] = {}  # the application's own font: scale 1.0


def base_font(app: QApplication) -> QFont:
    """The font the application started with (the platform's), kept the first time it is asked for: a
    scale is always relative to it, never to a font an earlier scale left behind."""
    return QFont(_BASE_FONT.setdefault("font", QFont(app.font())))


def apply_appearance(app: QApplication, theme: Theme, scale: float) -> None:
    """The application's font (its own size times `scale`) and then its palette: the palette last, so a
    font change that re-polishes widgets never leaves another palette behind."""
    f = base_font(app)
    size = f.pointSizeF() if f.pointSizeF() > 0 else 9.0
    f.setPointSizeF(round(size * scale, 2))
    app.setFont(f)
    apply_theme(app, theme)


def apply_theme(app: QApplication, theme: Theme) -> None:
    if app.style().name().lower() != "fusion":
        app.setStyle("Fusion")
    app.setPalette(palette(app, theme))


def palette(app: QApplication, theme: Theme) -> QPalette:
    if theme.name == "light":
        pal = QPalette(app.style().standardPalette())
        pal.setColor(QPalette.ColorRole.PlaceholderText, QColor("#767676"))  # 4.5:1 on white
        return pal
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
    # QPalette() leaves placeholder text black: invisible on a dark line edit
    pal.setColor(QPalette.ColorRole.PlaceholderText, QColor("#9aa0a6") if theme.name == "dark" else QColor("#b0b0b0"))
    return pal
