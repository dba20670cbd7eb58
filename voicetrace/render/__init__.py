"""Renderers: one tiny interface, ``render(report, out)``, writing a Report to a text stream.

- ``terminal``: the rich per-turn table and headline (what ``run`` and ``report`` print);
- ``json_summary``: the same numbers as JSON (``report --json``);
- ``html``: one self-contained HTML file, plotly.js inlined, opens offline (``report -o``); its tables
  are in ``html_tables``, its figures in ``html_figures``.

Labels, headers and which metrics each output lists come from ``voicetrace.analysis.metrics``.
"""

from __future__ import annotations

from typing import Protocol, TextIO

from voicetrace.analysis.report import Report


class Renderer(Protocol):
    def __call__(self, report: Report, out: TextIO) -> None: ...


def renderer(name: str) -> Renderer:
    """The ``render`` function of the renderer called ``name`` (terminal, json, html)."""
    if name == "terminal":
        from voicetrace.render.terminal import render
    elif name == "json":
        from voicetrace.render.json_summary import render
    elif name == "html":
        from voicetrace.render.html import render
    else:
        raise ValueError(f"no renderer {name!r}")
    return render
