"""The LLM a run talks to: a user's OpenAI-compatible server (checked reachable), or the embedded
llama-server started for the run and stopped after it."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from voicetrace import components
from voicetrace.run.options import RunError

EMBEDDED_LLM = "llama-server (embedded)"
EXTERNAL_LLM = "external"


@dataclass(frozen=True)
class LLMBackend:
    base_url: str
    """The OpenAI-compatible API root, ending in ``/v1``."""
    model: str
    server: "LlamaServer | None" = None  # noqa: F821 (voicetrace.servers.llama)
    """The llama-server this run started (watched during the call); None for a user's server."""
    llama_cpp_timings: bool = False
    """Ask for llama.cpp's per-request timings: only the embedded llama-server is known to send them."""
    stall_timeout_s: float | None = 30.0
    """A server silent this long (before answering or mid-stream) ends that turn's LLM call."""

    @property
    def kind(self) -> str:
        return EMBEDDED_LLM if self.server is not None else EXTERNAL_LLM

    def describe(self) -> dict:
        """run.json's ``llm``: which server the run used and how it was asked."""
        return {"server": self.kind, "base_url": self.base_url, "model": self.model,
                "llama_cpp_timings": self.llama_cpp_timings, "stall_timeout_s": self.stall_timeout_s}


def normalise_llm_url(url: str) -> str:
    url = url.rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


def external_backend(url: str, model: str, stall_timeout_s: float | None) -> LLMBackend:
    """A user's server: RunError (exit 4) when nothing answers at ``url``."""
    import httpx

    base_url = normalise_llm_url(url)
    try:
        httpx.get(f"{base_url}/models", timeout=5.0)
    except httpx.HTTPError as exc:
        raise RunError(f"LLM server at {base_url} is not reachable: {type(exc).__name__}") from None
    return LLMBackend(base_url, model, stall_timeout_s=stall_timeout_s)


def embedded_files() -> tuple[Path, Path]:
    """(llama-server binary, GGUF model); RunError when either is not installed."""
    binary, model = components.llama_server_bin(), components.smollm2_gguf()
    if binary is None or model is None:
        what = "llama-server" if binary is None else "the SmolLM2 GGUF"
        raise RunError(f"{what} is not installed: {components.INSTALL_HINT}, or pass --llm-url URL --model NAME")
    return binary, model


@contextmanager
def embedded_backend(files: tuple[Path, Path], log_path: Path, threads: int,
                     stall_timeout_s: float | None) -> Iterator[LLMBackend]:
    """Start llama-server on a free loopback port; it stops when the block ends, however it ends."""
    from voicetrace.servers.llama import LlamaServer, LLMServerError

    binary, model = files
    server = LlamaServer(binary=binary, model=model, log_path=log_path, threads=threads)
    try:
        server.start()
    except BaseException as exc:  # Ctrl-C while the model loads too: the server has its own session
        server.stop()
        if isinstance(exc, LLMServerError):
            raise RunError(str(exc)) from None
        raise
    try:
        yield LLMBackend(f"{server.base_url}/v1", components.SMOLLM2_MODEL_NAME, server=server,
                         llama_cpp_timings=True, stall_timeout_s=stall_timeout_s)
    finally:
        server.stop()
