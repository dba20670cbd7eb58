"""One-line notes the terminal and the HTML both show, when the trace has what they need: which
code blocked the event loop in a turn, which turns ran behind real time, TTFT on the wire."""

from __future__ import annotations

import pandas as pd

from voicetrace.render.fmt import BEHIND, ms

IMPOSSIBLE_NOTE = "<0! = came out negative: impossible in a call that kept up with real time, not shown as a number"


def integration_notes(turns: pd.DataFrame) -> list[str]:
    """Who blocked the event loop in a turn's V2V window, and the queue waits on its critical path."""
    if "loop_blocked_ms" not in turns:
        return []
    lines = []
    for row in turns[turns["loop_blocked_ms"] > 0].itertuples(index=False):
        who = row.loop_blocker if isinstance(row.loop_blocker, str) else "code that reported no frame (not a processor)"
        waits = row.queue_waits_ms if isinstance(row.queue_waits_ms, dict) else {}
        queued = "; queue waits " + ", ".join(f"{k} {v:,.1f}" for k, v in waits.items()) if waits else ""
        lines.append(f"{row.conversation} turn {row.turn}: event loop blocked {ms(row.loop_blocked_ms)} ms by {who} "
                     f"(loop lag {ms(row.bd_loop_lag_ms)} ms of unattributed V2V{queued})")
    return lines


def behind_notes(turns: pd.DataFrame) -> list[str]:
    """Turns that ran behind real time: their numbers measure the machine, not the pipeline."""
    if "behind_real_time" not in turns:
        return []
    behind = turns[[isinstance(r, list) for r in turns["behind_real_time"]]]
    return [f"{BEHIND} {row.conversation} turn {row.turn} ran behind real time "
            f"({', '.join(r.replace('_', ' ') for r in row.behind_real_time)}): its timings measure an "
            "overloaded machine, not the pipeline" for row in behind.itertuples(index=False)]


def wire_note(turns: pd.DataFrame) -> str | None:
    """TTFT on the wire beside TTFT as delivered to pipecat, when the capture stamped the socket."""
    if "ttft_wire_ms" not in turns or turns["ttft_wire_ms"].isna().all():
        return None
    wire, lag = turns["ttft_wire_ms"].dropna(), turns["llm_delivery_lag_ms"].dropna()
    return (f"TTFT on the wire: p50 {ms(wire.median())} ms over {len(wire)} turn(s) (delivered: p50 "
            f"{ms(turns['ttft_ms'].median())}); delivery lag socket → pipecat p50 {lag.median():,.1f} ms, "
            f"max {lag.max():,.1f} ms")


def has_impossible(turns: pd.DataFrame) -> bool:
    return "impossible" in turns and bool(turns["impossible"].notna().any())
