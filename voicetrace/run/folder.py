"""A run folder, ``runs/<run-id>/``: the only place that knows its file names and run.json."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

TRACE = "trace.jsonl"
BOT_AUDIO = "bot.wav"
CALL_RECORDING = "call.wav"
"""Stereo: caller left (channel 0), bot right (channel 1), one timeline."""
RUN_INFO = "run.json"
LLAMA_LOG = "llama-server.log"
PIPELINE_LOG = "pipeline.log"
CALLER_SCRATCH = ".caller.wav"
"""The caller's track while the call runs; merged into CALL_RECORDING and removed at the end."""


@dataclass(frozen=True)
class RunFolder:
    path: Path

    @property
    def trace(self) -> Path:
        return self.path / TRACE

    @property
    def bot_audio(self) -> Path:
        return self.path / BOT_AUDIO

    @property
    def call_recording(self) -> Path:
        return self.path / CALL_RECORDING

    @property
    def info_path(self) -> Path:
        return self.path / RUN_INFO

    @property
    def llama_log(self) -> Path:
        return self.path / LLAMA_LOG

    @property
    def pipeline_log(self) -> Path:
        return self.path / PIPELINE_LOG

    @property
    def caller_scratch(self) -> Path:
        return self.path / CALLER_SCRATCH

    @classmethod
    def of(cls, path: Path) -> "RunFolder":
        """The run folder a path names: the folder itself, or the folder of a file inside it."""
        path = Path(path)
        return cls(path if path.is_dir() else path.parent)

    def read_info(self) -> dict | None:
        """run.json, or None when it is missing or unreadable (a trace copied out of its folder)."""
        try:
            info = json.loads(self.info_path.read_text())
        except (OSError, ValueError):
            return None
        return info if isinstance(info, dict) else None

    def write_info(self, info: dict) -> None:
        """Atomically: a reader never sees half a run.json."""
        tmp = self.info_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(info, indent=2, default=str))
        tmp.replace(self.info_path)
