"""What a run takes and gives back: RunOptions (checked whole before anything is created), RunResult,
the ways a run stops (RunError, RunInterrupted), and ``--set KEY=VALUE`` parsing."""

from __future__ import annotations

import signal
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from voicetrace.audio.source import CallAudio
from voicetrace.errors import RuntimeFailure, UsageError
from voicetrace.pipelines.reference import ASR_MODELS, ASR_MODES, TOOL_MODES, VAD_KINDS, PipelineConfig
from voicetrace.run.folder import RunFolder

ProgressFn = Callable[[float, float, int], None]
"""(call seconds played, call seconds total, turns completed)."""


class RunError(RuntimeFailure):
    """A run that could not start or complete (exit 4); one line for the user."""


class RunInterrupted(Exception):
    """The run was stopped by SIGINT or SIGTERM; what was recorded so far is kept."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@dataclass
class RunOptions:
    call_path: Path
    out_dir: Path = Path("runs")
    llm_url: str | None = None
    llm_model: str | None = None
    caller_channel: int = 0
    capture_content: bool | None = None
    """None: follow OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT."""
    redact: bool = False
    vad: str = "webrtc"
    tools: str = "intent"
    tools_db: Path | None = None
    asr_mode: str = "streaming"
    asr_model: str | None = None
    """None: tiny.en for English, base (multilingual) for any other language."""
    language: str = "en"
    overrides: dict = field(default_factory=dict)
    """PipelineConfig fields to change (tuning and benchmarks), e.g. {"turn_stop_secs": 1.0}."""
    capture: bool = True
    """False: no voicetrace observer or LLM instrumentation at all (the overhead benchmark's baseline)."""
    tail_s: float | None = None
    """Silence fed after the recording; None: until the last reply has played (needs capture)."""
    service_name: str = "voicetrace"
    run_id: str | None = None
    otlp: "OtlpTarget | None" = None  # noqa: F821 (voicetrace.otel)
    """Also send spans live to this OTLP backend."""
    environment: str | None = None
    """deployment.environment; None: OTEL_RESOURCE_ATTRIBUTES or ``local``."""
    on_warning: Callable[[str], None] | None = None
    """Called (at most once per problem) with a one-line warning: odd input, live export trouble."""
    llm_stall_timeout_s: float = 30.0
    """An LLM server silent this long (before its answer or mid-stream) ends the turn's LLM call."""
    prometheus_port: int | None = None
    """Serve the call's metrics for Prometheus on this port (loopback; OTEL_EXPORTER_PROMETHEUS_HOST)."""
    prometheus_linger_s: float = 0.0
    """After the call, keep the scrape endpoint up until one more scrape, at most this long."""

    @property
    def asr_model_name(self) -> str:
        return self.asr_model or ("tiny.en" if self.language == "en" else "base")

    def pipeline_settings(self) -> dict:
        """The PipelineConfig fields these options choose, ``overrides`` applied last."""
        return {"vad": self.vad, "tools": self.tools, "tools_db": str(self.tools_db or ""), "asr_mode": self.asr_mode,
                "asr_model_name": self.asr_model_name, "asr_language": self.language, **self.overrides}

    def validate(self) -> None:
        """Every usage mistake as a UsageError (exit 2), before any folder, file or server exists."""
        if self.llm_url is not None and not self.llm_url.strip():
            raise UsageError("--llm-url is empty: give http://HOST:PORT of an OpenAI-compatible server")
        if self.llm_url and not self.llm_model:
            raise UsageError("--llm-url needs --model NAME (the model the server serves)")
        check_overrides(self.overrides)
        chosen = self.pipeline_settings()
        for flag, key, allowed in (("--vad", "vad", VAD_KINDS), ("--asr", "asr_mode", ASR_MODES),
                                   ("--asr-model", "asr_model_name", ASR_MODELS), ("--tools", "tools", TOOL_MODES)):
            if chosen[key] not in allowed:
                raise UsageError(f"{flag} must be {_one_of(allowed)}, not {chosen[key]!r}")
        if chosen["asr_model_name"] == "tiny.en" and chosen["asr_language"] != "en":
            raise UsageError(
                f"Whisper tiny.en is English-only: use --asr-model base for --language {chosen['asr_language']}")
        if not self.llm_stall_timeout_s > 0:
            raise UsageError(f"--llm-timeout-s must be positive, not {self.llm_stall_timeout_s:g}")
        if self.tail_s is not None and not self.tail_s >= 0:
            raise UsageError(f"the tail must be 0 s or more, not {self.tail_s:g}")
        if self.prometheus_port is not None and not 0 <= self.prometheus_port <= 65535:
            raise UsageError(f"--prometheus-port must be 0-65535, not {self.prometheus_port}")
        if not self.prometheus_linger_s >= 0:
            raise UsageError(f"--prometheus-linger-s must be 0 or more, not {self.prometheus_linger_s:g}")
        if self.caller_channel < 0:
            raise UsageError(f"--caller-channel must be 0 or more, not {self.caller_channel}")
        if self.run_id is not None and (self.run_id in ("", ".", "..") or "/" in self.run_id or "\\" in self.run_id):
            raise UsageError(f"--run-id {self.run_id!r}: expected a folder name (no slashes)")
        out = Path(self.out_dir)
        if out.exists() and not out.is_dir():
            raise UsageError(f"--out {out}: is a file, expected a folder")
        if self.run_id and (out / self.run_id).exists():
            raise UsageError(f"run folder already exists: {out / self.run_id}")


@dataclass
class RunResult:
    run_id: str
    run_dir: Path
    call: CallAudio
    turns: int
    spans_written: int
    wall_seconds: float
    interrupted: bool = False
    warnings: list[str] = field(default_factory=list)
    warmup_ms: dict = field(default_factory=dict)
    """Milliseconds each model took to warm up before call time zero."""
    otlp: "ExportStats | None" = None  # noqa: F821 (voicetrace.otel)
    realtime: dict | None = None
    """capture.realtime.RealTimeCheck.summary(): did the replay keep up with real time (run.json)."""

    @property
    def folder(self) -> RunFolder:
        return RunFolder(self.run_dir)

    @property
    def trace_path(self) -> Path:
        return self.folder.trace


# --- pipeline settings: --set KEY=VALUE -------------------------------------------------------

_SETTINGS = typing.get_type_hints(PipelineConfig)


def _one_of(allowed) -> str:
    return ", ".join(allowed[:-1]) + f" or {allowed[-1]}" if len(allowed) > 1 else allowed[0]


def _allowed_types(key: str) -> tuple[type, ...]:
    hint = _SETTINGS[key]
    return typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)


def _accepts(key: str, value) -> bool:
    allowed = _allowed_types(key)
    if value is None:
        return type(None) in allowed
    if isinstance(value, bool):
        return bool in allowed
    if isinstance(value, int) and int in allowed:
        return True
    if isinstance(value, (int, float)):
        return float in allowed
    return isinstance(value, str) and str in allowed


def _type_name(key: str) -> str:
    names = {bool: "true or false", int: "a whole number", float: "a number", str: "text", type(None): "none"}
    return " or ".join(names[t] for t in _allowed_types(key))


def check_overrides(overrides: dict) -> None:
    """UsageError unless every key is a PipelineConfig field and every value has that field's type."""
    for key, value in overrides.items():
        if key not in _SETTINGS:
            raise UsageError(f"unknown pipeline setting {key!r}: expected one of {', '.join(sorted(_SETTINGS))}")
        if not _accepts(key, value):
            raise UsageError(f"pipeline setting {key}={value!r}: expected {_type_name(key)}")


def parse_value(key: str, raw: str):
    """``raw`` as the type of PipelineConfig field ``key`` (true/false, numbers, none; text stays text)."""
    allowed = _allowed_types(key)
    lowered = raw.strip().lower()
    if type(None) in allowed and lowered in ("none", "null"):
        return None
    if bool in allowed:
        if lowered in ("true", "false"):
            return lowered == "true"
        raise UsageError(f"--set {key}={raw}: expected true or false")
    for cast in (int, float):
        if cast in allowed:
            try:
                return cast(raw)
            except ValueError:
                continue
    if str in allowed:
        return raw
    raise UsageError(f"--set {key}={raw}: expected {_type_name(key)}")


def parse_settings(items: list[str]) -> dict:
    """``--set KEY=VALUE`` pairs → PipelineConfig overrides; UsageError on a bad pair."""
    out: dict = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or key not in _SETTINGS:
            raise UsageError(f"--set {item!r}: expected KEY=VALUE with KEY one of {', '.join(sorted(_SETTINGS))}")
        out[key] = parse_value(key, raw)
    return out
