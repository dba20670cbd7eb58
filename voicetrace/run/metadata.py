"""What run.json says about a run: its id, the call, the pipeline, the LLM, the host and versions, the outcome."""

from __future__ import annotations

import os
import platform
import secrets
from datetime import datetime, timezone
from pathlib import Path

from voicetrace import __version__

_VERSIONED = ("pipecat-ai", "faster-whisper", "piper-tts", "opentelemetry-sdk", "webrtcvad-wheels", "onnxruntime")


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat()


def new_run_id(call: Path) -> str:
    """``YYYYmmdd-HHMMSS-<call stem>-<4 hex>``: sorts by time, names the call, never collides in practice."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{Path(call).stem}-{secrets.token_hex(2)}"


def host_info() -> dict:
    cpu_model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "hostname": platform.node(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model,
    }


def versions() -> dict:
    import importlib.metadata as md

    out = {"voicetrace": __version__}
    for dist in _VERSIONED:
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            pass
    return out


def started_info(run_id: str, call, notes: list[str], pipeline: dict, llm: dict, capture_content: bool,
                 redact: bool) -> dict:
    """run.json as the run starts (status ``running``)."""
    return {
        "run_id": run_id,
        "started_at": now_iso(),
        "call": {
            "file": str(call.path),
            "sample_rate": call.sample_rate,
            "channels": call.channels,
            "caller_channel": call.caller_channel,
            "duration_ms": call.duration_ms,
            "format": f"{call.format}/{call.subtype}",
            "notes": notes,
        },
        "pipeline": pipeline,
        "llm": llm,
        "capture_content": capture_content,
        "redact": redact,
        "versions": versions(),
        "host": host_info(),
        "status": "running",
    }


def finished_info(info: dict, result, otlp_target=None) -> dict:
    """run.json at the end: the outcome added (the status was set by whoever saw the run stop)."""
    if info["status"] == "running":
        info["status"] = "complete"
    info.update(
        finished_at=now_iso(),
        turns=result.turns,
        spans_written=result.spans_written,
        warmup_ms=result.warmup_ms,
        wall_seconds=round(result.wall_seconds, 3),
    )
    if getattr(result, "realtime", None) is not None:
        info["behind_real_time"] = result.realtime
    if otlp_target is not None and result.otlp is not None:
        info["otlp"] = {"endpoint": otlp_target.endpoint, "protocol": otlp_target.protocol,
                        "spans_sent": result.otlp.spans_sent, "spans_undelivered": result.otlp.spans_undelivered}
    return info
