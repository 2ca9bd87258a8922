"""What the window keeps between starts (in gui.ini beside the store): geometry, dock layout, theme, font
scale, the workload panel's last choices, and each target's client hosts. Never stage mode's state: the
window leaves stage before anything is saved."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QSettings

from tunebench.ui.theme import THEMES, Theme

if TYPE_CHECKING:
    from tunebench.ui.main_window import MainWindow


def initial_appearance(settings: QSettings) -> tuple[Theme, float]:
    theme = THEMES.get(str(settings.value("theme", "light")), THEMES["light"])
    if theme.name == "stage":  # stage is a view state, never the everyday theme
        theme = THEMES["light"]
    try:
        scale = float(settings.value("font_scale", 1.0))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        scale = 1.0
    return theme, scale


def client_hosts_of(settings: QSettings, target: str) -> str:
    return str(settings.value(f"client_hosts/{target}", "") or "")


def restore_window(w: MainWindow) -> None:
    s = w.settings
    geometry = s.value("geometry")
    if geometry is not None:
        w.restoreGeometry(geometry)
    else:
        w.resize(1600, 1000)
    state = s.value("state")
    if state is not None:
        w.restoreState(state)
    for key, widget in (("workload", w.workload.workload), ("engine", w.workload.engine)):
        value = s.value(key)
        if value:
            widget.setCurrentText(str(value))
    threads = s.value("threads")
    if threads:
        w.workload.threads.setText(str(threads))
    if w.hosts_for:
        w.workload.client_hosts.setText(client_hosts_of(s, w.hosts_for))


def save_window(w: MainWindow) -> None:
    s = w.settings
    s.setValue("geometry", w.saveGeometry())
    s.setValue("state", w.saveState())
    s.setValue("theme", w.theme.name)
    s.setValue("font_scale", round(w.font_scale, 4))
    s.setValue("workload", w.workload.workload.currentText())
    s.setValue("engine", w.workload.engine.currentText())
    s.setValue("threads", w.workload.threads.text())
    if w.hosts_for:
        s.setValue(f"client_hosts/{w.hosts_for}", w.workload.client_hosts.text())
