"""Start llama.cpp's llama-server on a free loopback port, wait for /health, stop it.

Used as a context manager so the server stops on normal exit, on error and on Ctrl-C.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx


class LLMServerError(Exception):
    """The LLM server could not be started or reached; one line for the user."""


def free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LlamaServer:
    binary: Path
    model: Path
    log_path: Path
    context_size: int = 4096
    parallel_slots: int = 1
    threads: int = 1
    startup_timeout_s: float = 120.0
    port: int = field(default_factory=free_loopback_port)
    process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        return [
            str(self.binary),
            "-m", str(self.model),
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "-c", str(self.context_size),
            "-np", str(self.parallel_slots),
            "-t", str(self.threads),
            "--metrics",
            "--no-webui",
        ]

    def start(self) -> "LlamaServer":
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        env = dict(os.environ, LD_LIBRARY_PATH=f"{self.binary.parent}:{os.environ.get('LD_LIBRARY_PATH', '')}")
        try:
            # Own process group: a Ctrl-C in the terminal reaches us, and we stop the server ourselves.
            self.process = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        except OSError as exc:
            raise LLMServerError(f"could not start {self.binary}: {exc}") from None
        finally:
            log.close()
        self._wait_healthy()
        return self

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        with httpx.Client(timeout=2.0) as client:
            while time.monotonic() < deadline:
                if self.process is not None and self.process.poll() is not None:
                    raise LLMServerError(
                        f"llama-server exited with code {self.process.returncode} during start-up; see {self.log_path}"
                    )
                try:
                    if client.get(f"{self.base_url}/health").status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                time.sleep(0.1)  # polling interval while the model loads
        self.stop()
        raise LLMServerError(f"llama-server not healthy after {self.startup_timeout_s:.0f} s; see {self.log_path}")

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=5)
        except ProcessLookupError:
            pass

    def __enter__(self) -> "LlamaServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
