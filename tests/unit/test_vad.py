"""Both VAD options find the caller's speech in a sample call (real WebRTC VAD and Silero model)."""

from __future__ import annotations

import asyncio
import json

import pytest
from pipecat.audio.vad.vad_analyzer import VADState

from voicetrace.audio.source import FRAME_MS, iter_pipeline_frames, open_call
from voicetrace.pipelines.reference import PipelineConfig, build_vad

from tests.conftest import SAMPLES


@pytest.mark.parametrize("kind", ["webrtc", "silero"])
def test_vad_finds_the_scripted_speech(kind):
    vad = build_vad(PipelineConfig(llm_base_url="", llm_model="", asr_model_path="", vad=kind))
    vad.set_sample_rate(16000)
    script = json.loads((SAMPLES / "policy_question.json").read_text())
    speaking_s = []
    loop = asyncio.new_event_loop()
    try:
        for index, frame in enumerate(iter_pipeline_frames(open_call(SAMPLES / "policy_question.wav"))):
            if loop.run_until_complete(vad.analyze_audio(frame)) == VADState.SPEAKING:
                speaking_s.append(index * FRAME_MS / 1000)
    finally:
        loop.close()
    for line in script["lines"]:
        inside = [t for t in speaking_s if line["speech_start_s"] <= t <= line["speech_end_s"] + 0.3]
        assert len(inside) > 10, (kind, line["text"])
    outside = [t for t in speaking_s if not any(l["speech_start_s"] <= t <= l["speech_end_s"] + 0.5 for l in script["lines"])]
    assert not outside, (kind, outside[:5])

