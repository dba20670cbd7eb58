"""Event V2V (spans) beside acoustic V2V (the recording) for each turn of a run (pure).

In a replay the conversation span starts at the call's time zero, so a span time − conversation
start is a position in ``call.wav``. Each event turn is matched to the acoustic turn whose agent
onset is nearest its ``bot.speech`` start (within ``MATCH_MS``); the acoustic V2V is that turn's
response gap. The difference is split into its two ends so a warning can say why:

- ``ac_user_end_delta_ms``: acoustic caller end − event user_speech_end (the caller audio's own end; VAD stop −
  silence window in older traces);
- ``ac_bot_start_delta_ms``: acoustic bot onset − event bot onset (first audible frame; first frame played in traces
  written before voice.bot.audible).

``v2v_delta_ms`` = acoustic V2V − event V2V = bot part − caller part.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from voicetrace.acoustic.conversation import ConversationAnalysis
from voicetrace.acoustic.levels import FRAME_MS

TOLERANCE_MS = float(FRAME_MS)
"""Event and acoustic V2V must agree within one 10 ms frame (DESIGN.md); more is reported."""
MATCH_MS = 1000.0
"""An event turn's bot start and the acoustic agent onset further apart than this are not the same reply."""
CHECK_COLUMNS = ["acoustic_v2v_ms", "v2v_delta_ms", "ac_user_end_delta_ms", "ac_bot_start_delta_ms", "ac_nearest_onset_ms"]
"""``ac_nearest_onset_ms``: the acoustic agent onset nearest the event bot start − that start, matched or not."""


@dataclass
class AcousticCheck:
    """The acoustic side of a report: per-turn columns live in Report.turns; this holds the rest."""

    recordings: dict  # trace_id → recording path (str)
    analyses: dict  # trace_id → ConversationAnalysis
    barge_ins: pd.DataFrame  # conversation + conversation.BARGE_IN_COLUMNS
    warnings: list[str] = field(default_factory=list)
    tolerance_ms: float = TOLERANCE_MS
    vad: dict = field(default_factory=dict)


def compare_turns(turns: pd.DataFrame, conv_start_ns: dict, analyses: dict[str, ConversationAnalysis],
                  match_ms: float = MATCH_MS) -> pd.DataFrame:
    """CHECK_COLUMNS for each row of ``turns`` (turn_metrics rows); NaN where there is no recording or match."""
    out = pd.DataFrame(np.nan, index=turns.index, columns=CHECK_COLUMNS, dtype="float64")
    for idx, row in turns.iterrows():
        analysis = analyses.get(row["trace_id"])
        start = conv_start_ns.get((row["trace_id"], row["conversation_span_id"]))
        if analysis is None or start is None or pd.isna(row["bot_onset_ns"]) or pd.isna(row["user_end_ns"]):
            continue
        bot_ms = (int(row["bot_onset_ns"]) - int(start)) / 1e6  # bot audible (its first frame in old traces)
        user_ms = (int(row["user_end_ns"]) - int(start)) / 1e6
        ac = analysis.turns.dropna(subset=["agent_start_ms"])
        if not len(ac):
            continue
        nearest = (ac["agent_start_ms"] - bot_ms).abs().idxmin()
        hit = ac.loc[nearest]
        out.at[idx, "ac_nearest_onset_ms"] = float(hit["agent_start_ms"] - bot_ms)
        if abs(hit["agent_start_ms"] - bot_ms) > match_ms:
            continue
        out.at[idx, "acoustic_v2v_ms"] = float(hit["response_gap_ms"])
        out.at[idx, "ac_user_end_delta_ms"] = float(hit["caller_end_ms"] - user_ms)
        out.at[idx, "ac_bot_start_delta_ms"] = float(hit["agent_start_ms"] - bot_ms)
        out.at[idx, "v2v_delta_ms"] = float(hit["response_gap_ms"]) - float(row["v2v_ms"])
    return out


def disagreements(turns: pd.DataFrame, tolerance_ms: float = TOLERANCE_MS) -> list[str]:
    """One line per turn whose acoustic and event V2V differ by more than ``tolerance_ms``."""
    lines = []
    if "v2v_delta_ms" not in turns:
        return lines
    lost = turns[turns["acoustic_v2v_ms"].isna() & turns["v2v_ms"].notna() & turns["ac_nearest_onset_ms"].notna()]
    for row in lost.itertuples():
        lines.append(
            f"{row.conversation} turn {row.turn}: no bot onset in the recording within {MATCH_MS:,.0f} ms of the "
            f"bot.speech start (nearest {row.ac_nearest_onset_ms:+,.0f} ms away): the span timeline and call.wav disagree")
    for row in turns[turns["v2v_delta_ms"].abs() > tolerance_ms].itertuples():
        user, bot = row.ac_user_end_delta_ms, row.ac_bot_start_delta_ms
        lines.append(
            f"{row.conversation} turn {row.turn}: acoustic V2V {row.acoustic_v2v_ms:,.0f} ms vs event "
            f"{row.v2v_ms:,.0f} ms (Δ {row.v2v_delta_ms:+,.0f} ms > {tolerance_ms:g}): caller speech ended "
            f"{abs(user):,.0f} ms {'after' if user > 0 else 'before'} the trace's speech end, bot audible "
            f"{abs(bot):,.0f} ms {'after' if bot > 0 else 'before'} the trace's bot onset")
    return lines
