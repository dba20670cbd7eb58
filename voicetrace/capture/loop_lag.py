"""Event-loop lag: a timer on the loop that wakes every ~10 ms and notes how late it wakes.

While a synchronous call runs on the event loop (a model call in a frame handler, a large parse),
nothing else runs: no frame moves, no timer fires, no socket is read. The monitor sees that as a
late wake and reports a ``Stall``: the loop was not responsive from at least ``due_ns`` (when the
monitor should have woken) to ``end_ns`` (when it did), and the blocking began no earlier than
``since_ns`` (the monitor's previous wake). Who blocked it is decided elsewhere
(``capture.integration``), from the frames pipecat reported around that window.

Cost: one timer callback per tick, a clock read and a subtraction (``bench/loop_lag_cost.py``
measures it against the same loop without the monitor). Every stamp comes from the run's one clock.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Callable

from voicetrace.clock import RunClock

log = logging.getLogger(__name__)

INTERVAL_MS = 10.0
"""Default tick: the monitor's resolution."""
STALL_MS = 5.0
"""Default threshold: a wake this much later than due is a stall (below it: timer and scheduler noise)."""


@dataclass(frozen=True)
class Stall:
    """One late wake of the monitor (monotonic ns on the run's clock)."""

    since_ns: int
    """The monitor's previous wake: the blocking cannot have begun before this."""
    due_ns: int
    """When the monitor should have woken: the loop was blocked from here at the latest."""
    end_ns: int
    """When the monitor woke: the loop was free again."""

    @property
    def late_ns(self) -> int:
        return self.end_ns - self.due_ns


@dataclass
class LagStats:
    ticks: int = 0
    stalls: int = 0
    late_total_ns: int = 0
    """Sum of the lateness of every stall (ticks below the threshold count zero)."""
    late_max_ns: int = 0


class LoopLagMonitor:
    """``start()`` inside the running loop, ``stop()`` when done; ``on_stall`` gets each ``Stall``
    in the loop's own thread, right after the monitor wakes.

    Each tick is a plain timer callback on the loop (``call_later``), not a coroutine: it is woken
    exactly like a task's ``asyncio.sleep`` (a due timer the loop runs when it is free), without
    creating a Future and stepping a Task each time, which halves the Python work per tick."""

    def __init__(self, clock: RunClock, on_stall: Callable[[Stall], None] | None = None, *,
                 interval_ms: float = INTERVAL_MS, stall_ms: float = STALL_MS) -> None:
        self._clock = clock
        self._on_stall = on_stall
        self.interval_ns = int(interval_ms * 1_000_000)
        self.stall_ns = int(stall_ms * 1_000_000)
        self.stats = LagStats()
        self._interval_s = self.interval_ns / 1e9
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._last_ns = 0

    @property
    def running(self) -> bool:
        return self._handle is not None

    def start(self) -> None:
        if self._handle is None:
            self._loop = asyncio.get_running_loop()
            self._last_ns = self._clock.mono_ns()
            self._handle = self._loop.call_later(self._interval_s, self._tick)

    async def stop(self) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            handle.cancel()

    def _tick(self) -> None:
        now = self._clock.mono_ns()
        stats = self.stats
        stats.ticks += 1
        late = now - self._last_ns - self.interval_ns
        if late >= self.stall_ns:
            stats.stalls += 1
            stats.late_total_ns += late
            stats.late_max_ns = max(stats.late_max_ns, late)
            if self._on_stall is not None:
                try:
                    self._on_stall(Stall(since_ns=self._last_ns, due_ns=self._last_ns + self.interval_ns, end_ns=now))
                except Exception:  # measuring never breaks the call
                    log.exception("voicetrace: loop stall not recorded")
        self._last_ns = now
        if self._handle is not None:  # not stopped meanwhile
            self._handle = self._loop.call_later(self._interval_s, self._tick)
