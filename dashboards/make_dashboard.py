"""Writes grafana-voicetrace.json, the Grafana dashboard users import (Grafana itself is not shipped).

    python dashboards/make_dashboard.py     # after changing a panel here

Every PromQL expression in it runs against a real Prometheus scraping a replay in
tests/integration/test_prometheus.py; metric names are voicetrace/metric_names.py's Prometheus names.
"""

from __future__ import annotations

import json
from pathlib import Path

SEL = 'service_name=~"$service", deployment_environment=~"$environment"'
RATE = "$__rate_interval"


def q(p: float, metric: str, by: str = "", scale: str = "") -> str:
    group = f"le, {by}" if by else "le"
    return f"{scale}histogram_quantile({p}, sum by ({group}) (rate({metric}_bucket{{{SEL}}}[{RATE}])))"


V2V = "voice_v2v_duration_milliseconds"
TTFT = "gen_ai_client_operation_time_to_first_chunk_seconds"
ITL = "gen_ai_client_operation_time_per_output_chunk_seconds"

_panel_id = 0


def panel(title: str, targets: list[tuple[str, str]], x: int, y: int, w: int = 12, h: int = 8, unit: str = "ms",
          stack: bool = False, description: str = "", links: list | None = None, exemplar: bool = False,
          thresholds: list | None = None) -> dict:
    global _panel_id
    _panel_id += 1
    defaults: dict = {"unit": unit, "custom": {"stacking": {"mode": "normal" if stack else "none"},
                                               "fillOpacity": 40 if stack else 0}}
    if thresholds:
        defaults["thresholds"] = {"mode": "absolute", "steps": thresholds}
        defaults["custom"]["thresholdsStyle"] = {"mode": "line"}
    return {
        "id": _panel_id, "type": "timeseries", "title": title, "description": description,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"x": x, "y": y, "w": w, "h": h},
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "links": links or [],
        "targets": [{"refId": chr(65 + i), "expr": expr, "legendFormat": legend, "exemplar": exemplar,
                     "datasource": {"type": "prometheus", "uid": "${datasource}"}}
                    for i, (expr, legend) in enumerate(targets)],
    }


JAEGER_LINKS = [
    {"title": "Jaeger: trace ${trace_id}", "url": "${jaeger_url}/trace/${trace_id}", "targetBlank": True},
    {"title": "Jaeger: slow turns of ${service}",
     "url": "${jaeger_url}/search?service=${service}&operation=turn&minDuration=${budget_ms}ms", "targetBlank": True},
]

PANELS = [
    panel("Voice-to-voice p50 / p95", [(q(0.5, V2V), "p50"), (q(0.95, V2V), "p95")], 0, 0, exemplar=True,
          description="First bot audio played − caller speech end. Exemplars (OTLP → Collector → Prometheus) "
                      "link a slow turn to its trace; the panel links open Jaeger by trace id.",
          links=JAEGER_LINKS, thresholds=[{"color": "green", "value": None}, {"color": "red", "value": 1000}]),
    panel("Per-stage p95 (stacked)", [
        (q(0.95, "voice_endpointing_duration_milliseconds"), "endpointing"),
        (q(0.95, "voice_asr_final_duration_milliseconds"), "ASR final"),
        (q(0.95, TTFT, scale="1000 * "), "TTFT"),
        (q(0.95, "voice_first_sentence_duration_milliseconds"), "first sentence"),
        (q(0.95, "voice_tts_time_to_first_byte_milliseconds"), "TTS TTFB"),
    ], 12, 0, stack=True, description="p95s do not add up to the V2V p95; the stack shows which stage grew."),
    panel("TTFT and ITL", [
        (q(0.5, TTFT, scale="1000 * "), "TTFT p50"), (q(0.95, TTFT, scale="1000 * "), "TTFT p95"),
        (q(0.5, ITL, scale="1000 * "), "ITL p50"), (q(0.95, ITL, scale="1000 * "), "ITL p95"),
    ], 0, 8, description="GenAI client metrics (seconds, shown in ms): per LLM request / per chunk."),
    panel("Goodput vs budget", [
        (f"1 - sum(rate(voice_turns_over_budget_total{{{SEL}}}[{RATE}])) / sum(rate({V2V}_count{{{SEL}}}[{RATE}]))",
         "turns within the V2V budget"),
    ], 12, 8, unit="percentunit", thresholds=[{"color": "red", "value": None}, {"color": "green", "value": 0.9}],
          description="Share of turns whose V2V is within the budget voicetrace was given (default 1000 ms); "
                      "the line is the 90 % target of the VoiceGoodputUnderTarget alert."),
    panel("Barge-ins", [
        (f"sum(rate(voice_barge_ins_total{{{SEL}}}[{RATE}])) / sum(rate(voice_turns_total{{{SEL}}}[{RATE}]))",
         "share of turns talked over"),
    ], 0, 16, unit="percentunit"),
    panel("Errors by stage (per turn)", [
        (f"sum by (voice_stage) (rate(voice_errors_total{{{SEL}}}[{RATE}])) / scalar(sum(rate(voice_turns_total{{{SEL}}}[{RATE}])))",
         "{{voice_stage}}"),
    ], 12, 16, unit="percentunit"),
    panel("V2V p95 by language", [(q(0.95, V2V, by="voice_language"), "{{voice_language}}")], 0, 24),
    panel("V2V p95 by model", [(q(0.95, V2V, by="gen_ai_request_model"), "{{gen_ai_request_model}}")], 12, 24),
    panel("LLM tokens per second", [
        (f"sum by (gen_ai_token_type) (rate(gen_ai_client_token_usage_sum{{{SEL}}}[{RATE}]))", "{{gen_ai_token_type}}"),
    ], 0, 32, unit="short"),
    panel("Turns per minute", [(f"60 * sum(rate(voice_turns_total{{{SEL}}}[{RATE}]))", "turns")], 12, 32, unit="short"),
]

VARIABLES = [
    {"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus"},
    {"name": "service", "type": "query", "label": "service", "includeAll": True, "multi": True, "allValue": ".*",
     "datasource": {"type": "prometheus", "uid": "${datasource}"}, "refresh": 2,
     "definition": "label_values(voice_turns_total, service_name)",
     "query": {"query": "label_values(voice_turns_total, service_name)", "refId": "service"}},
    {"name": "environment", "type": "query", "label": "environment", "includeAll": True, "multi": True,
     "allValue": ".*", "datasource": {"type": "prometheus", "uid": "${datasource}"}, "refresh": 2,
     "definition": "label_values(voice_turns_total, deployment_environment)",
     "query": {"query": "label_values(voice_turns_total, deployment_environment)", "refId": "environment"}},
    {"name": "jaeger_url", "type": "textbox", "label": "Jaeger URL", "query": "http://localhost:16686"},
    {"name": "trace_id", "type": "textbox", "label": "trace id (from an exemplar)", "query": ""},
    {"name": "budget_ms", "type": "constant", "query": "1000", "hide": 2},
]

DASHBOARD = {
    "title": "voicetrace: voice agent latency",
    "uid": "voicetrace-latency",
    "description": "voicetrace's metrics (docs/METRICS.md): V2V and its stages, goodput, barge-ins, errors.",
    "tags": ["voicetrace", "voice", "latency"],
    "schemaVersion": 39,
    "version": 1,
    "editable": True,
    "refresh": "30s",
    "time": {"from": "now-6h", "to": "now"},
    "templating": {"list": VARIABLES},
    "panels": PANELS,
    "links": [{"title": "Jaeger", "url": "${jaeger_url}", "type": "link", "targetBlank": True}],
}

if __name__ == "__main__":
    out = Path(__file__).with_name("grafana-voicetrace.json")
    out.write_text(json.dumps(DASHBOARD, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")
