"""Feed a corpus call through VoiceTraceObserver on a fake clock, as a pipecat pipeline would push it.

Caller audio goes in as 20 ms ``InputAudioRawFrame``s at their call time (frame n at n × 20 ms), a
real WebRTC VAD (the reference pipeline's, through pipecat's VADAnalyzer with its start/stop windows)
announces speech starts and stops right after the frame that settled them, the turn is committed
``COMMIT_S`` after a VAD stop the caller does not resume from, and the bot answers ``REPLY_S`` later:
``BotStartedSpeakingFrame``, then the reply's audio as the output transport plays it (40 ms chunks
pushed by a ``BaseOutputTransport``), then the stop frames. No real time, no models but the VAD.
Truth: the corpus's speech edges; the bot's onset is BotStarted + the reply clip's first audible sample.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import numpy as np
from opentelemetry.sdk.trace import TracerProvider
from pipecat.audio.vad.vad_analyzer import VADParams, VADState
from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    InputAudioRawFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    TTSAudioRawFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.observers.base_observer import FramePushed
from pipecat.processors.frame_processor import FrameDirection
from pipecat.transports.base_output import BaseOutputTransport
from pipecat.transports.base_transport import TransportParams

from tests.edges_corpus import RATE, BotReply, Call, bot_replies, pcm16
from voicetrace.capture.observer import VoiceTraceObserver
from voicetrace.clock import FakeClock
from voicetrace.pipelines.webrtc_vad import WebRTCVADAnalyzer

MS = 1_000_000
FRAME_MS = 20
CHUNK_MS = 40
COMMIT_S = 0.6
REPLY_S = 0.4
PLAY_S = 0.6  # a reply is cut after this much (its onset is in its first 60 ms; the caller may speak again)


@dataclass
class TurnEdges:
    call: str
    kind: str
    corpus: str
    line: int
    start_err_ms: float
    end_err_ms: float
    onset_err_ms: float | None
    start_source: str
    end_source: str
    vad_end_err_ms: float


class _Feeder:
    def __init__(self, observer: VoiceTraceObserver) -> None:
        self.observer = observer
        self.output = BaseOutputTransport(TransportParams())
        self.pending: list[tuple[int, object, object]] = []  # (at_ns, frame, source) scheduled bot frames

    async def push(self, at_ns: int, frame, source=None) -> None:
        await self.observer.on_push_frame(FramePushed(source=source, destination=None, frame=frame,
                                                      direction=FrameDirection.DOWNSTREAM, timestamp=at_ns))

    async def flush_until(self, at_ns: int) -> None:
        self.pending.sort(key=lambda p: p[0])
        while self.pending and self.pending[0][0] <= at_ns:
            t, frame, source = self.pending.pop(0)
            await self.push(t, frame, source)

    def schedule_reply(self, commit_ns: int, reply: BotReply) -> int:
        """Frames of one reply from ``commit_ns``; returns when the bot started speaking."""
        start = commit_ns + int(REPLY_S * 1e9)
        audio = reply.audio[: int(PLAY_S * RATE)]
        p = self.pending
        p.append((commit_ns + 1 * MS, LLMFullResponseStartFrame(), None))
        p.append((commit_ns + 50 * MS, LLMTextFrame(text="Sure."), None))
        p.append((start - 20 * MS, TTSStartedFrame(), None))
        p.append((start - 10 * MS, TTSAudioRawFrame(audio=pcm16(audio), sample_rate=RATE, num_channels=1), None))
        p.append((start, BotStartedSpeakingFrame(), None))
        chunk = RATE * CHUNK_MS // 1000
        for i in range(0, len(audio), chunk):
            # pushed by the output transport once played (after the write returns)
            end = start + int((i + chunk) / RATE * 1e9)
            p.append((end, TTSAudioRawFrame(audio=pcm16(audio[i:i + chunk]), sample_rate=RATE, num_channels=1),
                      self.output))
        done = start + int(len(audio) / RATE * 1e9)
        p.append((done + 1 * MS, LLMFullResponseEndFrame(), None))
        p.append((done + 2 * MS, TTSStoppedFrame(), None))
        p.append((done + 3 * MS, BotStoppedSpeakingFrame(), None))
        return start


async def _replay(call: Call, use_vad_positions: bool, provider: TracerProvider | None = None):
    observer = VoiceTraceObserver(tracer_provider=provider or TracerProvider(), clock=FakeClock(1_700_000_000_000_000_000),
                                  frame_time_ns=lambda data: data.timestamp)
    vad = WebRTCVADAnalyzer(mode=2, params=VADParams(start_secs=0.2, stop_secs=0.2))
    vad.set_sample_rate(RATE)
    if use_vad_positions:
        observer.use_vad_positions(vad)
    observer.start_conversation(0)
    feeder = _Feeder(observer)
    replies = bot_replies()
    bot_starts: list[tuple[int, BotReply]] = []
    pcm = pcm16(call.audio)
    step = RATE * FRAME_MS // 1000 * 2
    speaking, stop_at = False, None
    tail = int(3.0 * 1000 / FRAME_MS)  # silence after the call so the last turn is committed and answered
    pcm += b"\x00" * (step * tail)
    for n in range(len(pcm) // step):
        t = n * FRAME_MS * MS
        await feeder.flush_until(t)
        chunk = pcm[n * step:(n + 1) * step]
        await feeder.push(t, InputAudioRawFrame(audio=chunk, sample_rate=RATE, num_channels=1))
        state = await vad.analyze_audio(chunk)
        if state in (VADState.SPEAKING, VADState.QUIET) and (state == VADState.SPEAKING) != speaking:
            speaking = state == VADState.SPEAKING
            frame = VADUserStartedSpeakingFrame(start_secs=0.2) if speaking else VADUserStoppedSpeakingFrame(stop_secs=0.2)
            await feeder.push(t + 1 * MS, frame)  # announced after the frame that settled it
            stop_at = None if speaking else t
        if stop_at is not None and t - stop_at >= COMMIT_S * 1e9:
            await feeder.push(t + 2 * MS, UserStoppedSpeakingFrame())
            reply = replies[len(bot_starts) % len(replies)]
            bot_starts.append((feeder.schedule_reply(t + 2 * MS, reply), reply))
            stop_at = None
    await feeder.flush_until(10**18)
    observer.finish()
    return observer.turns, bot_starts


def measure(call: Call, use_vad_positions: bool = False, provider: TracerProvider | None = None) -> list[TurnEdges]:
    """One TurnEdges per truth line (the turn whose speech overlaps it); AssertionError if none does."""
    turns, bot_starts = asyncio.run(_replay(call, use_vad_positions, provider))
    out = []
    for i, (s, e) in enumerate(call.lines):
        s_ns, e_ns = int(s * 1e9), int(e * 1e9)
        hits = [r for r in turns if r.speech_end_ns is not None and r.speech_start_ns < e_ns + 300 * MS
                and r.speech_end_ns > s_ns - 300 * MS]
        assert hits, f"{call.name} {call.kind}: no turn for line {i + 1} ({s:.2f}-{e:.2f} s)"
        first, last = hits[0], hits[-1]
        onset_err = None
        if last.bot_start_ns is not None:
            reply = next(r for b, r in bot_starts if b == last.bot_start_ns)
            truth_onset = last.bot_start_ns + int(reply.onset_s * 1e9)
            audible = last.bot_audible_ns if last.bot_audible_ns is not None else last.bot_start_ns
            onset_err = (audible - truth_onset) / MS
        out.append(TurnEdges(call.name, call.kind, call.corpus, i + 1, (first.speech_start_ns - s_ns) / MS,
                             (last.speech_end_ns - e_ns) / MS, onset_err, first.start_source, last.end_source,
                             (last.vad_end_ns - e_ns) / MS if last.vad_end_ns is not None else np.nan))
    return out
