"""The acoustic check of run folders: find each trace's call.wav, analyse it, compare (I/O here only).

``join_acoustic`` is the report pipeline's acoustic step (voicetrace.report): Report → new Report.
"""

from __future__ import annotations


import dataclasses
from pathlib import Path

import pandas as pd

from voicetrace import semconv as sc
from voicetrace.acoustic.check import AcousticCheck, compare_turns, disagreements
from voicetrace.acoustic.conversation import BARGE_IN_COLUMNS, ConversationAnalysis, analyze_segments
from voicetrace.acoustic.levels import frame_levels, recording_info
from voicetrace.audio.file import AudioInputError
from voicetrace.acoustic.vad import VadConfig, speech_segments, threshold_db
from voicetrace.run.folder import RunFolder


def analyze_recording(path: Path, caller_channel: int = 0, agent_channel: int = 1,
                      config: VadConfig = VadConfig(), long_silence_ms: float = 2000.0) -> ConversationAnalysis:
    """Stream ``path``, find speech per channel, and analyse the conversation (raises AudioInputError)."""
    info = recording_info(path, min_channels=2)
    for name, channel in (("caller", caller_channel), ("agent", agent_channel)):
        if not 0 <= channel < info.channels:
            raise AudioInputError(f"{path}: has {info.channels} channels; {name} channel {channel} does not exist")
    if caller_channel == agent_channel:
        raise AudioInputError(f"caller and agent channel are both {caller_channel}; they must differ")
    levels = frame_levels(info, [caller_channel, agent_channel])
    caller = speech_segments(levels.db[0], config)
    agent = speech_segments(levels.db[1], dataclasses.replace(config, extend_db=config.agent_extend_db))
    result = analyze_segments(caller, agent, info.duration_ms, long_silence_ms)
    result.meta = {
        "recording": str(path), "sample_rate": info.sample_rate, "channels": info.channels,
        "format": f"{info.format}/{info.subtype}", "caller_channel": caller_channel, "agent_channel": agent_channel,
        "caller_threshold_dbfs": round(threshold_db(levels.db[0], config), 1),
        "agent_threshold_dbfs": round(threshold_db(levels.db[1], config), 1),
        "vad": {"kind": "energy", "frame_ms": levels.frame_ms, **config.to_dict()},
    }
    return result


def recordings_for(tables) -> dict[str, Path]:
    """trace_id → the call recording of the run folder its trace file was read from (run folders only)."""
    spans = tables.spans
    conv = spans[spans["name"] == sc.SPAN_CONVERSATION]
    found = {}
    for trace_id, source in zip(conv["trace_id"], conv["source"]):
        if not isinstance(source, str) or not source:
            continue
        wav = RunFolder.of(Path(source)).call_recording
        if wav.is_file():
            found[trace_id] = wav
    return found


def join_acoustic(report, recordings: dict[str, Path] | None = None):
    """The report with CHECK_COLUMNS added to its turns and ``acoustic`` set, when its traces have
    recordings; the report unchanged otherwise. ``report`` itself is not modified."""
    columns, check = acoustic_check(report.turns, report.tables, recordings)
    if check is None:
        return report
    return dataclasses.replace(report, turns=report.turns.assign(**columns), acoustic=check)


def acoustic_check(turns: pd.DataFrame, tables, recordings: dict[str, Path] | None = None
                   ) -> tuple[dict, AcousticCheck | None]:
    """CHECK_COLUMNS for ``turns`` (turn_metrics rows, by column name) and the AcousticCheck; ({}, None)
    when no trace has a recording. A recording that can't be read is a warning; the event report stands.
    """
    recordings = recordings_for(tables) if recordings is None else recordings
    if not recordings:
        return {}, None
    analyses, warnings = {}, []
    for trace_id, path in recordings.items():
        try:
            analyses[trace_id] = analyze_recording(path)
        except AudioInputError as exc:
            warnings.append(f"acoustic check skipped: {exc}")
    spans = tables.spans
    conv = spans[spans["name"] == sc.SPAN_CONVERSATION]
    starts = {(t, s): int(v) for t, s, v in zip(conv["trace_id"], conv["span_id"], conv["start_ns"])}
    checked = compare_turns(turns, starts, analyses)
    columns = {col: checked[col].to_numpy() for col in checked.columns}
    names = dict(zip(turns["trace_id"], turns["conversation"]))
    barge = [a.barge_ins.assign(conversation=names.get(tid, tid[:8])) for tid, a in analyses.items() if len(a.barge_ins)]
    barge_ins = (pd.concat(barge, ignore_index=True) if barge
                 else pd.DataFrame(columns=["conversation"] + BARGE_IN_COLUMNS))[["conversation"] + BARGE_IN_COLUMNS]
    vad = next(iter(analyses.values())).meta.get("vad", {}) if analyses else {}
    check = AcousticCheck(recordings={k: str(v) for k, v in recordings.items()}, analyses=analyses,
                          barge_ins=barge_ins, warnings=warnings + disagreements(turns.assign(**columns)), vad=vad)
    return columns, check
