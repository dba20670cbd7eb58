"""A real local HTTP server that streams OpenAI-format chat completions from a script.

For tests and benchmarks: it injects a known time to first token and known gaps between
tokens, can answer with a tool call, and records every request (headers and body), so
voicetrace's measured TTFT / ITL / traceparent can be checked against the truth.

    python -m voicetrace.servers.scripted_llm --port 8099 --ttft-ms 120 --itl-ms 15
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import threading
import time
from dataclasses import dataclass, field

from aiohttp import web


@dataclass
class Reply:
    text: str = "Your claim is approved. The payment goes out this week."
    ttft_ms: float = 100.0
    itl_ms: float | list[float] = 15.0
    tokens_per_chunk: int = 1
    tool_call: dict | None = None
    """{"name": ..., "arguments": {...}}: answer with this tool call instead of text."""
    when_user_contains: str | None = None
    """Use this reply only when the last user message contains this (case-insensitive)."""
    once: bool = False

    def tokens(self) -> list[str]:
        words = self.text.split(" ")
        return [w if i == 0 else " " + w for i, w in enumerate(words)]


@dataclass
class RecordedRequest:
    received_ns: int
    headers: dict
    body: dict
    content_sent_ns: list[int] = field(default_factory=list)
    """When each content chunk actually left the server (monotonic ns, after the socket write)."""


@dataclass
class Script:
    replies: list[Reply] = field(default_factory=lambda: [Reply()])
    sequential: bool = False
    """Answer request i with reply i (the last one repeats), ignoring the conditions."""
    served: int = 0

    @classmethod
    def from_json(cls, data: dict) -> "Script":
        return cls([Reply(**r) for r in data.get("replies", [])] or [Reply()], bool(data.get("sequential")))

    def pick(self, body: dict) -> Reply:
        if self.sequential:
            self.served += 1
            return self.replies[min(self.served, len(self.replies)) - 1]
        last_user, after_tool = "", False
        for message in body.get("messages", []):
            if message.get("role") == "user":
                last_user, after_tool = str(message.get("content") or "").lower(), False
            elif message.get("role") == "tool":
                after_tool = True
        for reply in self.replies:
            if reply.when_user_contains is None:
                continue
            if reply.when_user_contains.lower() in last_user and not (reply.tool_call and after_tool):
                if reply.once and getattr(reply, "_used", False):
                    continue
                reply._used = True
                return reply
        return next((r for r in self.replies if r.when_user_contains is None), Reply())


def _chunk(model: str, delta: dict, finish: str | None = None, usage: dict | None = None) -> bytes:
    payload = {
        "id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        payload["choices"], payload["usage"] = [], usage
    return f"data: {json.dumps(payload)}\n\n".encode()


class ScriptedLLMServer:
    def __init__(self, script: Script | None = None, host: str = "127.0.0.1", port: int = 0) -> None:
        self.script = script or Script()
        self.host, self.port = host, port
        self.requests: list[RecordedRequest] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    async def _sleep_until(self, deadline_ns: int) -> None:
        delay = deadline_ns - time.monotonic_ns()
        if delay > 0:
            await asyncio.sleep(delay / 1e9)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        received_ns = time.monotonic_ns()
        body = await request.json()
        record = RecordedRequest(received_ns, dict(request.headers), body)
        self.requests.append(record)
        reply = self.script.pick(body)
        model = body.get("model", "scripted")
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        # Each chunk leaves when written, as from a real streaming server: without TCP_NODELAY,
        # Nagle holds a small chunk until the client's delayed ACK (~40 ms) and the stamps lie.
        sock = request.transport.get_extra_info("socket") if request.transport else None
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # A role-only chunk first: it is not a token and must not stop the TTFT clock.
        await response.write(_chunk(model, {"role": "assistant", "content": ""}))
        deadline = received_ns + int(reply.ttft_ms * 1e6)
        if reply.tool_call:
            await self._sleep_until(deadline)
            call = {"index": 0, "id": "call_1", "type": "function",
                    "function": {"name": reply.tool_call["name"], "arguments": json.dumps(reply.tool_call.get("arguments", {}))}}
            await response.write(_chunk(model, {"tool_calls": [call]}))
            await response.write(_chunk(model, {}, finish="tool_calls"))
            completion = 1
        else:
            tokens = reply.tokens()
            gaps = reply.itl_ms if isinstance(reply.itl_ms, list) else [reply.itl_ms] * len(tokens)
            step = max(1, reply.tokens_per_chunk)
            for i in range(0, len(tokens), step):
                if i:
                    deadline += int(sum(gaps[i - step:i]) * 1e6) if step > 1 else int(gaps[i - 1] * 1e6)
                await self._sleep_until(deadline)
                await response.write(_chunk(model, {"content": "".join(tokens[i:i + step])}))
                record.content_sent_ns.append(time.monotonic_ns())
            await response.write(_chunk(model, {}, finish="stop"))
            completion = len(tokens)
        prompt = sum(len(str(m.get("content") or "").split()) for m in body.get("messages", []))
        await response.write(_chunk(model, {}, usage={"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def _recorded(self, request: web.Request) -> web.Response:
        """What the server saw and did, for a client in another process (benchmarks)."""
        return web.json_response([
            {"received_ns": r.received_ns, "headers": r.headers, "content_sent_ns": r.content_sent_ns}
            for r in self.requests
        ])

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "scripted", "object": "model"}]})

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/recorded", self._recorded)
        app.router.add_get("/health", lambda r: web.json_response({"status": "ok"}))
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]

    def start(self) -> "ScriptedLLMServer":
        def serve() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self._start())
            self._ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=serve, name="scripted-llm", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("scripted LLM server did not start")
        return self

    def stop(self) -> None:
        if self._loop is None:
            return
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop = None

    def __enter__(self) -> "ScriptedLLMServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8099)
    parser.add_argument("--ttft-ms", type=float, default=100.0)
    parser.add_argument("--itl-ms", type=float, default=15.0)
    parser.add_argument("--text", default=Reply.text)
    parser.add_argument("--script", help="JSON file: {\"replies\": [Reply fields...], \"sequential\": true}")
    args = parser.parse_args()
    if args.script:
        script = Script.from_json(json.loads(open(args.script).read()))
    else:
        script = Script([Reply(args.text, args.ttft_ms, args.itl_ms)])
    server = ScriptedLLMServer(script, port=args.port).start()
    print(f"scripted LLM server on {server.base_url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
