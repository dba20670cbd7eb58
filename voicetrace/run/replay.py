"""A replay's pipecat assembly, in one place: the file transports around the reference services
(``pipelines.reference.build_processors``: which services, in which order, for any transport), the
capture hooks (tool sink, VAD positions, LLM timing), warm-up, the worker and when the call is over.

``trace=None`` is the overhead benchmark's baseline: the same replay with no capture at all.
"""

from __future__ import annotations

from dataclasses import dataclass

from voicetrace.audio.recorder import CallRecorder
from voicetrace.audio.source import CallAudio, iter_pipeline_frames
from voicetrace.pipelines.reference import PipelineConfig
from voicetrace.run.backend import LLMBackend
from voicetrace.run.folder import RunFolder
from voicetrace.run.lifecycle import run_worker
from voicetrace.run.options import ProgressFn

_TAIL_IDLE_NS = 1_500_000_000
"""The call is over when no turn is open and the line has been quiet this long."""
_UNCAPTURED_TAIL_S = 10.0
"""Without capture nobody can tell when the last reply has played: a fixed tail."""


@dataclass
class Replay:
    worker: object
    """The PipelineWorker to run."""
    input: object
    """The FileInputTransport (its ``error``: what stopped the feed, if anything)."""


def build_replay(call: CallAudio, config: PipelineConfig, backend: LLMBackend, trace, recorder: CallRecorder,
                 progress: ProgressFn | None, tail_s: float | None, warmup_ms: dict) -> Replay:
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineParams, PipelineWorker

    from voicetrace.pipelines.file_transport import CallTimeline, FileInputTransport, PacedOutputTransport
    from voicetrace.pipelines.reference import build_processors
    from voicetrace.pipelines.warmup import warm_up

    observer = trace.observer if trace is not None else None  # None: the overhead baseline, no capture
    total_s = call.duration_ms / 1000
    holder: dict = {}
    tail_end_ns: list[int] = []

    def call_finished(now_ns: int) -> bool:
        if tail_s is not None or observer is None:  # a fixed tail (benchmarks; no capture to ask)
            if not tail_end_ns:
                tail_end_ns.append(now_ns + int((tail_s if tail_s is not None else _UNCAPTURED_TAIL_S) * 1e9))
            return now_ns >= tail_end_ns[0]
        # The last reply has played out and the line has been quiet for a moment.
        return observer.open_turns == 0 and now_ns - observer.last_activity_mono_ns > _TAIL_IDLE_NS

    async def before_feed() -> None:
        if config.warmup:
            warmup_ms.update(await warm_up(holder["reference"], config))

    async def on_done() -> None:
        if "worker" in holder:
            await holder["worker"].stop_when_done()

    def on_progress(played_s: float) -> None:
        if progress:
            progress(played_s, total_s, observer.turns_completed if observer else 0)

    timeline = CallTimeline()
    input_transport = FileInputTransport(
        iter_pipeline_frames(call),
        timeline,
        recorder,
        on_call_start=observer.start_conversation if observer else (lambda start_ns: None),
        on_progress=on_progress,
        call_finished=call_finished,
        on_done=on_done,
        before_feed=before_feed,
        on_frame_fed=observer.realtime.input_late if observer else None,
    )
    output = PacedOutputTransport(timeline, recorder, on_late=observer.realtime.playback_late if observer else None)
    reference = build_processors(config, input_transport, output,
                                 tool_sink=observer)
    holder["reference"] = reference
    if observer is not None:
        if hasattr(reference.vad, "pop_position_s"):
            observer.use_vad_positions(reference.vad)
        trace.instrument_llm(reference.llm, llama_cpp_timings=backend.llama_cpp_timings,
                             stall_timeout_s=backend.stall_timeout_s)
    worker = PipelineWorker(
        Pipeline(reference.processors),
        params=PipelineParams(audio_in_sample_rate=16_000, audio_out_sample_rate=16_000, enable_metrics=True),
        observers=[observer] if observer is not None else [],
        enable_rtvi=False,
        idle_timeout_secs=None,
    )
    holder["worker"] = worker
    return Replay(worker, input_transport)


async def replay_call(folder: RunFolder, call: CallAudio, config: PipelineConfig, backend: LLMBackend, trace,
                      recorder: CallRecorder, progress: ProgressFn | None, tail_s: float | None,
                      warmup_ms: dict) -> None:
    """Play ``call`` through the pipeline in real time until the last reply has played."""
    replay = build_replay(call, config, backend, trace, recorder, progress, tail_s, warmup_ms)
    await run_worker(replay.worker, folder, backend.server)
    if replay.input.error is not None:
        raise replay.input.error
