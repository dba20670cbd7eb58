"""Integration time: who blocked the event loop, and how long frames waited in each processor's queue.

Fed from pipecat's observer callbacks (every push and every ``process_frame``, in the order they
happened, each with its pipeline-clock stamp) and from the ``LoopLagMonitor``'s stalls:

- **Queue wait**: a frame pushed to processor P at t₀ whose ``process_frame`` in P starts at t₁
  waited t₁ − t₀ in P's queue. Overlapping waits at one processor merge into one interval; an
  interval of at least ``wait_min_ns`` becomes a ``QueueWait`` (spans ``queue.wait``). Input audio
  and speaking heartbeats are left out: they are not on a reply's path and would be most of the cost.
- **Who blocked the loop**: while a synchronous call holds the loop, no frame moves, so the frame
  events around a stall show a long silence. Each gap between consecutive events (or the stall's
  end) that reaches past the monitor's due time and lasts at least ``block_min_ms`` is a block (the
  largest one when none does): it starts at the event before it, whose processor (the one
  processing or pushing the frame) was running, and ends at the next event. A processor that blocks
  inside ``process_frame`` is named to within the observer's stamps; a block in a task with no frame
  event before it is reported without a processor, from the monitor's due time (a lower bound,
  within one tick).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Callable

from pipecat.frames.frames import BotSpeakingFrame, InputAudioRawFrame, UserSpeakingFrame

from voicetrace.capture.loop_lag import STALL_MS, Stall

WAIT_MIN_MS = 2.0
"""Merged queue waits shorter than this are not written (a busy pipeline has thousands of tiny ones)."""
_NOT_ON_REPLY_PATH = (InputAudioRawFrame, UserSpeakingFrame, BotSpeakingFrame)
_PENDING_MAX = 8192
_EVENTS_MAX = 1024


@dataclass(frozen=True)
class BlockedLoop:
    """A stall, attributed (monotonic ns)."""

    start_ns: int
    end_ns: int
    processor: str | None
    """The processor that was running when the loop stopped moving (None: no frame event named one)."""
    late_ns: int
    """How late the monitor woke (the measurement the stall was detected by)."""


@dataclass(frozen=True)
class QueueWait:
    """Frames waited in ``processor``'s queue from start to end (merged, monotonic ns)."""

    processor: str
    start_ns: int
    end_ns: int
    frames: int
    max_wait_ns: int


def processor_name(processor) -> str | None:
    if processor is None:
        return None
    return getattr(processor, "name", None) or type(processor).__name__


class IntegrationTracker:
    def __init__(self, on_blocked: Callable[[BlockedLoop], None], on_wait: Callable[[QueueWait], None], *,
                 wait_min_ms: float = WAIT_MIN_MS, block_min_ms: float = STALL_MS) -> None:
        self._on_blocked = on_blocked
        self._block_min_ns = int(block_min_ms * 1_000_000)
        self._on_wait = on_wait
        self._wait_min_ns = int(wait_min_ms * 1_000_000)
        self._pushed: OrderedDict[tuple[int, int], int] = OrderedDict()
        self._open: dict[str, list[int]] = {}  # processor → [start, end, frames, max_wait]
        self._events: deque[tuple[int, str | None]] = deque(maxlen=_EVENTS_MAX)
        self._stalls: list[Stall] = []
        self.last_event_ns = 0

    # --- frame events (in the order they happened) ----------------------------------------
    def on_push(self, frame, t: int, source, destination) -> None:
        self._event(t, processor_name(source))
        if destination is None or isinstance(frame, _NOT_ON_REPLY_PATH):
            return
        pushed = self._pushed
        pushed[(frame.id, id(destination))] = t
        if len(pushed) > _PENDING_MAX:  # a frame its destination never processed
            pushed.popitem(last=False)

    def on_process(self, frame, t: int, processor) -> None:
        name = processor_name(processor)
        self._event(t, name)
        t0 = self._pushed.pop((frame.id, id(processor)), None)
        if t0 is None or t < t0 or name is None:
            return
        wait = t - t0
        current = self._open.get(name)
        if current is not None and t0 <= current[1]:
            current[1] = max(current[1], t)
            current[2] += 1
            current[3] = max(current[3], wait)
            return
        if current is not None:
            self._close_wait(name, current)
        self._open[name] = [t0, t, 1, wait]

    def _close_wait(self, name: str, w: list[int]) -> None:
        if w[1] - w[0] >= self._wait_min_ns:
            self._on_wait(QueueWait(name, w[0], w[1], w[2], w[3]))

    def _event(self, t: int, actor: str | None) -> None:
        self._events.append((t, actor))
        self.last_event_ns = t
        while self._stalls and self._stalls[0].end_ns <= t:  # every event before its end is in
            self._resolve(self._stalls.pop(0))

    # --- stalls ---------------------------------------------------------------------------
    def add_stall(self, stall: Stall) -> None:
        """From the monitor (same loop); attributed once the frame events up to its end are seen."""
        if self.last_event_ns >= stall.end_ns:
            self._resolve(stall)
        else:
            self._stalls.append(stall)

    def _resolve(self, stall: Stall) -> None:
        points = [(stall.since_ns, None)]
        points += [e for e in self._events if stall.since_ns <= e[0] <= stall.end_ns]
        points.append((stall.end_ns, None))
        # Gaps that reach past the due time are blocked time; each long one is a block of its own
        # (a processor working through queued frames blocks once per frame, with events between).
        gaps = [(a, b, actor) for (a, actor), (b, _) in zip(points, points[1:]) if b > stall.due_ns]
        blocks = [g for g in gaps if g[1] - g[0] >= self._block_min_ns] or [max(gaps, key=lambda g: g[1] - g[0])]
        for start, end, actor in blocks:
            if actor is not None and "::" in actor:
                # A pipeline's own source/sink (``Pipeline#0::Sink``) only hands frames on: the block is
                # in a task that reported no frame before it (its own code, a service's background task).
                actor = None
            if actor is None and start == stall.since_ns:
                start = stall.due_ns  # nothing ran that we saw: blocked at least from the due time
            self._on_blocked(BlockedLoop(start, end, actor, stall.late_ns))

    def flush(self) -> None:
        """The call is over: attribute what is pending with the events seen, close open waits."""
        for stall in self._stalls:
            self._resolve(stall)
        self._stalls.clear()
        for name, w in self._open.items():
            self._close_wait(name, w)
        self._open.clear()
        self._pushed.clear()
