"""Plotly figure specs (plain dicts) for the HTML report; sized to stay small at thousands of turns.

Text that came from a trace (span names, attributes, transcripts) is HTML-escaped here, because
plotly renders a subset of HTML tags in hover labels.
"""

from __future__ import annotations

import html
import math

import numpy as np
import pandas as pd

from voicetrace import semconv as sc
from voicetrace.analysis.metrics import METRICS, SEGMENTS, STAGES

COLORS = {
    "endpointing": "#8c6bb1", "asr_final": "#2b8cbe", "llm_queue": "#fdd0a2", "llm_prefill": "#fd8d3c",
    "tools": "#74c476", "llm_ttft": "#e6550d", "first_sentence": "#fdae6b", "tts_ttfb": "#de2d26",
    "transport": "#969696", "tts_leading_silence": "#c7e9c0", "loop_lag": "#756bb1", "queue_wait": "#bcbddc", "unattributed": "#d9d9d9", "ttft": "#e6550d", "v2v": "#31a354",
}
"""Colour per metric key: every breakdown segment and stage, and the per-language boxes."""
LANGUAGE_BOXES = ("v2v", "ttft", "asr_final")
SPAN_COLORS = {
    sc.SPAN_TURN: "#bdbdbd", sc.SPAN_USER_SPEECH: "#6baed6", sc.SPAN_ENDPOINTING: "#8c6bb1",
    sc.SPAN_ASR: "#2b8cbe", sc.SPAN_LLM: "#e6550d", sc.SPAN_TTS: "#de2d26", sc.SPAN_BOT_SPEECH: "#31a354",
}
GROUP_COLORS = {"server": "#fd8d3c", "tool": "#74c476", "other": "#9e9ac8"}
MAX_BREAKDOWN_BARS = 300
MAX_CDF_POINTS = 1000
MAX_HOVER_ATTRS = 20


def esc(value) -> str:
    return html.escape(str(value), quote=True)


def _num(values) -> list:
    """Floats for JSON, None for missing (plotly draws gaps)."""
    arr = np.asarray(values, dtype="float64")
    return [None if math.isnan(v) else round(float(v), 3) for v in arr]


def _layout(title: str, **extra) -> dict:
    layout = {"title": {"text": esc(title), "x": 0.01, "xanchor": "left"}, "margin": {"l": 60, "r": 20, "t": 50, "b": 50},
              "height": 380, "template": None, "hovermode": "closest"}
    layout.update(extra)
    return layout


def turn_label(row) -> str:
    return f"{row['conversation']} · turn {row['turn']}"


# --- waterfall -------------------------------------------------------------------------

def _hover(name: str, start: float, end: float, attrs) -> str:
    lines = [f"<b>{esc(name)}</b>", f"{start:,.1f} → {end:,.1f} ms ({end - start:,.1f} ms)"]
    if isinstance(attrs, dict):
        for i, (k, v) in enumerate(attrs.items()):
            if i == MAX_HOVER_ATTRS:
                lines.append(f"… {len(attrs) - MAX_HOVER_ATTRS} more")
                break
            text = str(v)
            lines.append(f"{esc(k)}: {esc(text[:120] + ('…' if len(text) > 120 else ''))}")
    return "<br>".join(lines)


def waterfall(turn: pd.Series, tree: pd.DataFrame, events: pd.DataFrame) -> dict:
    """The span tree of one turn: bars on one ms axis from speech end, token ticks on the llm bar."""
    tree = tree.reset_index(drop=True)
    labels, seen = [], {}
    for name, depth in zip(tree["name"], tree["depth"]):
        base = "\u2003" * int(depth) + str(name)
        seen[base] = seen.get(base, 0) + 1
        labels.append(base if seen[base] == 1 else f"{base} #{seen[base]}")
    by_span = dict(zip(tree["span_id"], labels))
    data = []
    colors = [SPAN_COLORS.get(n, GROUP_COLORS.get(g, "#9e9ac8")) for n, g in zip(tree["name"], tree["group"])]
    starts, ends = tree["start_ms"].to_numpy(), tree["end_ms"].to_numpy()
    data.append({
        "type": "bar", "orientation": "h", "name": "spans", "showlegend": False,
        "y": labels, "base": _num(starts), "x": _num(ends - starts),
        "marker": {"color": colors, "opacity": [0.35 if g == "turn" else 0.9 for g in tree["group"]]},
        "hovertext": [_hover(n, s, e, a) for n, s, e, a in zip(tree["name"], starts, ends, tree["attributes"])],
        "hoverinfo": "text",
    })
    tokens = events[events["name"] == sc.EVENT_TOKEN]
    if len(tokens):
        at = tokens["at_ms"].to_numpy()
        order = np.argsort(at, kind="stable")
        gaps = np.diff(at[order], prepend=np.nan)
        data.append({
            "type": "scatter", "mode": "markers", "name": "tokens",
            "x": _num(at[order]), "y": [by_span.get(s, "") for s in tokens["span_id"].to_numpy()[order]],
            "marker": {"symbol": "line-ns-open", "size": 14, "color": "#222", "line": {"width": 1}},
            "hovertext": [f"token {i + 1}" + ("" if math.isnan(g) else f", +{g:.1f} ms") for i, g in enumerate(gaps)],
            "hoverinfo": "text",
        })
    marks = events[events["name"].isin([sc.EVENT_FIRST_TOKEN, sc.EVENT_TTS_FIRST_AUDIO, sc.EVENT_ASR_INTERIM])]
    if len(marks):
        data.append({
            "type": "scatter", "mode": "markers", "name": "events",
            "x": _num(marks["at_ms"]), "y": [by_span.get(s, "") for s in marks["span_id"]],
            "marker": {"symbol": "diamond", "size": 10, "color": "#111"},
            "hovertext": [f"{esc(n)} at {t:,.1f} ms" for n, t in zip(marks["name"], marks["at_ms"])],
            "hoverinfo": "text",
        })
    shapes = [{"type": "line", "x0": 0, "x1": 0, "yref": "paper", "y0": 0, "y1": 1, "line": {"color": "#3182bd", "dash": "dot"}}]
    annotations = [{"x": 0, "yref": "paper", "y": 1.02, "text": "caller speech end", "showarrow": False, "xanchor": "left"}]
    v2v = turn.get("v2v_ms")
    if v2v is not None and not (isinstance(v2v, float) and math.isnan(v2v)):
        shapes.append({"type": "line", "x0": v2v, "x1": v2v, "yref": "paper", "y0": 0, "y1": 1,
                       "line": {"color": "#31a354", "dash": "dot"}})
        annotations.append({"x": v2v, "yref": "paper", "y": 1.02, "text": f"V2V {v2v:,.0f} ms",
                            "showarrow": False, "xanchor": "left"})
    origin = tree["origin"].iloc[0] if len(tree) else "speech end"
    layout = _layout(f"{turn_label(turn)}: span tree", height=max(260, 60 + 26 * len(labels)),
                     xaxis={"title": {"text": f"ms from caller {origin}" if origin == "speech end" else "ms from turn start (no speech end)"},
                            "zeroline": False},
                     yaxis={"autorange": "reversed", "automargin": True, "type": "category"},
                     shapes=shapes, annotations=annotations, showlegend=False, bargap=0.35)
    return {"data": data, "layout": layout}


# --- breakdown -------------------------------------------------------------------------

def breakdown(turns: pd.DataFrame, wf_index: dict) -> dict:
    """Stacked bar per turn (or per V2V-percentile bin when there are many) summing to V2V."""
    rows = turns[turns["v2v_ms"].notna()]
    cols = {s: METRICS[s].segment_column for s in SEGMENTS}
    segs = [s for s in SEGMENTS if rows[cols[s]].notna().any()] if len(rows) else []
    if len(rows) <= MAX_BREAKDOWN_BARS:
        x = [f"{r['conversation']} #{r['turn']}" for _, r in rows.iterrows()]
        values = {s: rows[cols[s]].to_numpy() for s in segs}
        custom = [wf_index.get((r["trace_id"], r["turn_span_id"]), -1) for _, r in rows.iterrows()]
        title = "V2V breakdown per turn (critical path; segments sum to V2V)"
        xtitle = "turn"
    else:
        order = rows.sort_values("v2v_ms", kind="stable")
        bins = np.array_split(np.arange(len(order)), 50)
        x = [f"p{100 * b[0] / len(order):.0f}–{100 * (b[-1] + 1) / len(order):.0f}" for b in bins]
        values = {s: np.array([np.nan_to_num(order[cols[s]].to_numpy()[b]).mean() for b in bins]) for s in segs}
        custom = [-1] * len(bins)
        title = f"V2V breakdown, mean per V2V percentile bin ({len(order)} turns; segments sum to the bin's mean V2V)"
        xtitle = "turns ranked by V2V"
    data = [{
        "type": "bar", "name": METRICS[s].label, "x": x, "y": _num(np.nan_to_num(values[s])),
        "marker": {"color": COLORS[s]}, "customdata": custom,
        "hovertext": [f"{METRICS[s].label}: " + ("missing" if math.isnan(v) else f"{v:,.1f} ms") for v in values[s]],
        "hoverinfo": "text+x",
    } for s in segs]
    return {"data": data, "layout": _layout(title, barmode="stack", xaxis={"title": {"text": xtitle}, "type": "category"},
                                            yaxis={"title": {"text": "ms"}}, height=420)}


# --- distributions ---------------------------------------------------------------------

def itl_histogram(gaps: pd.DataFrame) -> dict:
    values = gaps["gap_ms"].to_numpy(dtype="float64") if len(gaps) else np.array([])
    data = []
    if len(values):
        top = float(np.percentile(values, 99.5))
        counts, edges = np.histogram(np.clip(values, None, top), bins=60)
        data.append({"type": "bar", "name": "gaps", "x": _num((edges[:-1] + edges[1:]) / 2), "y": counts.tolist(),
                     "width": float(edges[1] - edges[0]), "marker": {"color": "#e6550d"},
                     "hovertemplate": "%{x:.1f} ms: %{y} gaps<extra></extra>"})
    split = int(gaps["split"].sum()) if len(gaps) else 0
    note = f" ({split} split from multi-token chunks)" if split else ""
    return {"data": data, "layout": _layout(f"inter-token latency, {len(values)} gaps{note}",
                                            xaxis={"title": {"text": "ms (last bin holds everything above p99.5)"}},
                                            yaxis={"title": {"text": "gaps"}})}


def v2v_cdf(turns: pd.DataFrame, budget_ms: float) -> dict:
    values = np.sort(turns["v2v_ms"].dropna().to_numpy(dtype="float64"))
    n = len(values)
    idx = np.unique(np.linspace(0, n - 1, min(n, MAX_CDF_POINTS)).round().astype(int)) if n else np.array([], int)
    data = [{"type": "scatter", "mode": "lines+markers" if n <= 50 else "lines", "line": {"shape": "hv"},
             "name": "V2V", "x": _num(values[idx]), "y": _num((idx + 1) / n) if n else [],
             "hovertemplate": "%{x:,.0f} ms: %{y:.0%} of turns<extra></extra>"}]
    shapes = [{"type": "line", "x0": budget_ms, "x1": budget_ms, "yref": "paper", "y0": 0, "y1": 1,
               "line": {"color": "#de2d26", "dash": "dash"}}]
    return {"data": data, "layout": _layout(f"V2V CDF ({n} turns; dashed: budget {budget_ms:,.0f} ms)",
                                            xaxis={"title": {"text": "ms"}}, yaxis={"title": {"text": "share of turns"}, "range": [0, 1.02]},
                                            shapes=shapes, showlegend=False)}


def _box(name: str, values: np.ndarray, color: str) -> dict:
    q1, med, q3 = np.percentile(values, [25, 50, 75])
    return {"type": "box", "name": esc(name), "q1": [q1], "median": [med], "q3": [q3],
            "lowerfence": [float(values.min())], "upperfence": [float(values.max())],
            "x": [esc(name)], "marker": {"color": color}, "hoverinfo": "y"}


def stage_boxes(turns: pd.DataFrame) -> dict:
    data = []
    for stage in STAGES:
        values = turns[METRICS[stage].column].dropna().to_numpy(dtype="float64") if len(turns) else np.array([])
        if len(values):
            data.append(_box(f"{stage} (n={len(values)})", values, COLORS[stage]))
    return {"data": data, "layout": _layout("per stage (min, quartiles, max)", yaxis={"title": {"text": "ms"}}, showlegend=False)}


def language_boxes(turns: pd.DataFrame) -> dict | None:
    if "language" not in turns or turns["language"].isna().all():
        return None
    data = []
    for lang, rows in turns.groupby(turns["language"].fillna("unknown"), sort=True):
        for key in LANGUAGE_BOXES:
            values = rows[METRICS[key].column].dropna().to_numpy(dtype="float64")
            if len(values):
                data.append(_box(f"{lang} {key} (n={len(values)})", values, COLORS[key]))
    title = "per language: " + ", ".join(METRICS[k].label for k in LANGUAGE_BOXES)
    return {"data": data, "layout": _layout(title, yaxis={"title": {"text": "ms"}}, showlegend=False)}


def context_growth(turns: pd.DataFrame, bytes_per_token: int | None) -> dict | None:
    if not len(turns) or turns["prompt_tokens"].isna().all():
        return None
    data = []
    groups = list(turns.groupby("conversation", sort=False))
    if len(groups) > 5:  # many calls: the median per turn number, not one line per call
        by_turn = turns.groupby("turn")
        groups = [(f"median of {len(groups)} calls", pd.DataFrame({
            "turn": list(by_turn.groups), "prompt_tokens": by_turn["prompt_tokens"].median().to_numpy(),
            "kv_cache_bytes": by_turn["kv_cache_bytes"].median().to_numpy()}))]
    for call, rows in groups:
        data.append({"type": "scatter", "mode": "lines+markers", "name": f"{esc(call)} prompt tokens",
                     "x": rows["turn"].tolist(), "y": _num(rows["prompt_tokens"]),
                     "hovertemplate": "turn %{x}: %{y:,} prompt tokens<extra></extra>"})
        if rows["kv_cache_bytes"].notna().any():
            data.append({"type": "scatter", "mode": "lines", "line": {"dash": "dot"}, "yaxis": "y2",
                         "name": f"{esc(call)} KV cache MiB", "x": rows["turn"].tolist(),
                         "y": _num(rows["kv_cache_bytes"] / 2**20),
                         "hovertemplate": "turn %{x}: %{y:,.2f} MiB KV cache<extra></extra>"})
    title = "prompt tokens and KV cache per turn" + (f" ({bytes_per_token:,} bytes/token)" if bytes_per_token else
                                                     " (KV bytes: give --gguf or --model-shape)")
    return {"data": data, "layout": _layout(title, xaxis={"title": {"text": "turn"}}, yaxis={"title": {"text": "prompt tokens"}},
                                            yaxis2={"title": {"text": "MiB"}, "overlaying": "y", "side": "right"})}
