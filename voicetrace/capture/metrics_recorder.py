"""``MetricsRecorder``: a finished turn's observations → OpenTelemetry instruments, off the pipeline's path.

The observer calls ``record_turn`` when a turn's spans are written. On the pipeline's thread that is
arithmetic (``turn_observations``) and one hand-off to a bounded queue; one worker thread makes the
SDK calls (several µs each in Python, too much to pay per token on the pipeline). A full queue drops
the turn and counts it (``dropped_turns``); nothing here raises into the pipeline.

Every observation of a turn carries the turn span's context, so where the SDK keeps exemplars (its
default trace-based filter) a histogram bucket points at the trace of a turn that landed in it.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from typing import Any, Mapping

from opentelemetry import trace
from opentelemetry.metrics import MeterProvider

from voicetrace import __version__
from voicetrace import metric_names as mn
from voicetrace import semconv as sc
from voicetrace.capture.sinks import ToolRun
from voicetrace.capture.turn_observations import Observation, tool_observations, turn_observations
from voicetrace.capture.turn_record import TurnRecord

log = logging.getLogger(__name__)

DEFAULT_V2V_BUDGET_MS = 1000.0
"""voice.turns.over_budget counts turns above this (the report's default budget too)."""
MAX_QUEUED_TURNS = 1024


class MetricsRecorder:
    """``attributes``: the constant low-cardinality attributes (service.name, deployment.environment,
    gen_ai.request.model, gen_ai.provider.name); each instrument keeps those it declares."""

    def __init__(self, meter_provider: MeterProvider, attributes: Mapping[str, Any] | None = None, *,
                 v2v_budget_ms: float = DEFAULT_V2V_BUDGET_MS, max_queued_turns: int = MAX_QUEUED_TURNS) -> None:
        meter = meter_provider.get_meter("voicetrace", __version__)
        constants = {mn.ATTR_OPERATION: sc.GENAI_OPERATION_CHAT,
                     **{k: v for k, v in (attributes or {}).items() if v is not None}}
        self._instruments = {}
        self._base: dict[str, dict] = {}
        for inst in mn.INSTRUMENTS:
            if inst.kind == mn.HISTOGRAM:
                made = meter.create_histogram(inst.name, inst.unit, inst.description,
                                              explicit_bucket_boundaries_advisory=list(inst.boundaries))
                self._instruments[inst.name] = made.record
            else:
                self._instruments[inst.name] = meter.create_counter(inst.name, inst.unit, inst.description).add
            self._base[inst.name] = {k: constants[k] for k in inst.attributes if k in constants}
        self._attrs: dict[tuple, dict] = {}
        self.v2v_budget_ms = float(v2v_budget_ms)
        self._queue: deque = deque()
        self._max_queued = max_queued_turns
        self._cond = threading.Condition()
        self._pending = 0
        self._closed = False
        self.dropped_turns = 0
        self.observations = 0
        """Observations handed to the SDK so far."""
        self._worker = threading.Thread(target=self._run, name="voicetrace-metrics", daemon=True)
        self._worker.start()

    # --- pipeline side: arithmetic and one hand-off ---------------------------------------------
    def record_turn(self, rec: TurnRecord) -> None:
        try:
            self._hand_off(turn_observations(rec, self.v2v_budget_ms), rec.span)
        except Exception:  # capture never breaks the call it measures
            log.exception("voicetrace: could not record metrics for turn %s", rec.number)

    def record_tool(self, run: ToolRun, span: Any = None) -> None:
        """A tool that ran outside any turn (e.g. at call start)."""
        try:
            self._hand_off(tool_observations(run), span)
        except Exception:
            log.exception("voicetrace: could not record metrics for tool %s", run.name)

    def _hand_off(self, observations: list[Observation], span: Any) -> None:
        with self._cond:
            if self._closed or len(self._queue) >= self._max_queued:
                self.dropped_turns += 1
                return
            self._queue.append((observations, span))
            self._pending += 1
            self._cond.notify()

    # --- worker ---------------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    return
                observations, span = self._queue.popleft()
            try:
                self._record(observations, span)
            except Exception:
                log.exception("voicetrace: metrics recording failed")
            finally:
                with self._cond:
                    self._pending -= 1
                    self._cond.notify_all()

    def _record(self, observations: list[Observation], span: Any) -> None:
        context = trace.set_span_in_context(span) if span is not None else None
        instruments, base, cache = self._instruments, self._base, self._attrs
        for inst, value, extra in observations:
            name = inst.name
            if extra:
                key = (name, extra)
                attrs = cache.get(key)
                if attrs is None:
                    attrs = cache[key] = {**base[name], **{k: v for k, v in extra if v is not None}}
            else:
                attrs = base[name]
            instruments[name](value, attrs, context=context)
        self.observations += len(observations)

    # --- lifecycle ------------------------------------------------------------------------------
    def flush(self, timeout_s: float = 5.0) -> bool:
        """Wait until every handed-off turn is in the instruments (before a collection or shutdown)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending == 0, timeout_s)

    def close(self, timeout_s: float = 5.0) -> None:
        self.flush(timeout_s)
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._worker.join(timeout_s)


def default_metric_attributes(tracer_provider: Any, stage_attributes: Mapping[str, Mapping[str, Any]] | None,
                              given: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """service.name and deployment.environment from the tracer provider's resource, the model and
    provider from the llm stage's attributes; ``given`` wins over both."""
    resource = getattr(getattr(tracer_provider, "resource", None), "attributes", {}) or {}
    llm = (stage_attributes or {}).get(sc.SPAN_LLM, {})
    provider = llm.get(sc.ATTR_GENAI_PROVIDER, llm.get(sc.ATTR_GENAI_SYSTEM))
    attrs = {
        mn.ATTR_SERVICE: resource.get(mn.ATTR_SERVICE),
        mn.ATTR_ENVIRONMENT: resource.get(mn.ATTR_ENVIRONMENT),
        mn.ATTR_MODEL: llm.get(sc.ATTR_GENAI_REQUEST_MODEL),
        mn.ATTR_PROVIDER: provider,
        **(given or {}),
    }
    return {k: v for k, v in attrs.items() if v is not None}
