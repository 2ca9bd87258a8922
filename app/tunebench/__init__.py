"""Tunebench: a workbench for MySQL-family performance engineers."""

__version__ = "0.1.0"
