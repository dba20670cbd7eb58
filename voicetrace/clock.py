"""One monotonic clock per run, anchored to wall time once.

Every span time in a run comes from here, so spans line up exactly. We use
``time.monotonic_ns`` because pipecat's own ``SystemClock`` uses it too: frame
timestamps from the pipeline and our own readings are then on one scale.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class RunClock:
    """Monotonic readings mapped onto epoch nanoseconds with a single anchor."""

    anchor_wall_ns: int = field(default_factory=time.time_ns)
    anchor_mono_ns: int = field(default_factory=time.monotonic_ns)

    def mono_ns(self) -> int:
        return time.monotonic_ns()

    def now_ns(self) -> int:
        """Epoch nanoseconds, derived from the monotonic clock (never jumps)."""
        return self.to_wall_ns(self.mono_ns())

    def to_wall_ns(self, mono_ns: int) -> int:
        return self.anchor_wall_ns + (mono_ns - self.anchor_mono_ns)


class FakeClock(RunClock):
    """A clock tests move by hand."""

    def __init__(self, start_wall_ns: int = 1_700_000_000_000_000_000) -> None:
        super().__init__(anchor_wall_ns=start_wall_ns, anchor_mono_ns=0)
        self._mono_ns = 0

    def mono_ns(self) -> int:
        return self._mono_ns

    def advance_ms(self, ms: float) -> None:
        self._mono_ns += int(round(ms * 1_000_000))

    def set_mono_ns(self, mono_ns: int) -> None:
        self._mono_ns = mono_ns
