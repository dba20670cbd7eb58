"""A real Jaeger (in-memory storage, loopback, free ports) for the integration tests.

The binary is built once per machine by scripts/build-jaeger.sh (a no-op when cached) and run
with dashboards/jaeger.yaml, the same configuration `make jaeger` uses.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import httpx

from tests.conftest import wait_for

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("VOICETRACE_CACHE", Path.home() / ".cache" / "voicetrace"))
CONFIG = ROOT / "dashboards" / "jaeger.yaml"


def jaeger_binary() -> Path:
    binary = CACHE / "bin" / "jaeger"
    if not binary.exists():
        subprocess.run([str(ROOT / "scripts" / "build-jaeger.sh")], check=True, timeout=3600)
    return binary


def free_ports(count: int) -> list[int]:
    socks = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            socks.append(sock)
        return [s.getsockname()[1] for s in socks]
    finally:
        for sock in socks:
            sock.close()


class Jaeger:
    def __init__(self, log_path: Path) -> None:
        self.grpc_port, self.http_port, self.query_port, self.query_grpc_port, self.health_port = free_ports(5)
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None

    @property
    def query_url(self) -> str:
        return f"http://127.0.0.1:{self.query_port}"

    @property
    def otlp_grpc(self) -> str:
        return f"http://127.0.0.1:{self.grpc_port}"

    @property
    def otlp_http(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def start(self) -> "Jaeger":
        env = dict(
            os.environ,
            JAEGER_LISTEN_HOST="127.0.0.1",
            JAEGER_OTLP_GRPC_PORT=str(self.grpc_port),
            JAEGER_OTLP_HTTP_PORT=str(self.http_port),
            JAEGER_QUERY_PORT=str(self.query_port),
            JAEGER_QUERY_GRPC_PORT=str(self.query_grpc_port),
            JAEGER_HEALTH_PORT=str(self.health_port),
        )
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([str(jaeger_binary()), "--config", str(CONFIG)], env=env,
                                     stdout=log, stderr=subprocess.STDOUT)
        log.close()
        wait_for(self._ready, 120, f"Jaeger to answer (log: {self.log_path})")
        return self

    def _ready(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"Jaeger exited with {self.proc.returncode}: {self.log_tail()}")
        try:
            health = httpx.get(f"http://127.0.0.1:{self.health_port}/status", timeout=1)
            query = httpx.get(f"{self.query_url}/api/v3/services", timeout=1)
        except httpx.HTTPError:
            return False
        if health.status_code != 200 or query.status_code != 200:
            return False
        for port in (self.grpc_port, self.http_port):
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) != 0:
                    return False
        return True

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    # --- query helpers (raw API, for the tests' own checks) --------------------------------
    def services(self) -> list[str]:
        return httpx.get(f"{self.query_url}/api/v3/services", timeout=5).json().get("services") or []

    def find_v3(self, service: str, lookback_s: float = 3600, num_traces: int = 20) -> dict:
        from voicetrace.traces.jaeger import _rfc3339

        now = time.time_ns()
        response = httpx.get(f"{self.query_url}/api/v3/traces", timeout=5, params={
            "query.service_name": service,
            "query.start_time_min": _rfc3339(now - int(lookback_s * 1e9)),
            "query.start_time_max": _rfc3339(now + 60 * 10**9),
            "query.num_traces": num_traces,
            "query.raw_traces": "true",
        })
        return response.json() if response.status_code == 200 else {}
