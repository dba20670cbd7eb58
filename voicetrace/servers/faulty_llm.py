"""The scripted LLM server with fault modes: a real local HTTP server that misbehaves on cue.

For robustness tests (issue 8): pick a fault per caller turn (the number of user messages in
the request, so the client's retries of one turn get the same fault), everything else is the
scripted server's normal streaming reply.

    faults = {1: Fault("http_500"), 2: Fault("stall", tokens_before=2), 3: Fault("malformed_sse")}
    with FaultyLLMServer(Script([Reply("All good.")]), faults) as server: ...

Fault kinds:
  ``http_500``       answers 500 with an OpenAI-style error body
  ``stall``          streams ``tokens_before`` tokens, then sends nothing until the client gives up
  ``malformed_sse``  streams ``tokens_before`` tokens, then an event whose data is not JSON
  ``drop``           closes the connection without an answer
  ``refuse``         stops listening (every later request is refused) and drops this one
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field

from aiohttp import web

from voicetrace.servers.scripted_llm import RecordedRequest, Script, ScriptedLLMServer, _chunk

FAULT_KINDS = ("http_500", "stall", "malformed_sse", "drop", "refuse")


@dataclass
class Fault:
    kind: str
    tokens_before: int = 2
    """stall / malformed_sse: content tokens streamed before the fault."""
    max_stall_s: float = 120.0
    """stall: give up stalling after this long even if the client is still waiting."""

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault {self.kind!r}; one of {', '.join(FAULT_KINDS)}")


@dataclass
class ServedFault:
    turn: int
    kind: str
    received_ns: int
    client_gone_ns: int | None = None
    """stall: when the server saw the client close the connection (monotonic ns)."""


def user_turn(body: dict) -> int:
    """Which caller turn a request answers: the number of user messages in it."""
    messages = body.get("messages") if isinstance(body, dict) else None
    return sum(1 for m in messages or () if isinstance(m, dict) and m.get("role") == "user")


class FaultyLLMServer(ScriptedLLMServer):
    def __init__(self, script: Script | None = None, faults: dict[int, Fault] | None = None,
                 host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(script, host=host, port=port)
        self.faults = dict(faults or {})
        self.served: list[ServedFault] = []
        self._sites: list[web.BaseSite] = []

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        received_ns = time.monotonic_ns()
        body = await request.json()  # aiohttp keeps the body: the scripted handler can read it again
        fault = self.faults.get(user_turn(body))
        if fault is None:
            return await super()._chat(request)
        self.requests.append(RecordedRequest(received_ns, dict(request.headers), body))
        served = ServedFault(user_turn(body), fault.kind, received_ns)
        self.served.append(served)
        if fault.kind == "http_500":
            return web.json_response({"error": {"message": "scripted internal error", "type": "server_error"}},
                                     status=500)
        if fault.kind in ("drop", "refuse"):
            if fault.kind == "refuse":
                await self._stop_listening()
            request.transport.close()
            return web.Response(status=500)  # never sent: the connection is gone
        model = body.get("model", "scripted")
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        await response.write(_chunk(model, {"role": "assistant", "content": ""}))
        for token in self.script.pick(body).tokens()[: fault.tokens_before]:
            await response.write(_chunk(model, {"content": token}))
        if fault.kind == "malformed_sse":
            await response.write(b'data: {"id": "chatcmpl-scripted", "choices": [{"delta": {"content": "tru\n\n')
            await response.write(b"data: [DONE]\n\n")
            await response.write_eof()
            return response
        # stall: hold the connection open, sending nothing, until the client hangs up.
        deadline = time.monotonic() + fault.max_stall_s
        while time.monotonic() < deadline:
            transport = request.transport
            if transport is None or transport.is_closing():
                served.client_gone_ns = time.monotonic_ns()
                break
            await asyncio.sleep(0.05)  # polling the connection state, not synchronising
        return response

    async def _stop_listening(self) -> None:
        for site in list(self._runner.sites):
            await site.stop()

    @property
    def faults_served(self) -> list[tuple[int, str]]:
        return [(s.turn, s.kind) for s in self.served]


def main() -> None:  # pragma: no cover - a manual aid
    import argparse
    import threading

    parser = argparse.ArgumentParser(description="scripted LLM server with faults per caller turn")
    parser.add_argument("--port", type=int, default=8099)
    parser.add_argument("--fault", action="append", default=[], help="TURN:KIND, e.g. 2:stall (repeatable)")
    args = parser.parse_args()
    faults = {int(t): Fault(k) for t, k in (spec.split(":", 1) for spec in args.fault)}
    server = FaultyLLMServer(faults=faults, port=args.port).start()
    print(f"faulty scripted LLM server on {server.base_url}: {json.dumps({t: f.kind for t, f in faults.items()})}",
          flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
