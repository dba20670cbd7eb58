"""Number formatting shared by the renderers (the only place units are converted for display)."""

from __future__ import annotations

import math

from voicetrace.analysis.summary import MIN_TURNS_FOR, Stat


CONTENT_HINT = ("transcripts not captured (voicetrace run --capture-content; in your own agent "
                "VoiceTraceObserver(capture_content=True) or OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true)")
"""Said wherever transcripts would be shown: how to turn capture on, for the CLI and for library users."""
NO_RECORDING_NOTE = "acoustic V2V not measured: no call.wav beside the trace (a run folder has one)"
"""Said when the acoustic columns are absent, so their absence is never silent."""


def ms(value) -> str:
    """Milliseconds with thousands separators; '—' for missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:,.0f}"


IMPOSSIBLE = "<0!"
"""Shown where a V2V-like value came out negative (analysis.realtime): not a latency, never a number."""
BEHIND = "⏱"
"""Marks a turn that ran behind real time (capture.realtime)."""


def flagged(row, column: str, text: str) -> str:
    """``text``, or IMPOSSIBLE when the turn lists ``column`` as impossible."""
    impossible = row.get("impossible") if isinstance(row, dict) else getattr(row, "impossible", None)
    return IMPOSSIBLE if isinstance(impossible, list) and column in impossible else text


def stat_ms(stat: Stat, key: str) -> str:
    """A percentile, or the count when there are too few values for it ('n=4 <20')."""
    if stat.n == 0:
        return "—"
    if not stat.enough(key):
        return f"n={stat.n} <{MIN_TURNS_FOR[int(key[1:])]}"
    return ms(stat.value(key))


def share(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{100 * value:.0f}%"


def human_bytes(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:,.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= 1024
    return str(value)
