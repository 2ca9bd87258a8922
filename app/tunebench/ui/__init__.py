"""The workbench window (PySide6 + pyqtgraph). Only this package imports Qt."""
