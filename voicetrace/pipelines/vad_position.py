"""Where in the call's audio the VAD changed its mind, independent of when it got around to it.

A VAD frame's timestamp is when the pipeline noticed; on a busy machine the pipeline runs behind
the audio, and "VAD stop minus its silence window" lands late. A VAD analyzer with this mixin
counts the samples it has analysed and queues, for every speech start and stop the pipeline will
announce (mirroring pipecat's VADController), the audio position it happened at. The observer
takes them in order and places speech onset and end on the call's timeline exactly.
"""

from __future__ import annotations

from collections import deque

from pipecat.audio.vad.vad_analyzer import VADState


class AudioPositionMixin:
    """Mix in before a VADAnalyzer subclass: ``class X(AudioPositionMixin, SileroVADAnalyzer)``."""

    def _position_state(self):
        if not hasattr(self, "_vt_transitions"):
            self._vt_transitions: deque[tuple[VADState, int]] = deque(maxlen=256)
            self._vt_samples = 0
            self._vt_announced = VADState.QUIET
        return self._vt_transitions

    async def analyze_audio(self, buffer: bytes) -> VADState:
        transitions = self._position_state()
        state = await super().analyze_audio(buffer)
        self._vt_samples += len(buffer) // 2
        # pipecat's VADController announces only settled changes (not STARTING / STOPPING).
        if state != self._vt_announced and state not in (VADState.STARTING, VADState.STOPPING):
            transitions.append((state, self._vt_samples))
            self._vt_announced = state
        return state

    def pop_position_s(self, speaking: bool) -> float | None:
        """Audio position (s) of the oldest unclaimed start (speaking) or stop; None if unknown."""
        transitions = self._position_state()
        wanted = VADState.SPEAKING if speaking else VADState.QUIET
        while transitions:
            state, samples = transitions.popleft()
            if state == wanted:
                return samples / self.sample_rate
        return None
