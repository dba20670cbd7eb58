"""Run the agent's tools with a span each, from intent rules or from the model's function calls."""

from __future__ import annotations

import asyncio
import json
import time

from pipecat.frames.frames import Frame, LLMContextFrame, StartFrame
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

from voicetrace.capture.sinks import ToolSink
from voicetrace.tools.insurance import InsuranceTools
from voicetrace.tools.intents import match_intents

TOOL_TIMEOUT_S = 5.0


async def run_tool(tools: InsuranceTools, sink: ToolSink | None, name: str, arguments: dict, trigger: str) -> dict:
    """Execute one tool with a timeout; errors come back as a result the LLM can speak about."""
    run = sink.begin_tool(name, json.dumps(arguments), trigger, time.monotonic_ns()) if sink else None

    stamps: dict[str, int] = {}

    def timed(function, **kwargs):
        # Stamped in the worker thread around the call itself: the span is the tool's own time,
        # not the hop to and from the thread pool.
        stamps["start"] = time.monotonic_ns()
        try:
            return function(**kwargs)
        finally:
            stamps["end"] = time.monotonic_ns()

    try:
        function = getattr(tools, name)
        result = await asyncio.wait_for(asyncio.to_thread(timed, function, **arguments), TOOL_TIMEOUT_S)
    except Exception as exc:  # unknown tool, bad arguments, ToolError, timeout
        result = {"error": str(exc) or type(exc).__name__}
        if run is not None:
            run.error = type(exc).__name__
    if run is not None:
        if "end" in stamps:
            run.start_ns, run.end_ns = stamps["start"], stamps["end"]
        else:  # timed out (the thread may still be running) or never started: the caller waited until now
            run.end_ns = time.monotonic_ns()
        run.result_chars = len(json.dumps(result, default=str))
    return result


def _plain(result: dict) -> str:
    """A tool result as words a small model can repeat (it stumbles over JSON)."""
    return "; ".join(f"{key.replace('_', ' ')}: {value}" for key, value in result.items())


def _last_user_text(context) -> str:
    for message in reversed(context.get_messages()):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
            return str(content or "")
    return ""


class IntentToolRunner(FrameProcessor):
    """Between the user aggregator and the LLM: looks the caller up at call start, and runs the
    tools the transcript asks for before the LLM request, adding their results to the context."""

    def __init__(self, tools: InsuranceTools, context, sink: ToolSink | None, *, intents: bool = True) -> None:
        super().__init__(name="IntentToolRunner")
        self._tools = tools
        self._context = context
        self._sink = sink
        self._intents = intents

    def set_sink(self, sink: ToolSink) -> None:
        self._sink = sink

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, StartFrame):
            await self.push_frame(frame, direction)
            await self._load_caller()
            return
        if self._intents and isinstance(frame, LLMContextFrame) and direction == FrameDirection.DOWNSTREAM:
            for intent in match_intents(_last_user_text(frame.context)):
                result = await run_tool(self._tools, self._sink, intent.tool, intent.arguments, "intent")
                frame.context.add_message({"role": "system", "content": f"{intent.tool} says: {_plain(result)}"})
        await self.push_frame(frame, direction)

    async def _load_caller(self) -> None:
        policy = await run_tool(self._tools, self._sink, "lookup_policy", {}, "call_start")
        if "error" not in policy:
            self._context.add_message({"role": "system", "content": f"The caller's policy: {_plain(policy)}"})


def register_function_tools(llm, tools: InsuranceTools, sink_ref: dict) -> None:
    """Let the model call get_claim_status / update_address; each call is a traced tool run."""
    async def handler(params) -> None:
        result = await run_tool(tools, sink_ref.get("sink"), params.function_name, dict(params.arguments or {}), "function_call")
        await params.result_callback(result)

    for name in ("get_claim_status", "update_address"):
        llm.register_function(name, handler)


def tools_schema():
    from pipecat.adapters.schemas.function_schema import FunctionSchema
    from pipecat.adapters.schemas.tools_schema import ToolsSchema

    from voicetrace.tools.insurance import TOOL_SCHEMAS

    return ToolsSchema(standard_tools=[FunctionSchema(**schema) for schema in TOOL_SCHEMAS])
