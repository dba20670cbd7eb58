"""A finished TurnRecord → the metric observations it makes (voicetrace.metric_names), no OpenTelemetry.

The milestones are the span builder's, taken the way ``analysis/turns`` reads them back from the
spans (a stage that ends before it starts is clamped, as its span is), so a histogram of these values
holds exactly the per-turn numbers ``voicetrace report`` prints for the same call. Pure arithmetic on
the pipeline's thread; the SDK calls happen elsewhere (``metrics_recorder``).

An observation is ``(instrument, value, attributes)`` with ``attributes`` a tuple of (key, value)
pairs added to the recorder's constant ones (service, environment, model).
"""

from __future__ import annotations

from typing import Iterable

from voicetrace import metric_names as mn
from voicetrace import semconv as sc
from voicetrace.capture.llm_spans import call_error
from voicetrace.capture.sinks import LLMCall, ToolRun
from voicetrace.capture.turn_record import TurnRecord

Observation = tuple[mn.Instrument, float, tuple]
_NS_PER_MS = 1_000_000
_NS_PER_S = 1_000_000_000


class _NoContent:
    """call_error's content policy for metrics: no text leaves through a metric."""

    redact = False

    @staticmethod
    def text(value):
        return None


def _ms(ns: int) -> float:
    return ns / _NS_PER_MS


def _call_end(call: LLMCall) -> int:
    tokens = call.token_times_ns
    end = call.end_ns if call.end_ns is not None else (tokens[-1] if tokens else call.request_ns)
    return max(end, call.request_ns)


def llm_observations(call: LLMCall, rec: TurnRecord, superseded: bool) -> list[Observation]:
    """One request's TTFT, chunk gaps, TPOT, duration and token usage (GenAI client metrics)."""
    out: list[Observation] = []
    tokens = call.token_times_ns
    _, error_type = call_error(call, rec.errors.get("llm"), interrupted=rec.interrupted, superseded=superseded,
                               content=_NoContent)
    out.append((mn.LLM_E2E, (_call_end(call) - call.request_ns) / _NS_PER_S,
                ((mn.ATTR_ERROR_TYPE, error_type),) if error_type else ()))
    if tokens:
        out.append((mn.TTFT, (tokens[0] - call.request_ns) / _NS_PER_S, ()))
        out.extend((mn.ITL, (b - a) / _NS_PER_S, ()) for a, b in zip(tokens, tokens[1:]))
        n = sum(call.token_counts)
        if n > 1:
            out.append((mn.TPOT, _ms(tokens[-1] - tokens[0]) / (n - 1), ()))
    output_tokens = call.output_tokens if call.output_tokens is not None else sum(call.token_counts)
    out.append((mn.TOKEN_USAGE, output_tokens, ((mn.ATTR_TOKEN_TYPE, "output"),)))
    if call.input_tokens is not None:
        out.append((mn.TOKEN_USAGE, call.input_tokens, ((mn.ATTR_TOKEN_TYPE, "input"),)))
    cache_n = (call.server_timings or {}).get("cache_n")
    if cache_n:
        out.append((mn.PROMPT_CACHE, int(cache_n), ()))
    return out


def tool_observations(run: ToolRun) -> list[Observation]:
    end = run.end_ns if run.end_ns is not None else run.start_ns
    attrs = ((mn.ATTR_TOOL, run.name),) + (((mn.ATTR_ERROR_TYPE, run.error),) if run.error else ())
    out: list[Observation] = [(mn.TOOL, _ms(max(end, run.start_ns) - run.start_ns), attrs)]
    if run.error:
        out.append((mn.ERRORS, 1, ((mn.ATTR_STAGE, "tool"), (mn.ATTR_ERROR_TYPE, run.error))))
    return out


def _between(start: int | None, end: int | None) -> float | None:
    return None if start is None or end is None else _ms(end - start)


def turn_observations(rec: TurnRecord, budget_ms: float) -> list[Observation]:
    """Every observation of one finished turn, its LLM requests and its tools."""
    lang = ((mn.ATTR_LANGUAGE, rec.language),) if rec.language else ()
    # Milestones as the spans carry them (analysis/turns reads these same edges back).
    user_end = max(rec.speech_end_ns, rec.speech_start_ns) if rec.speech_end_ns is not None else None
    decided = rec.decided_ns if rec.decided_ns is not None else rec.committed_ns
    endpoint_end = max(decided, user_end) if decided is not None and user_end is not None else None
    asr_end = (max(rec.asr_end_ns, rec.asr_start_ns)
               if rec.asr_start_ns is not None and rec.asr_end_ns is not None else None)
    calls = rec.llm_calls_to_emit
    firsts = [c.token_times_ns[0] for c in calls if c.token_times_ns]
    first_token = min(firsts) if firsts else None
    tts_error = rec.errors.get("tts")
    tts_start = rec.tts_start_ns if rec.tts_start_ns is not None else (tts_error[0] if tts_error else None)
    first_audio = rec.tts_first_audio_ns if rec.tts_start_ns is not None else None
    bot_start = rec.bot_start_ns
    bot_end = max(rec.bot_end_ns if rec.bot_end_ns is not None else bot_start, bot_start) if bot_start is not None else None
    # V2V ends where the bot became audible (the voice.bot.audible event), as analysis/turns reads it
    bot_onset = rec.bot_audible_ns if rec.bot_audible_ns is not None and bot_start is not None else bot_start

    out: list[Observation] = []
    v2v = _between(user_end, bot_onset)
    asr_final = _between(endpoint_end, asr_end)
    for inst, value in ((mn.V2V, v2v), (mn.ENDPOINTING, _between(user_end, endpoint_end)),
                        (mn.ASR_FINAL, None if asr_final is None else max(asr_final, 0.0)),
                        (mn.FIRST_SENTENCE, _between(first_token, tts_start)),
                        (mn.TTS_TTFB, _between(tts_start, first_audio))):
        if value is not None:
            out.append((inst, value, lang))
    turn_e2e = _between(user_end, bot_end)
    interrupted = ((mn.ATTR_INTERRUPTED, rec.interrupted),)
    if turn_e2e is not None:
        out.append((mn.TURN_E2E, turn_e2e, lang + interrupted))
    out.append((mn.TURNS, 1, lang + interrupted))
    out.append((mn.BARGE_INS, 1 if rec.interrupted else 0, lang))
    if v2v is not None:
        out.append((mn.OVER_BUDGET, 1 if v2v > budget_ms else 0, lang))
    out.extend(_error_observations(rec, calls))
    for i, call in enumerate(calls):
        out.extend(llm_observations(call, rec, superseded=i < len(calls) - 1))
    for run in rec.tools:
        out.extend(tool_observations(run))
    return out


def _error_observations(rec: TurnRecord, calls: Iterable[LLMCall]) -> list[Observation]:
    """Errors by stage as the spans carry them; 0 for a stage without one, so every stage's series exists."""
    calls = list(calls)
    errors: list[tuple[str, str]] = []
    for i, call in enumerate(calls):
        _, error_type = call_error(call, rec.errors.get("llm"), interrupted=rec.interrupted,
                                   superseded=i < len(calls) - 1, content=_NoContent)
        if error_type:
            errors.append(("llm", error_type))
    if "tts" in rec.errors:  # on the tts span, or a zero-length one at the failure
        errors.append(("tts", rec.errors["tts"][1]))
    for stage in ("asr", "other"):  # pipecat's ErrorFrames that no stage span carries
        if stage in rec.errors:
            errors.append((stage, rec.errors[stage][1]))
    out: list[Observation] = [(mn.ERRORS, 1, ((mn.ATTR_STAGE, s), (mn.ATTR_ERROR_TYPE, t))) for s, t in errors]
    failed = {s for s, _ in errors}
    out.extend((mn.ERRORS, 0, ((mn.ATTR_STAGE, s),)) for s in mn.ERROR_STAGES if s not in failed)
    return out
