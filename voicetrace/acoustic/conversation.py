"""Caller and agent speech segments → turns, response gaps, barge-ins, long silences, talk ratio (pure).

A turn starts with caller speech and holds the caller's segments up to the agent's reply: a caller
segment that starts after the agent has begun speaking in the current turn starts the next turn.
The response gap is the agent's first onset after the turn began − the end of the caller's last
segment before that onset (negative when the agent started while the caller was still speaking).
Agent speech before the caller's first word (a greeting) belongs to no turn.

A barge-in is any stretch where both channels are voiced: the one who started second interrupted;
``stopped`` says who fell silent first (``both`` when they stop in the same frame, ``neither`` when
the overlap ends because the recording ends).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

CALLER = "caller"
AGENT = "agent"

TURN_COLUMNS = ["turn", "caller_start_ms", "caller_end_ms", "caller_segments", "agent_start_ms", "agent_end_ms",
                "agent_segments", "response_gap_ms", "interrupted"]
BARGE_IN_COLUMNS = ["turn", "start_ms", "end_ms", "overlap_ms", "interrupter", "interrupted_speaker", "stopped"]
SILENCE_COLUMNS = ["start_ms", "end_ms", "duration_ms", "after"]


@dataclass
class ConversationAnalysis:
    duration_ms: float
    caller_segments: np.ndarray  # [[start_ms, end_ms], ...]
    agent_segments: np.ndarray
    turns: pd.DataFrame  # TURN_COLUMNS
    barge_ins: pd.DataFrame  # BARGE_IN_COLUMNS
    silences: pd.DataFrame  # SILENCE_COLUMNS, silences ≥ long_silence_ms between the first and last speech
    long_silence_ms: float
    caller_talk_ms: float = 0.0
    agent_talk_ms: float = 0.0
    overlap_ms: float = 0.0
    greeting_segments: int = 0
    meta: dict = field(default_factory=dict)

    @property
    def talk_ratio(self) -> float:
        """Caller's share of all talk time (0..1; NaN when nobody spoke)."""
        total = self.caller_talk_ms + self.agent_talk_ms
        return self.caller_talk_ms / total if total else float("nan")

    @property
    def silence_ms(self) -> float:
        """Time in which neither side speaks (the whole recording)."""
        return max(0.0, self.duration_ms - (self.caller_talk_ms + self.agent_talk_ms - self.overlap_ms))


def _overlaps(a: np.ndarray, b: np.ndarray) -> list[tuple[int, int, int, int]]:
    """(i, j, start, end) for every pair of segments a[i], b[j] that overlap (two-pointer sweep)."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        start, end = max(a[i, 0], b[j, 0]), min(a[i, 1], b[j, 1])
        if start < end:
            out.append((i, j, int(start), int(end)))
        if a[i, 1] <= b[j, 1]:
            i += 1
        else:
            j += 1
    return out


def _turns(caller: np.ndarray, agent: np.ndarray) -> tuple[pd.DataFrame, np.ndarray, int]:
    """The turns table, the turn number of each caller segment, and the number of greeting segments."""
    rows: list[dict] = []
    caller_turn = np.zeros(len(caller), dtype=np.int64)
    greeting = int((agent[:, 0] < caller[0, 0]).sum()) if len(caller) and len(agent) else len(agent)
    if not len(caller):
        return pd.DataFrame(columns=TURN_COLUMNS), caller_turn, greeting
    group: list[int] = []

    def close(group: list[int], next_start: float) -> None:
        first = caller[group[0], 0]
        reply = agent[(agent[:, 0] > first) & (agent[:, 0] < next_start)] if len(agent) else agent
        row = {"turn": len(rows) + 1, "caller_start_ms": float(first), "caller_segments": len(group),
               "agent_segments": len(reply), "interrupted": False}
        if len(reply):
            onset = reply[0, 0]
            before = caller[group][caller[group][:, 0] < onset]
            row["caller_end_ms"] = float(before[:, 1].max())
            row["agent_start_ms"], row["agent_end_ms"] = float(onset), float(reply[:, 1].max())
            row["response_gap_ms"] = float(onset - row["caller_end_ms"])
        else:
            row["caller_end_ms"] = float(caller[group][:, 1].max())
            row["agent_start_ms"] = row["agent_end_ms"] = row["response_gap_ms"] = np.nan
        for i in group:
            caller_turn[i] = row["turn"]
        rows.append(row)

    for i in range(len(caller)):
        if group:
            first = caller[group[0], 0]
            agent_began = len(agent) and bool(((agent[:, 0] > first) & (agent[:, 0] < caller[i, 0])).any())
            if agent_began:
                close(group, caller[i, 0])
                group = []
        group.append(i)
    close(group, np.inf)
    return pd.DataFrame(rows, columns=TURN_COLUMNS), caller_turn, greeting


def _agent_turn(turns: pd.DataFrame, onset_ms: float) -> int | None:
    """The turn an agent segment starting at ``onset_ms`` answers (the last one the caller began before it)."""
    started = turns[turns["caller_start_ms"] < onset_ms]
    return int(started["turn"].iloc[-1]) if len(started) else None


def analyze_segments(caller: np.ndarray, agent: np.ndarray, duration_ms: float,
                     long_silence_ms: float = 2000.0) -> ConversationAnalysis:
    """Everything ``voicetrace analyze`` reports, from the two channels' speech segments (ms)."""
    caller = np.asarray(caller, dtype=np.int64).reshape(-1, 2)
    agent = np.asarray(agent, dtype=np.int64).reshape(-1, 2)
    turns, caller_turn, greeting = _turns(caller, agent)

    barge_rows = []
    for i, j, start, end in _overlaps(caller, agent):
        c, a = caller[i], agent[j]
        interrupter, interrupted = (CALLER, AGENT) if c[0] > a[0] else (AGENT, CALLER)
        if c[0] == a[0]:
            interrupter, interrupted = "both", "both"
        if c[1] == a[1]:
            stopped = "neither" if c[1] >= duration_ms else "both"
        else:
            stopped = CALLER if c[1] < a[1] else AGENT
        # Caller cut in: the turn whose reply was talked over; agent cut in: the caller's turn.
        turn = _agent_turn(turns, a[0]) if interrupter == CALLER else int(caller_turn[i])
        barge_rows.append({"turn": turn, "start_ms": float(start), "end_ms": float(end),
                           "overlap_ms": float(end - start), "interrupter": interrupter,
                           "interrupted_speaker": interrupted, "stopped": stopped})
    barge_ins = pd.DataFrame(barge_rows, columns=BARGE_IN_COLUMNS)
    # The turn whose reply the caller talked over is the interrupted one (pipeline's turn.was_interrupted).
    for row in barge_ins.itertuples():
        if row.interrupter == CALLER and row.turn is not None:
            turns.loc[turns["turn"] == row.turn, "interrupted"] = True

    # Silences: gaps in the union of both channels' speech, between the first and the last speech.
    both = np.concatenate([caller, agent]) if len(caller) + len(agent) else np.zeros((0, 2), np.int64)
    silence_rows = []
    if len(both):
        both = both[np.argsort(both[:, 0], kind="stable")]
        reach = np.maximum.accumulate(both[:, 1])
        for k in range(1, len(both)):
            gap = both[k, 0] - reach[k - 1]
            if gap >= long_silence_ms:
                last = both[:k][np.argmax(both[:k, 1] == reach[k - 1])]
                after = CALLER if any((caller == last).all(axis=1)) else AGENT
                silence_rows.append({"start_ms": float(reach[k - 1]), "end_ms": float(both[k, 0]),
                                     "duration_ms": float(gap), "after": after})
    silences = pd.DataFrame(silence_rows, columns=SILENCE_COLUMNS)
    return ConversationAnalysis(
        duration_ms=float(duration_ms), caller_segments=caller, agent_segments=agent, turns=turns,
        barge_ins=barge_ins, silences=silences, long_silence_ms=float(long_silence_ms),
        caller_talk_ms=float((caller[:, 1] - caller[:, 0]).sum()), agent_talk_ms=float((agent[:, 1] - agent[:, 0]).sum()),
        overlap_ms=float(barge_ins["overlap_ms"].sum()) if len(barge_ins) else 0.0, greeting_segments=greeting,
    )
