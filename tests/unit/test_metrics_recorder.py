"""The observer's metrics: the numbers of a scripted call (fake clock), and the same numbers the report
reads back from the spans the observer wrote for that call."""

from __future__ import annotations

import json

import numpy as np
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from pipecat.frames.frames import EndFrame, ErrorFrame, StartFrame, TTSAudioRawFrame

from tests.unit.test_observer import Harness, audio, play_turn
from voicetrace import metric_names as mn
from voicetrace.otel.jsonl import spans_to_otlp_json
from voicetrace.report import build_report
from voicetrace.traces.files import read_trace_files


class MetricsHarness(Harness):
    def __init__(self, **options) -> None:
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])
        super().__init__(meter_provider=self.meter_provider,
                         metric_attributes={mn.ATTR_SERVICE: "agent", mn.ATTR_ENVIRONMENT: "test"},
                         stage_attributes={"llm": {"gen_ai.request.model": "smol"}}, **options)

    def points(self) -> dict[str, list]:
        """Instrument name → its data points, once every handed-off turn is recorded."""
        assert self.observer.metrics.flush(5.0)
        data = self.reader.get_metrics_data()
        out: dict[str, list] = {}
        for rm in data.resource_metrics if data else []:
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    out[metric.name] = list(metric.data.data_points)
        return out


def total(points, **attrs) -> float:
    """Sum of counter values / histogram sums over the points whose attributes include ``attrs``."""
    chosen = [p for p in points if all(p.attributes.get(k) == v for k, v in attrs.items())]
    return sum(getattr(p, "sum", None) if hasattr(p, "bucket_counts") else p.value for p in chosen)


@pytest.mark.asyncio
async def test_scripted_turn_gives_each_histogram_its_stage_time():
    h = MetricsHarness()
    await h.push(0, StartFrame())
    await play_turn(h, 800)  # the timings test_observer's exact-span test spells out
    await h.push(9000, EndFrame())
    p = h.points()
    single = {name: (pts[0].count, pts[0].sum) for name, pts in p.items() if hasattr(pts[0], "bucket_counts")
              and len(pts) == 1}
    # user speech ends 2800, decided 3100, transcript 3500, request 3520, tokens 3700/3710/3725,
    # TTS text 3730, TTS audio 3900, bot audio 3910, bot stops 5800, LLM ends 3740.
    assert single[mn.V2V.name] == (1, 1110)
    assert single[mn.ENDPOINTING.name] == (1, 300)
    assert single[mn.ASR_FINAL.name] == (1, 400)
    assert single[mn.FIRST_SENTENCE.name] == (1, 30)
    assert single[mn.TTS_TTFB.name] == (1, 170)
    assert single[mn.TURN_E2E.name] == (1, 3000)
    assert single[mn.TTFT.name] == (1, pytest.approx(0.180))
    assert single[mn.LLM_E2E.name] == (1, pytest.approx(0.220))
    assert single[mn.ITL.name] == (2, pytest.approx(0.025))  # gaps of 10 and 15 ms
    assert single[mn.TPOT.name] == (1, pytest.approx(12.5))
    assert total(p[mn.TURNS.name]) == 1
    assert total(p[mn.OVER_BUDGET.name]) == 1  # 1110 ms > the 1000 ms budget
    assert total(p[mn.BARGE_INS.name]) == 0
    assert total(p[mn.TOKEN_USAGE.name], **{mn.ATTR_TOKEN_TYPE: "output"}) == 3
    v2v = p[mn.V2V.name][0]
    assert dict(v2v.attributes) == {mn.ATTR_SERVICE: "agent", mn.ATTR_ENVIRONMENT: "test", mn.ATTR_MODEL: "smol"}
    # 1110 ms falls in the (1000, 1200] bucket: explicit voice boundaries, not the SDK's defaults.
    assert tuple(v2v.explicit_bounds) == mn.LATENCY_BOUNDARIES_MS
    assert v2v.bucket_counts[mn.LATENCY_BOUNDARIES_MS.index(1200)] == 1
    # Exemplars carry the turn's trace id (the SDK's trace-based filter keeps sampled contexts).
    turn = h.one("turn")
    assert {e.trace_id for e in v2v.exemplars} == {turn.context.trace_id}


@pytest.mark.asyncio
async def test_no_conversation_id_or_text_reaches_a_metric():
    h = MetricsHarness()
    await h.push(0, StartFrame())
    await play_turn(h, 800, text="my claim number is 12345")
    await h.push(9000, EndFrame())
    labels = {str(v) for pts in h.points().values() for point in pts for v in point.attributes.values()}
    keys = {k for pts in h.points().values() for point in pts for k in point.attributes}
    assert "call-1" not in labels and not any("12345" in v for v in labels)
    assert keys <= {a for i in mn.INSTRUMENTS for a in i.attributes}


@pytest.mark.asyncio
async def test_stage_errors_are_counted_as_the_spans_carry_them():
    h = MetricsHarness()
    await h.push(0, StartFrame())
    await play_turn(h, 800)
    # Second turn: TTS fails before any audio (pipecat's ErrorFrame from the TTS stage).
    from pipecat.frames.frames import (BotStartedSpeakingFrame, BotStoppedSpeakingFrame, LLMFullResponseEndFrame,
                                       LLMFullResponseStartFrame, LLMTextFrame, UserStoppedSpeakingFrame,
                                       VADUserStartedSpeakingFrame, VADUserStoppedSpeakingFrame)

    from pipecat.services.tts_service import TTSService

    class FailingTTS(TTSService):
        async def run_tts(self, text, context_id=None):
            yield None

    await h.push(10_200, VADUserStartedSpeakingFrame(start_secs=0.2))
    await h.push(12_200, VADUserStoppedSpeakingFrame(stop_secs=0.2))
    await h.push(12_300, UserStoppedSpeakingFrame())
    await h.push(12_400, LLMFullResponseStartFrame())
    await h.push(12_500, LLMTextFrame("Hi"))
    await h.push(12_600, LLMFullResponseEndFrame())
    await h.push(12_700, ErrorFrame(error="TTS failed: voice missing"), source=FailingTTS(sample_rate=16000))
    await h.push(12_750, ErrorFrame(error="something else"))  # no stage: counted as other, on no span
    await h.push(12_800, audio())
    await h.push(12_810, BotStartedSpeakingFrame())
    await h.push(13_000, BotStoppedSpeakingFrame())
    await h.push(20_000, EndFrame())
    errors = h.points()[mn.ERRORS.name]
    error_spans = [s for s in h.exporter.get_finished_spans() if s.status.status_code.name == "ERROR"]
    by_stage = {}
    for point in errors:
        by_stage[point.attributes[mn.ATTR_STAGE]] = by_stage.get(point.attributes[mn.ATTR_STAGE], 0) + point.value
    on_spans = {stage: n for stage, n in by_stage.items() if stage in ("llm", "tts", "tool")}
    assert on_spans == {"llm": 0, "tts": 1, "tool": 0}
    assert [s.name for s in error_spans] == ["tts"]
    assert by_stage["other"] == 1 and by_stage["asr"] == 0
    assert set(by_stage) == set(mn.ERROR_STAGES)  # every stage has a series, zero or not


@pytest.mark.asyncio
async def test_metrics_equal_the_report_on_the_spans_of_the_same_call(tmp_path):
    h = MetricsHarness()
    await h.push(0, StartFrame())
    for i, t0 in enumerate((800, 10_800, 20_800)):
        await play_turn(h, t0)
    await h.push(30_000, EndFrame())
    trace = tmp_path / "trace.jsonl"
    trace.write_text(json.dumps(spans_to_otlp_json(h.exporter.get_finished_spans())) + "\n")
    report = build_report(read_trace_files([trace]))
    p = h.points()
    for inst, column, scale in ((mn.V2V, "v2v_ms", 1), (mn.TTFT, "ttft_ms", 1000), (mn.ENDPOINTING, "endpointing_ms", 1),
                                (mn.ASR_FINAL, "asr_final_ms", 1), (mn.TTS_TTFB, "tts_ttfb_ms", 1),
                                (mn.FIRST_SENTENCE, "first_sentence_ms", 1), (mn.TURN_E2E, "turn_e2e_ms", 1)):
        values = report.turns[column].to_numpy(dtype=float)
        (point,) = p[inst.name]
        assert point.count == len(values), inst.name
        assert point.sum * scale == pytest.approx(np.sum(values)), inst.name
        assert point.max * scale == pytest.approx(np.max(values)), inst.name
    assert total(p[mn.TURNS.name]) == report.summary.turns == 3


def test_v2v_ends_where_the_bot_became_audible():
    """As the report reads it: caller speech end → the bot's first audible frame (not the first frame played)."""
    from voicetrace.capture.turn_observations import turn_observations
    from voicetrace.capture.turn_record import TurnRecord

    ms = 1_000_000
    rec = TurnRecord(number=1, speech_start_ns=1_000 * ms)
    rec.speech_end_ns, rec.committed_ns = 2_000 * ms, 2_300 * ms
    rec.bot_start_ns, rec.bot_audible_ns, rec.bot_end_ns = 3_000 * ms, 3_045 * ms, 4_000 * ms
    v2v = [value for inst, value, _ in turn_observations(rec, 1000.0) if inst is mn.V2V]
    assert v2v == [pytest.approx(1_045.0)]
    rec.bot_audible_ns = None  # an older pipeline without the onset detector: the first frame played
    assert [value for inst, value, _ in turn_observations(rec, 1000.0) if inst is mn.V2V] == [pytest.approx(1_000.0)]
