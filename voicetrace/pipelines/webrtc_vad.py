"""WebRTC VAD as a pipecat VADAnalyzer (webrtcvad's is_speech → confidence 1.0 / 0.0)."""

from __future__ import annotations

import webrtcvad
from pipecat.audio.vad.vad_analyzer import VADAnalyzer, VADParams

from voicetrace.pipelines.vad_position import AudioPositionMixin

_FRAME_MS = 20  # webrtcvad takes 10, 20 or 30 ms frames


class WebRTCVADAnalyzer(AudioPositionMixin, VADAnalyzer):
    def __init__(self, *, mode: int = 2, params: VADParams | None = None) -> None:
        super().__init__(params=params)
        self.mode = mode
        self._vad = webrtcvad.Vad(mode)

    def num_frames_required(self) -> int:
        return int(self.sample_rate * _FRAME_MS / 1000)

    def voice_confidence(self, buffer: bytes) -> float:
        try:
            return 1.0 if self._vad.is_speech(buffer, self.sample_rate) else 0.0
        except Exception:
            return 0.0  # a short or odd-rate buffer is "not speech", never a crash
