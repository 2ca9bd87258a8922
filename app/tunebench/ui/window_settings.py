"""What the window keeps between starts (in gui.ini beside the store): geometry, dock layout, theme, font
scale, the workload panel's last choices (workload, engine, threads, step and warm-up, CPU profile, the
second client group), and each target's client hosts. Never stage mode's state: the window leaves stage
before anything is saved."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QSettings
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QWidget

from tunebench.ui.theme import THEMES, Theme

if TYPE_CHECKING:
    from tunebench.ui.main_window import MainWindow
    from tunebench.ui.workload_panel import WorkloadPanel


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


def _int(value: object) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


def _bool(value: object) -> bool:
    """A tick as an INI file gives it back: "true"/"false" (a bool when the settings are in memory)."""
    return value is True or str(value).lower() in ("true", "1")


def save_form(s: QSettings, p: WorkloadPanel) -> None:
    """The rest of the run's form: step and warm-up, the CPU profile tick, the second client group."""
    s.setValue("step_seconds", p.step_seconds.value())
    s.setValue("warmup_seconds", p.warmup_seconds.value())
    s.setValue("cpu_profile", p.profile.isChecked())
    s.setValue("second/on", p.second.isChecked())
    s.setValue("second/workload", p.second_workload.currentText())
    s.setValue("second/threads", p.second_threads.text())


def restore_form(s: QSettings, p: WorkloadPanel) -> None:
    """What save_form kept; a value the file holds wrongly (edited by hand) leaves the form's default."""
    for key, box in (("step_seconds", p.step_seconds), ("warmup_seconds", p.warmup_seconds)):
        value = _int(s.value(key, ""))
        if value is not None:
            box.setValue(value)  # (clamped to the box's range)
    if s.contains("cpu_profile"):
        p.profile.setChecked(_bool(s.value("cpu_profile")))
    workload = str(s.value("second/workload", "") or "")
    if workload in p.names:
        p.second_workload.setCurrentText(workload)
    threads = str(s.value("second/threads", "") or "")
    if threads:
        p.second_threads.setText(threads)
    if s.contains("second/on"):
        p.second.setChecked(_bool(s.value("second/on")))


def fit_to_screen(w: QWidget) -> None:
    """The window within the screen it is on: a size saved on a bigger screen (or the 1600x1000 default on a
    1280x720 projector) is clamped to the screen's available area, and the window moved onto it."""
    screen = w.screen() or QGuiApplication.primaryScreen()
    if screen is None:
        return
    room = screen.availableGeometry()
    width, height = min(w.width(), room.width()), min(w.height(), room.height())
    if (width, height) != (w.width(), w.height()):
        w.resize(width, height)
    x = min(max(w.x(), room.left()), room.right() - width + 1)
    y = min(max(w.y(), room.top()), room.bottom() - height + 1)
    if (x, y) != (w.x(), w.y()):
        w.move(x, y)


def restore_window(w: MainWindow) -> None:
    s = w.settings
    geometry = s.value("geometry")
    if geometry is not None:
        w.restoreGeometry(geometry)
        fit_to_screen(w)  # saved on another (bigger) screen
    else:
        w.resize(1600, 1000)  # (`tunebench gui` fits it to the screen before showing it)
    state = s.value("state")
    # a dock state saved compact (one tabbed column, for a projector) is the screen's, decided at every start
    if state is not None and not _bool(s.value("compact", False)):
        w.restoreState(state)
    for key, widget in (("workload", w.workload.workload), ("engine", w.workload.engine)):
        value = s.value(key)
        if value:
            widget.setCurrentText(str(value))
    threads = s.value("threads")
    if threads:
        w.workload.threads.setText(str(threads))
    w.workload.rate.setText(str(s.value("rate") or ""))
    restore_form(s, w.workload)
    if w.hosts_for:
        w.workload.client_hosts.setText(client_hosts_of(s, w.hosts_for))


def save_window(w: MainWindow) -> None:
    s = w.settings
    s.setValue("geometry", w.saveGeometry())
    s.setValue("state", w.saveState())
    s.setValue("compact", w.room.compact)  # a compact state is not restored as such (window_room.py)
    s.setValue("theme", w.theme.name)
    s.setValue("font_scale", round(w.font_scale, 4))
    s.setValue("workload", w.workload.workload.currentText())
    s.setValue("engine", w.workload.engine.currentText())
    s.setValue("threads", w.workload.threads.text())
    s.setValue("rate", w.workload.rate.text())
    save_form(s, w.workload)
    if w.hosts_for:
        s.setValue(f"client_hosts/{w.hosts_for}", w.workload.client_hosts.text())
