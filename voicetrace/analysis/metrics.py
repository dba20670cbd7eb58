"""The metric registry: every metric voicetrace reports, defined once.

Each ``Metric`` says what it is called (``key``, in summaries, budgets, diff and JSON), the per-turn
column holding it, its table header and human label, its unit, its definition, which module computes
it (``computed_by``) and from what, its place in the V2V breakdown chain, and whether ``whatif`` can
speed it up. ``REGISTRY`` is in chain order (the order a turn's reply builds up); the views at the end
say which metrics each output lists. Analysis, renderers, budgets, diff and whatif read only this.

Where the numbers come from (``computed_by``):

- ``turns`` (``analysis/turns.turn_metrics``): differences of two milestones (``between``), each
  milestone a span's start/end or an event time, in exact integer nanoseconds. TTFT is the first
  ``gen_ai.first_token`` event minus the start of the ``llm`` span that carried it — measured here,
  never read from the span's ``voice.llm.ttft_ms`` attribute.
- ``tokens`` (``analysis/tokens``): the ``gen_ai.token`` events of the turn's ``llm`` spans. TPOT is
  (last token − first token) / (tokens − 1) per request, averaged over the turn's requests — again from
  the events, not from the ``voice.llm.tpot_ms`` attribute (a trace without token events has no TPOT).
- ``breakdown`` (``analysis/breakdown``): the turn's critical path; ``bd_<segment>_ms`` columns.
- ``kvcache`` (``analysis/kvcache``) and ``acoustic`` (``voicetrace.acoustic``, the run's call.wav).
- ``wire`` (``analysis/wire``): the first-token ``llm`` span's socket-level attributes (``capture.wire``).
- ``integration`` (``analysis/integration``): ``loop.blocked`` / ``queue.wait`` spans, where the capture
  measured them (``measured_only``: left out of the JSON breakdown of traces that have none).
"""

from __future__ import annotations

from dataclasses import dataclass

MS, TOKENS, BYTES = "ms", "tokens", "bytes"


@dataclass(frozen=True)
class Metric:
    key: str
    column: str  # per-turn column (``gap_ms`` of the token gaps for ``over="gaps"``)
    label: str  # human label: breakdown legend, figure titles
    definition: str  # what it measures; the README's per-turn table quotes it
    computed_by: str  # turns | tokens | breakdown | kvcache | acoustic (see the module docstring)
    header: str | None = None  # short header in the per-turn tables and the headline
    unit: str = MS
    between: tuple[str, str] | None = None  # (from, to) milestone columns (``*_ns``): to − from
    non_negative: bool = False  # clipped at 0 (ASR final: a transcript before the decision is "no wait")
    segment: bool = False  # owns breakdown segment ``bd_<key>_ms``; chain order = registry order
    parts: tuple[str, ...] = ()  # breakdown segments its critical-path share is split into (TTFT)
    whatif: str | None = None  # the ``whatif --stage`` name
    aliases: tuple[str, ...] = ()  # other names summaries and budgets accept
    summary: bool = True  # a distribution in Summary (so ``check`` budgets and ``diff`` accept it)
    stage: bool = False  # listed per stage in ``diff`` and the per-stage box plots
    over: str = "turns"  # "turns": one value per turn; "gaps": one per inter-token gap
    measured_only: bool = False  # only traces whose capture measured it have it (JSON omits it otherwise)

    @property
    def segment_column(self) -> str:
        return f"bd_{self.key}_ms"

    @property
    def whatif_columns(self) -> list[str]:
        """The breakdown columns a faster ``whatif`` stage takes its gain from."""
        return [f"bd_{s}_ms" for s in (self.parts or ((self.key,) if self.segment else ()))]


_BD = "breakdown"
REGISTRY: tuple[Metric, ...] = (
    Metric("endpointing", "endpointing_ms", "endpointing", "end of turn decided − caller speech end", "turns",
           header="endpoint", between=("user_end_ns", "endpoint_end_ns"), segment=True, whatif="endpointing",
           aliases=("endpoint",), stage=True),
    Metric("asr_final", "asr_final_ms", "ASR final", "final transcript − end of turn decided (≥ 0)", "turns",
           header="ASR fin", between=("endpoint_end_ns", "asr_end_ns"), non_negative=True, segment=True,
           whatif="asr", aliases=("asr",), stage=True),
    Metric("ttft", "ttft_ms", "TTFT", "first content token − LLM request sent", "turns", header="TTFT",
           between=("first_token_llm_start_ns", "first_token_ns"), parts=("llm_queue", "llm_prefill", "llm_ttft"),
           whatif="llm", aliases=("llm",), stage=True),
    Metric("llm_queue", "bd_llm_queue_ms", "LLM queue", "the LLM server's queue span inside the TTFT window", _BD,
           segment=True, whatif="queue"),
    Metric("llm_prefill", "bd_llm_prefill_ms", "LLM prefill", "the LLM server's prefill span inside the TTFT window",
           _BD, segment=True, whatif="prefill"),
    Metric("tools", "bd_tools_ms", "tools", "tool.* spans on the critical path (before the request or inside TTFT)",
           _BD, segment=True, whatif="tools"),
    Metric("llm_ttft", "bd_llm_ttft_ms", "LLM (rest of TTFT)", "LLM request → first token, less queue, prefill, tools",
           _BD, between=("llm_start_ns", "first_token_ns"), segment=True, summary=False),
    Metric("first_sentence", "first_sentence_ms", "first sentence", "first text handed to TTS − first token", "turns",
           header="1st sent", between=("first_token_ns", "tts_start_ns"), segment=True, whatif="first_sentence",
           stage=True),
    Metric("tts_ttfb", "tts_ttfb_ms", "TTS TTFB", "first audio out of TTS − first text in", "turns", header="TTS TTFB",
           between=("tts_start_ns", "first_audio_ns"), segment=True, whatif="tts", aliases=("tts",), stage=True),
    Metric("transport", "transport_ms", "transport", "bot audio played − first TTS audio", "turns", header="transport",
           between=("first_audio_ns", "bot_start_ns"), segment=True, whatif="transport", stage=True),
    Metric("tts_leading_silence", "bd_tts_leading_silence_ms", "TTS leading silence",
           "first audible bot audio − first bot audio played (the TTS's near-silent lead-in)", _BD,
           between=("bot_start_ns", "bot_audible_ns"), segment=True, summary=False),
    Metric("loop_lag", "bd_loop_lag_ms", "loop lag",
           "unattributed time the event loop was blocked (loop.blocked spans; its processor is named)", _BD,
           segment=True, summary=False, measured_only=True),
    Metric("queue_wait", "bd_queue_wait_ms", "queue wait",
           "unattributed time frames waited in processor queues (queue.wait spans), less loop lag", _BD,
           segment=True, summary=False, measured_only=True),
    Metric("unattributed", "bd_unattributed_ms", "unattributed",
           "V2V not owned by a stage (e.g. transcript ready → LLM request, time after a missing stage)", _BD,
           header="unattrib.", segment=True, stage=True),
    Metric("v2v", "v2v_ms", "V2V", "bot audible − caller speech end: what the caller feels", "turns",
           header="V2V", between=("user_end_ns", "bot_onset_ns")),
    Metric("acoustic_v2v", "acoustic_v2v_ms", "acoustic V2V", "the same gap measured in the run's `call.wav` alone",
           "acoustic", header="ac V2V", summary=False),
    Metric("v2v_delta", "v2v_delta_ms", "acoustic − event V2V", "ac V2V − V2V; yellow when more than one 10 ms frame",
           "acoustic", header="Δ ac", summary=False),
    Metric("turn_e2e", "turn_e2e_ms", "turn E2E", "last bot audio played − caller speech end", "turns",
           header="turn E2E", between=("user_end_ns", "bot_end_ns"), aliases=("e2e",)),
    Metric("llm_e2e", "llm_e2e_ms", "LLM E2E", "last LLM token − first LLM request", "turns", header="LLM E2E",
           between=("llm_start_ns", "llm_end_ns")),
    Metric("itl", "gap_ms", "ITL", "gap between two content tokens (a k-token chunk's gap split in k)", "tokens",
           header="ITL", over="gaps"),
    Metric("itl_p50", "itl_p50_ms", "ITL p50 of the turn", "median inter-token gap within the turn", "tokens",
           header="ITL p50", summary=False),
    Metric("itl_p90", "itl_p90_ms", "ITL p90 of the turn", "90th percentile inter-token gap within the turn",
           "tokens", summary=False),
    Metric("itl_p99", "itl_p99_ms", "ITL p99 of the turn", "99th percentile inter-token gap within the turn",
           "tokens", summary=False),
    Metric("tpot", "tpot_ms", "TPOT", "(last token − first token) / (tokens − 1), mean over the turn's requests",
           "tokens", header="TPOT"),
    Metric("output_tokens", "output_tokens", "output tokens", "gen_ai.usage.output_tokens of the turn's first llm span",
           "turns", header="out tok", unit=TOKENS, summary=False),
    Metric("prompt_tokens", "prompt_tokens", "prompt tokens",
           "gen_ai.usage.input_tokens, else the server's prefill prompt_n + cache_n", "kvcache", header="prompt tok",
           unit=TOKENS, summary=False),
    Metric("kv_cache", "kv_cache_bytes", "KV cache", "(prompt + output tokens) × KV bytes per token", "kvcache",
           header="KV cache", unit=BYTES, summary=False),
    Metric("loop_blocked", "loop_blocked_ms", "loop blocked",
           "longest loop.blocked span overlapping caller speech end → first bot audio (processor: loop_blocker)",
           "integration", summary=False, measured_only=True),
    Metric("ttft_wire", "ttft_wire_ms", "TTFT on the wire",
           "first content token's bytes read from the socket − request body written (voice.llm.ttft_wire_ms)", "wire",
           summary=False, measured_only=True),
    Metric("llm_delivery_lag", "llm_delivery_lag_ms", "LLM delivery lag",
           "first token handed to pipecat − its bytes read from the socket (TTFT − TTFT on the wire, less the "
           "request write)", "wire", summary=False, measured_only=True),
    Metric("reported_user_bot", "reported_user_bot_ms", "pipecat's user → bot latency",
           "turn.user_bot_latency_seconds on pipecat's own turn span", "turns", summary=False),
)

METRICS: dict[str, Metric] = {m.key: m for m in REGISTRY}
ALIASES: dict[str, str] = {alias: m.key for m in REGISTRY for alias in m.aliases}


def resolve(name: str) -> str:
    """The key of the metric called ``name`` (its key or an alias); KeyError if none."""
    key = ALIASES.get(name, name)
    if key not in METRICS:
        raise KeyError(name)
    return key


# --- views: which metrics each output lists, in its order ----------------------------------------

SEGMENTS: tuple[str, ...] = tuple(m.key for m in REGISTRY if m.segment)
"""Breakdown segments in chain order; their ``bd_<segment>_ms`` columns sum exactly to ``v2v_ms``."""


def _chain() -> tuple[tuple[str | None, str], ...]:
    """(segment, milestone it ends at) along the reply; a step to a milestone no segment ends at
    (the LLM request after "ready") is ``None``: its time is unattributed."""
    steps, at = [], METRICS["v2v"].between[0]
    for m in REGISTRY:
        if m.segment and m.between:
            if m.between[0] != at:
                steps.append((None, m.between[0]))
            steps.append((m.key, m.between[1]))
            at = m.between[1]
    return tuple(steps)


CHAIN = _chain()
SUMMARY: tuple[str, ...] = tuple(m.key for m in REGISTRY if m.summary)
STAGES: tuple[str, ...] = tuple(m.key for m in REGISTRY if m.stage)
WHATIF: dict[str, Metric] = {m.whatif: m for m in REGISTRY if m.whatif}
"""``whatif --stage`` name → metric, in chain order."""

HEADLINE: tuple[str, ...] = ("v2v", "ttft", "itl", "tpot", "turn_e2e", "llm_e2e")
"""The terminal headline and the first rows of ``diff``, in this order."""
TURN_TABLE: tuple[str, ...] = ("endpointing", "asr_final", "ttft", "first_sentence", "tts_ttfb", "v2v", "turn_e2e")
"""The terminal's per-turn columns (and the README's table)."""
ACOUSTIC: tuple[str, ...] = tuple(m.key for m in REGISTRY if m.computed_by == "acoustic")
"""Shown right after V2V when the run's call.wav was analysed."""
HTML_TABLE: tuple[str, ...] = ("v2v", "endpointing", "asr_final", "ttft", "first_sentence", "tts_ttfb", "transport",
                               "unattributed", "turn_e2e", "itl_p50", "tpot", "output_tokens", "prompt_tokens",
                               "kv_cache")
"""The HTML report's turn table (V2V first: what the caller feels)."""
PER_TURN: tuple[str, ...] = tuple(m.column for m in REGISTRY
                                  if m.over == "turns" and m.computed_by in ("turns", "tokens", "kvcache"))
"""Per-turn columns each JSON turn row carries (breakdown segments go under ``breakdown_ms``)."""
TURN_METRICS: tuple[str, ...] = tuple(m.column for m in REGISTRY if m.computed_by == "turns")
"""The metric columns ``turn_metrics`` computes from spans."""


def _check() -> None:
    """The views name registered metrics only (a typo fails at import, not in a renderer)."""
    unknown = [k for view in (HEADLINE, TURN_TABLE, HTML_TABLE) for k in view if k not in METRICS]
    unknown += [p for m in REGISTRY for p in m.parts if p not in METRICS or not METRICS[p].segment]
    if unknown or len(METRICS) != len(REGISTRY) or set(ALIASES) & set(METRICS):
        raise RuntimeError(f"metric registry is inconsistent: {unknown or 'a key or alias twice'}")


_check()
