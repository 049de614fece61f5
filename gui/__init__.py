"""Precis desktop GUI (PySide6): thin Qt models and widgets over core/."""
