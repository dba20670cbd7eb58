"""Did the call run in real time? A run that fell behind measures an overloaded machine, not the agent.

Three signs, each an interval on the run's clock (monotonic ns) when it exceeds its threshold:

- ``input_late``: an input audio frame fed after its deadline (a replay's file transport knows each
  frame's deadline: call time zero + n × 20 ms); consecutive late frames merge into one interval.
- ``loop_lag``: the event loop blocked (``capture.integration.BlockedLoop``), so nothing moved.
- ``playback_late``: the output transport woke after the moment its audio should have gone on.

A turn whose window (caller speech onset → its reply's end) overlaps any of them is *behind real
time*: its turn span says so (``voice.behind_real_time`` and the reasons), the run's conversation
span and run.json carry the totals, and the report marks the turn instead of presenting its
numbers as findings.
"""

from __future__ import annotations

from dataclasses import dataclass, field

INPUT_LATE_MS = 40.0
"""Input fed later than this (two 20 ms frames) is behind real time."""
LOOP_LAG_MS = 100.0
"""A loop block at least this long is behind real time (shorter ones stay loop lag in the breakdown)."""
PLAYBACK_LATE_MS = 40.0
"""Audio that went on later than this after it was due is behind real time."""
REASONS = ("input_late", "loop_lag", "playback_late")


@dataclass
class _Sign:
    threshold_ns: int
    intervals: list[list[int]] = field(default_factory=list)  # [start, end, worst late]
    worst_ns: int = 0
    count: int = 0


class RealTimeCheck:
    def __init__(self, *, input_late_ms: float = INPUT_LATE_MS, loop_lag_ms: float = LOOP_LAG_MS,
                 playback_late_ms: float = PLAYBACK_LATE_MS) -> None:
        ms = 1_000_000
        self._signs = {"input_late": _Sign(int(input_late_ms * ms)), "loop_lag": _Sign(int(loop_lag_ms * ms)),
                       "playback_late": _Sign(int(playback_late_ms * ms))}

    def _add(self, reason: str, due_ns: int, actual_ns: int) -> None:
        sign = self._signs[reason]
        late = actual_ns - due_ns
        if late < sign.threshold_ns:
            return
        sign.count += 1
        sign.worst_ns = max(sign.worst_ns, late)
        last = sign.intervals[-1] if sign.intervals else None
        if last is not None and due_ns <= last[1]:
            last[1] = max(last[1], actual_ns)
            last[2] = max(last[2], late)
        else:
            sign.intervals.append([due_ns, actual_ns, late])

    def input_late(self, deadline_ns: int, fed_ns: int) -> None:
        """An input frame due at ``deadline_ns`` was fed at ``fed_ns`` (called for every frame: cheap)."""
        if fed_ns - deadline_ns >= self._signs["input_late"].threshold_ns:
            self._add("input_late", deadline_ns, fed_ns)

    def loop_blocked(self, start_ns: int, end_ns: int) -> None:
        self._add("loop_lag", start_ns, end_ns)

    def playback_late(self, due_ns: int, played_ns: int) -> None:
        if played_ns - due_ns >= self._signs["playback_late"].threshold_ns:
            self._add("playback_late", due_ns, played_ns)

    # --- verdicts -------------------------------------------------------------------------
    @property
    def behind(self) -> bool:
        return any(s.count for s in self._signs.values())

    def reasons_between(self, start_ns: int, end_ns: int) -> list[str]:
        """The signs with an interval overlapping [start_ns, end_ns], in REASONS order."""
        return [r for r in REASONS if any(a <= end_ns and b >= start_ns for a, b, _ in self._signs[r].intervals)]

    def summary(self) -> dict:
        """For run.json and the conversation span: whether the run fell behind, and how far, per sign."""
        out: dict = {"behind": self.behind}
        for reason, sign in self._signs.items():
            out[reason] = {"count": sign.count, "worst_ms": round(sign.worst_ns / 1e6, 3),
                           "threshold_ms": sign.threshold_ns / 1e6}
        return out
