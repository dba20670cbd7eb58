"""Observer → trace.jsonl (OTLP JSON lines) → reader → turn metrics, on a fake clock."""

from __future__ import annotations

import json
import math

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from pipecat.frames.frames import EndFrame, StartFrame
from pipecat.observers.base_observer import FramePushed
from pipecat.processors.frame_processor import FrameDirection

from voicetrace.analysis.summary import stat
from voicetrace.analysis.turns import turn_metrics
from voicetrace.capture.observer import VoiceTraceObserver
from voicetrace.clock import FakeClock
from voicetrace.otel.jsonl import OtlpJsonLinesExporter
from voicetrace.traces.files import read_trace_files

from tests.unit.test_observer import MS, WALL0, play_turn


class FileHarness:
    def __init__(self, path) -> None:
        self.exporter = OtlpJsonLinesExporter(path)
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.provider = provider
        self.observer = VoiceTraceObserver(
            tracer_provider=provider, clock=FakeClock(WALL0), capture_content=True,
            conversation_id="call-1", frame_time_ns=lambda d: d.timestamp,
        )

    async def push(self, at_ms, frame, source=None):
        await self.observer.on_push_frame(
            FramePushed(source=source, destination=None, frame=frame,
                        direction=FrameDirection.DOWNSTREAM, timestamp=int(at_ms * MS))
        )


@pytest.mark.asyncio
async def test_metrics_follow_design_definitions_exactly(tmp_path):
    path = tmp_path / "trace.jsonl"
    h = FileHarness(path)
    await h.push(0, StartFrame())
    await play_turn(h, 800)
    await play_turn(h, 10_000, text="second")
    await h.push(20_000, EndFrame())
    h.provider.shutdown()

    # OTLP/JSON: hex ids, integer enums, one request per line.
    first = json.loads(path.read_text().splitlines()[0])
    span = first["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert len(span["traceId"]) == 32 and len(span["spanId"]) == 16
    assert isinstance(span["kind"], int)

    turns = turn_metrics(read_trace_files([path]))
    assert list(turns["turn"]) == [1, 2]
    row = turns.iloc[0]
    assert row["at_s"] == pytest.approx(2.8)
    assert row["endpointing_ms"] == 300      # decided 3100 − speech end 2800
    assert row["asr_final_ms"] == 400        # transcript 3500 − decided 3100
    assert row["ttft_ms"] == 180             # first token 3700 − request 3520
    assert row["first_sentence_ms"] == 30    # TTS start 3730 − first token 3700
    assert row["tts_ttfb_ms"] == 170         # first audio 3900 − TTS start 3730
    assert row["v2v_ms"] == 1110             # bot audio 3910 − speech end 2800
    assert row["turn_e2e_ms"] == 3000        # bot end 5800 − speech end 2800
    assert row["transcript"] == "my claim number"
    assert turns.iloc[1]["transcript"] == "second"

    v2v = stat(turns["v2v_ms"])
    assert v2v.n == 2
    assert v2v.raw["p50"] == 1110


@pytest.mark.asyncio
async def test_missing_stage_is_missing_not_zero(tmp_path):
    from pipecat.frames.frames import UserStoppedSpeakingFrame, VADUserStartedSpeakingFrame, VADUserStoppedSpeakingFrame

    path = tmp_path / "trace.jsonl"
    h = FileHarness(path)
    await h.push(0, StartFrame())
    await h.push(1200, VADUserStartedSpeakingFrame(start_secs=0.2))
    await h.push(2200, VADUserStoppedSpeakingFrame(stop_secs=0.2))
    await h.push(2300, UserStoppedSpeakingFrame())  # no transcript, no reply
    await h.push(9000, EndFrame())
    h.provider.shutdown()
    row = turn_metrics(read_trace_files([path])).iloc[0]
    assert row["endpointing_ms"] == 300
    assert math.isnan(row["v2v_ms"]) and math.isnan(row["ttft_ms"]) and math.isnan(row["asr_final_ms"])


def test_unreadable_lines_are_skipped_and_counted(tmp_path):
    path = tmp_path / "trace.jsonl"
    path.write_text('{"resourceSpans": []}\nnot json\n[1, 2]\n{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": "b7ad6b7169203331", "name": "x", "startTimeUnixNano": "1", "endTimeUnixNano": "2"}]}]}]}\n{"trunc')
    tables = read_trace_files([path])
    assert [line for _, line, _ in tables.skipped_lines] == [2, 3, 5]
    assert list(tables.spans["name"]) == ["x"]
    assert turn_metrics(tables).empty
