"""Metric instruments: the contract between the observer's metrics and dashboards, each defined once.

OpenTelemetry's GenAI semantic-convention names where they define the measurement (imported from
``opentelemetry.semconv``, never retyped), with the unit the convention fixes (seconds, tokens);
``voice.*`` in milliseconds for the rest. docs/METRICS.md's table is this registry
(``tests/unit/test_metric_names.py`` checks it), and Prometheus sees each name with dots turned into
underscores and the unit appended (``voice.v2v.duration`` in ms → ``voice_v2v_duration_milliseconds``;
counters end in ``_total``).

Attributes are of low cardinality only — never a conversation id, a run id or any text.
"""

from __future__ import annotations

from dataclasses import dataclass

from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as _gen_ai
from opentelemetry.semconv._incubating.metrics import gen_ai_metrics as _gen_ai_metrics

from voicetrace import semconv as sc

HISTOGRAM, COUNTER = "histogram", "counter"
MS, S, TOKEN = "ms", "s", "{token}"

# --- metric attributes (keys; the values are low-cardinality by construction) ------------------
ATTR_SERVICE = "service.name"
"""String; the agent's service (the resource's service.name, repeated so Prometheus can group by it)."""
ATTR_ENVIRONMENT = sc.RES_DEPLOYMENT_ENVIRONMENT
"""String; deployment.environment (the resource's, repeated as above)."""
ATTR_MODEL = sc.ATTR_GENAI_REQUEST_MODEL
ATTR_PROVIDER = sc.ATTR_GENAI_PROVIDER
ATTR_OPERATION = sc.ATTR_GENAI_OPERATION
ATTR_LANGUAGE = sc.ATTR_LANGUAGE
ATTR_INTERRUPTED = sc.ATTR_TURN_INTERRUPTED
ATTR_TOOL = sc.ATTR_TOOL_NAME
ATTR_ERROR_TYPE = sc.ATTR_ERROR_TYPE
ATTR_TOKEN_TYPE = _gen_ai.GEN_AI_TOKEN_TYPE
"""``input`` or ``output`` on gen_ai.client.token.usage."""
ATTR_STAGE = "voice.stage"
"""String; the pipeline stage an error belongs to: ``asr``, ``llm``, ``tts``, ``tool`` or ``other``."""

BASE = (ATTR_SERVICE, ATTR_ENVIRONMENT)
"""On every data point."""
_TURN = BASE + (ATTR_LANGUAGE, ATTR_MODEL)
_GENAI = BASE + (ATTR_OPERATION, ATTR_PROVIDER, ATTR_MODEL)

# --- bucket boundaries -------------------------------------------------------------------------
LATENCY_BOUNDARIES_MS: tuple[float, ...] = (
    0, 5, 10, 25, 50, 75, 100, 150, 200, 250, 300, 350, 400, 450, 500, 600, 700, 800, 900, 1000,
    1200, 1400, 1600, 1800, 2000, 2500, 3000, 4000, 5000, 7500, 10000, 15000, 20000, 30000)
"""Voice latencies: dense between 100 ms and 2 s (50, 100 then 200 ms wide), coarse up to 30 s."""
TOKEN_GAP_BOUNDARIES_MS: tuple[float, ...] = (
    0, 1, 2, 4, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 75, 100, 150, 200, 300, 500, 1000, 2000, 5000)
"""Inter-token gaps and time per output token: milliseconds to tens of milliseconds."""
TOKEN_BOUNDARIES: tuple[float, ...] = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576)
"""gen_ai.client.token.usage: the convention's advised boundaries."""


def _seconds(boundaries_ms: tuple[float, ...]) -> tuple[float, ...]:
    return tuple(b / 1000 for b in boundaries_ms)


@dataclass(frozen=True)
class Instrument:
    name: str
    kind: str  # HISTOGRAM | COUNTER
    unit: str
    description: str
    attributes: tuple[str, ...]
    boundaries: tuple[float, ...] = ()
    """Histogram bucket boundaries, in ``unit``."""
    key: str = ""
    """The report's metric key (analysis.metrics) this histogram measures, where there is one."""


# --- the registry (docs/METRICS.md lists exactly these, in this order) -------------------------
V2V = Instrument("voice.v2v.duration", HISTOGRAM, MS, "Voice-to-voice: first bot audio played − caller speech end, per turn.",
                 _TURN, LATENCY_BOUNDARIES_MS, "v2v")
ENDPOINTING = Instrument("voice.endpointing.duration", HISTOGRAM, MS, "End of turn decided − caller speech end, per turn.",
                         _TURN, LATENCY_BOUNDARIES_MS, "endpointing")
ASR_FINAL = Instrument("voice.asr.final.duration", HISTOGRAM, MS, "Final transcript − end of turn decided (≥ 0), per turn.",
                       _TURN, LATENCY_BOUNDARIES_MS, "asr_final")
TTFT = Instrument(_gen_ai_metrics.GEN_AI_CLIENT_OPERATION_TIME_TO_FIRST_CHUNK, HISTOGRAM, S,
                  "TTFT: first content chunk − request sent, per LLM request (client side).",
                  _GENAI, _seconds(LATENCY_BOUNDARIES_MS), "ttft")
ITL = Instrument(_gen_ai_metrics.GEN_AI_CLIENT_OPERATION_TIME_PER_OUTPUT_CHUNK, HISTOGRAM, S,
                 "ITL: gap between two consecutive content chunks, per chunk after the first.",
                 _GENAI, _seconds(TOKEN_GAP_BOUNDARIES_MS), "itl")
TPOT = Instrument("voice.llm.time_per_output_token", HISTOGRAM, MS,
                  "TPOT: (last token − first token) / (tokens − 1), per LLM request with 2+ tokens.",
                  _GENAI, TOKEN_GAP_BOUNDARIES_MS, "tpot")
LLM_E2E = Instrument(_gen_ai_metrics.GEN_AI_CLIENT_OPERATION_DURATION, HISTOGRAM, S,
                     "LLM E2E: last token − request sent, per LLM request (error.type on failures).",
                     _GENAI + (ATTR_ERROR_TYPE,), _seconds(LATENCY_BOUNDARIES_MS), "llm_e2e")
FIRST_SENTENCE = Instrument("voice.first_sentence.duration", HISTOGRAM, MS,
                            "First text handed to TTS − first LLM token, per turn.", _TURN, LATENCY_BOUNDARIES_MS,
                            "first_sentence")
TTS_TTFB = Instrument("voice.tts.time_to_first_byte", HISTOGRAM, MS, "First audio out of TTS − first text in, per turn.",
                      _TURN, LATENCY_BOUNDARIES_MS, "tts_ttfb")
TOOL = Instrument("voice.tool.duration", HISTOGRAM, MS, "One tool execution, by tool.", BASE + (ATTR_TOOL, ATTR_ERROR_TYPE),
                  LATENCY_BOUNDARIES_MS)
TURN_E2E = Instrument("voice.turn.duration", HISTOGRAM, MS, "Turn E2E: last bot audio played − caller speech end.",
                      _TURN + (ATTR_INTERRUPTED,), LATENCY_BOUNDARIES_MS, "turn_e2e")
TOKEN_USAGE = Instrument(_gen_ai_metrics.GEN_AI_CLIENT_TOKEN_USAGE, HISTOGRAM, TOKEN,
                         "Input and output tokens per LLM request (its _sum is the token counter).",
                         _GENAI + (ATTR_TOKEN_TYPE,), TOKEN_BOUNDARIES)
TURNS = Instrument("voice.turns", COUNTER, "{turn}", "Turns completed.", _TURN + (ATTR_INTERRUPTED,))
BARGE_INS = Instrument("voice.barge_ins", COUNTER, "{turn}", "Turns whose reply the caller talked over (0 added otherwise).",
                       _TURN)
OVER_BUDGET = Instrument("voice.turns.over_budget", COUNTER, "{turn}",
                         "Turns whose V2V exceeded the V2V budget (0 added for turns within it).", _TURN)
ERRORS = Instrument("voice.errors", COUNTER, "{error}",
                    "Stage errors: llm, tts, tool as their spans' error status; asr, other from ErrorFrames (0 added per turn).",
                    BASE + (ATTR_STAGE, ATTR_ERROR_TYPE))
PROMPT_CACHE = Instrument("voice.llm.prompt_cache.tokens", COUNTER, TOKEN,
                          "Prompt tokens the LLM server served from its prompt cache (llama.cpp cache_n).", _GENAI)

INSTRUMENTS: tuple[Instrument, ...] = (V2V, ENDPOINTING, ASR_FINAL, TTFT, ITL, TPOT, LLM_E2E, FIRST_SENTENCE, TTS_TTFB,
                                       TOOL, TURN_E2E, TOKEN_USAGE, TURNS, BARGE_INS, OVER_BUDGET, ERRORS, PROMPT_CACHE)
ERROR_STAGES = ("asr", "llm", "tts", "tool", "other")

_PROM_UNITS = {MS: "_milliseconds", S: "_seconds"}


def prometheus_name(inst: Instrument) -> str:
    """The name OpenTelemetry's Prometheus exporter gives ``inst`` (before ``_bucket``/``_count``)."""
    base = inst.name.replace(".", "_") + _PROM_UNITS.get(inst.unit, "")
    return base + "_total" if inst.kind == COUNTER else base


def prometheus_label(attribute: str) -> str:
    return attribute.replace(".", "_")


def _check() -> None:
    names = [i.name for i in INSTRUMENTS]
    if len(set(names)) != len(names) or any(i.kind == HISTOGRAM and not i.boundaries for i in INSTRUMENTS):
        raise RuntimeError("metric_names: a name twice, or a histogram without boundaries")


_check()
