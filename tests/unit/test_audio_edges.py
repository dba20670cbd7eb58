"""Speech edges and bot onset from the audio, against the corpus's truth (tests/edges_corpus.py).

Every call of the corpus goes through VoiceTraceObserver on a fake clock with a real WebRTC VAD
(tests/edges_harness.py). Goals (issue 12) on every clean turn: |speech start − truth| ≤ 30 ms,
|speech end − truth| ≤ 20 ms, |bot onset − truth| ≤ 10 ms. Noisy variants are held to the looser
bounds below, which are what the energy detector measurably does there (README, "From the audio"):
word endings under the noise floor are lost, so the end comes early.
"""

from __future__ import annotations

import numpy as np
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.edges_corpus import RATE, clean_calls, human_calls, pcm16, with_noise
from tests.edges_harness import measure
from voicetrace import semconv as sc
from voicetrace.capture.audio_edges import CallerEdges, LevelTrack
from voicetrace.capture.bot_onset import BotOnset

MS = 1_000_000
GOAL_START_MS, GOAL_END_MS, GOAL_ONSET_MS = 30.0, 20.0, 10.0
NOISY_BOUNDS_MS = {"snr20": (60.0, 300.0), "snr10": (160.0, 1100.0)}
"""(|start|, |end|) at most, per noisy variant: regression bounds of measured behaviour, not goals.
At 10 dB two turns fall back to the VAD (the detector hears the noise as speech going on) and carry its error."""

CLEAN = {c.name: c for c in clean_calls()}


def _report(rows, label: str) -> str:
    s = np.array([r.start_err_ms for r in rows])
    e = np.array([r.end_err_ms for r in rows])
    o = np.array([r.onset_err_ms for r in rows if r.onset_err_ms is not None])
    return (f"{label}: {len(rows)} turns, max |start| {np.abs(s).max():.0f} ms, max |end| {np.abs(e).max():.0f} ms, "
            f"max |bot onset| {np.abs(o).max():.1f} ms")


@pytest.mark.parametrize("name", list(CLEAN))
def test_clean_edges_meet_the_goals_on_every_turn(name):
    rows = measure(CLEAN[name])
    print(_report(rows, name))
    assert len(rows) == len(CLEAN[name].lines)
    for r in rows:
        assert (r.start_source, r.end_source) == ("audio", "audio"), r
        assert abs(r.start_err_ms) <= GOAL_START_MS, r
        assert abs(r.end_err_ms) <= GOAL_END_MS, r
        assert r.onset_err_ms is not None and abs(r.onset_err_ms) <= GOAL_ONSET_MS, r


def test_audio_positions_from_the_vad_give_the_same_edges():
    """The replay wires the VAD's audio positions in (vad_position.py): the edges do not move."""
    call = human_calls()[0]
    plain, positioned = measure(call), measure(call, use_vad_positions=True)
    assert [(r.start_err_ms, r.end_err_ms) for r in plain] == [(r.start_err_ms, r.end_err_ms) for r in positioned]


def test_the_vad_alone_misses_the_goal_the_audio_meets():
    """What the audio edges fix: the VAD's own end (stop − stop_secs) is ~100 ms late on every clean turn."""
    rows = [r for c in CLEAN.values() for r in measure(c)]
    assert min(r.vad_end_err_ms for r in rows) > GOAL_END_MS


@pytest.mark.parametrize("snr_db", [20.0, 10.0])
def test_noisy_edges_stay_within_their_documented_bounds(snr_db):
    rows = [r for c in CLEAN.values() for r in measure(with_noise(c, snr_db))]
    label = f"snr{snr_db:g}"
    print(_report(rows, label))
    start_bound, end_bound = NOISY_BOUNDS_MS[label]
    assert max(abs(r.start_err_ms) for r in rows) <= start_bound
    assert max(abs(r.end_err_ms) for r in rows) <= end_bound
    assert max(abs(r.onset_err_ms) for r in rows if r.onset_err_ms is not None) <= GOAL_ONSET_MS
    audio_ends = [r.end_err_ms for r in rows if r.end_source == "audio"]
    assert len(audio_ends) >= len(rows) - 2 and max(audio_ends) <= GOAL_END_MS  # early in noise, never late


def test_level_frames_are_exact_at_any_rate_and_chunking():
    track = LevelTrack()
    x = np.zeros(22_050, np.float32)
    x[4410:] = 0.5  # loud from 200 ms on
    pcm = pcm16(x)
    levels = np.concatenate([track.feed(pcm[i:i + 2 * 333], 22_050) for i in range(0, len(pcm), 2 * 333)])
    assert len(levels) == 100
    assert levels[19] < -100 and levels[20] > -10


def test_a_late_frame_does_not_move_the_anchor():
    """Audio never arrives early: the earliest push − position is call time zero; a late push is lag."""
    edges = CallerEdges()
    frame = pcm16(np.zeros(320, np.float32))
    for n in range(10):
        edges.feed(frame, RATE, 1, pushed_ns=5_000 * MS + n * 20 * MS + (300 * MS if n == 3 else 0))
    assert edges.anchor_ns == 5_000 * MS
    assert edges.to_mono(100 * MS) == 5_100 * MS


def test_bot_onset_counts_samples_from_the_announcement_whatever_the_chunks():
    onset = BotOnset()
    x = np.zeros(RATE, np.float32)
    x[int(0.0437 * RATE):] = 0.2  # audible from 43.7 ms on: the frame at 40 ms is the first over the level
    pcm = pcm16(x)
    onset.started(1_000 * MS)
    found = [o for i in range(0, len(pcm), 2 * 700) if (o := onset.feed(pcm[i:i + 2 * 700], RATE)) is not None]
    assert found == [1_040 * MS]


def test_spans_carry_the_audio_edges_and_the_vads_own_moments():
    from tests import edges_harness

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    edges_harness.measure(CLEAN["claim_status"], provider=provider)
    spans = exporter.get_finished_spans()
    speech = [s for s in spans if s.name == sc.SPAN_USER_SPEECH]
    assert len(speech) == 4
    first = speech[0]
    assert first.attributes[sc.ATTR_SPEECH_START_SOURCE] == first.attributes[sc.ATTR_SPEECH_END_SOURCE] == "audio"
    assert first.attributes[sc.ATTR_VAD_END_LAG_MS] > 50  # the VAD's end is late; the span's end is not
    turn = next(s for s in spans if s.name == sc.SPAN_TURN)
    names = [e.name for e in turn.events]
    assert names[:2] == [sc.EVENT_VAD_STARTED, sc.EVENT_VAD_STOPPED]
    assert turn.events[1].timestamp > first.end_time  # the pipeline knew after the speech ended
    endpointing = next(s for s in spans if s.name == sc.SPAN_ENDPOINTING)
    assert endpointing.start_time == first.end_time
    bot = next(s for s in spans if s.name == sc.SPAN_BOT_SPEECH)
    (audible,) = [e for e in bot.events if e.name == sc.EVENT_BOT_AUDIBLE]
    assert audible.timestamp - bot.start_time == pytest.approx(bot.attributes[sc.ATTR_BOT_LEADING_SILENCE_MS] * MS)


def test_caller_audio_is_not_call_activity():
    """A replay feeds silence until the call has been idle a while: audio frames must not look like activity."""
    import asyncio

    from pipecat.frames.frames import InputAudioRawFrame
    from pipecat.observers.base_observer import FramePushed
    from pipecat.processors.frame_processor import FrameDirection

    from voicetrace.capture.observer import VoiceTraceObserver
    from voicetrace.clock import FakeClock

    observer = VoiceTraceObserver(tracer_provider=TracerProvider(), clock=FakeClock(0), frame_time_ns=lambda d: d.timestamp)
    frame = pcm16(np.zeros(320, np.float32))
    for n in range(5):
        asyncio.run(observer.on_push_frame(FramePushed(
            source=None, destination=None, frame=InputAudioRawFrame(audio=frame, sample_rate=RATE, num_channels=1),
            direction=FrameDirection.DOWNSTREAM, timestamp=(n + 1) * 20 * MS)))
    assert observer.last_activity_mono_ns == 0
    assert observer._tracker.caller_audio.frames == 5
