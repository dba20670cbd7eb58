"""Renderers: terminal (rich), later HTML and JSON."""
