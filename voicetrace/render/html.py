"""``report -o report.html``: one self-contained HTML file (plotly.js inlined; opens offline from disk).

Everything from a trace is escaped: tables are built here with ``html.escape``; figure data travels
as JSON inside ``<script type="application/json">`` with ``<``/``>``/``&`` written as ``\\u003c`` etc.,
so transcript text can never close the script element or become markup.
"""

from __future__ import annotations

import html
import math
from importlib import resources

import numpy as np
import orjson
import pandas as pd

from voicetrace.analysis.breakdown import SEGMENT_LABELS, SEGMENTS
from voicetrace.analysis.turns import KEY
from voicetrace.analysis.waterfall import select_turns, turn_trees
from voicetrace.render import html_figures as figs
from voicetrace.render.fmt import human_bytes, ms, share, stat_ms

MAX_TABLE_ROWS = 1000
MAX_WATERFALLS = 200
SNIPPET_CHARS = 80


def plotly_js() -> str:
    js = resources.files("plotly").joinpath("package_data/plotly.min.js").read_text(encoding="utf-8")
    return js.replace("</script", "<\\/script")


def _json_for_script(value) -> str:
    text = orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY).decode()
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _waterfalls(report) -> tuple[list, dict]:
    turns = report.turns
    if not len(turns):
        return [], {}
    chosen = select_turns(turns, MAX_WATERFALLS)
    tree, events = turn_trees(report.tables, chosen)
    tree_groups = dict(iter(tree.groupby(KEY, sort=False)))
    event_groups = dict(iter(events.groupby(KEY, sort=False)))
    empty_events = events.iloc[0:0]
    out, index = [], {}
    for _, row in chosen.iterrows():
        key = (row["trace_id"], row["turn_span_id"])
        if key not in tree_groups:
            continue
        fig = figs.waterfall(row, tree_groups[key], event_groups.get(key, empty_events))
        v2v = "—" if pd.isna(row["v2v_ms"]) else f"{row['v2v_ms']:,.0f} ms"
        fig["label"] = f"{figs.turn_label(row)} · V2V {v2v}"
        index[key] = len(out)
        out.append(fig)
    return out, index


def _headline(report) -> str:
    s = report.summary
    v2v, ttft, itl, e2e = s.get("v2v"), s.get("ttft"), s.get("itl"), s.get("turn_e2e")
    cards = [
        ("calls", f"{s.calls}"), ("turns", f"{s.turns}"),
        ("V2V p50", stat_ms(v2v, "p50")), ("V2V p90", stat_ms(v2v, "p90")),
        ("V2V p95", stat_ms(v2v, "p95")), ("V2V p99", stat_ms(v2v, "p99")),
        ("TTFT p50", stat_ms(ttft, "p50")), ("TTFT p95", stat_ms(ttft, "p95")),
        ("ITL p50", stat_ms(itl, "p50")), ("ITL p99", stat_ms(itl, "p99")),
        ("turn E2E p50", stat_ms(e2e, "p50")),
        (f"voice goodput (V2V ≤ {s.budget_ms:,.0f} ms)", f"{share(s.goodput)} of {s.goodput_n}"),
    ]
    body = "".join(f'<div class="card"><div class="v">{html.escape(v)}</div><div class="k">{html.escape(k)}</div></div>'
                   for k, v in cards)
    note = ""
    if 0 < v2v.n < 100:
        note = (f'<p class="note">{v2v.n} turn(s) with V2V: percentiles that need more turns show the count instead '
                f'(p90 ≥10, p95 ≥20, p99 ≥100). All times in ms.</p>')
    return f'<section id="headline"><div class="cards">{body}</div>{note}</section>'


_TABLE_COLUMNS = [
    ("at_s", "at s"), ("v2v_ms", "V2V"), ("endpointing_ms", "endpoint"), ("asr_final_ms", "ASR fin"),
    ("ttft_ms", "TTFT"), ("first_sentence_ms", "1st sent"), ("tts_ttfb_ms", "TTS TTFB"),
    ("transport_ms", "transport"), ("bd_unattributed_ms", "unattrib."), ("turn_e2e_ms", "turn E2E"),
    ("itl_p50_ms", "ITL p50"), ("tpot_ms", "TPOT"), ("output_tokens", "out tok"), ("prompt_tokens", "prompt tok"),
    ("kv_cache_bytes", "KV cache"),
]


def _cell(col: str, value) -> str:
    if col == "kv_cache_bytes":
        return human_bytes(value)
    if col == "at_s":
        return "—" if value is None or pd.isna(value) else f"{value:.1f}"
    try:
        return ms(float(value)) if value is not None and not pd.isna(value) else "—"
    except (TypeError, ValueError):
        return "—"


def _table_columns(turns) -> list:
    """The turn table's columns; acoustic V2V and acoustic − event right after V2V when the run's call.wav was analysed."""
    if "acoustic_v2v_ms" not in turns:
        return _TABLE_COLUMNS
    at = [c for c, _ in _TABLE_COLUMNS].index("v2v_ms") + 1
    return _TABLE_COLUMNS[:at] + [("acoustic_v2v_ms", "ac V2V"), ("v2v_delta_ms", "Δ ac")] + _TABLE_COLUMNS[at:]


def _acoustic_section(report) -> str:
    """Barge-ins found in the recordings and acoustic/event V2V disagreements (voicetrace.acoustic)."""
    acoustic = getattr(report, "acoustic", None)
    if acoustic is None:
        return ""
    rows = "".join(
        f"<tr><td>{html.escape(str(r.conversation))}</td><td>{html.escape(str(r.turn))}</td>"
        f'<td class="n">{r.start_ms / 1000:.2f}</td><td class="n">{ms(r.overlap_ms)}</td>'
        f"<td>{html.escape(r.interrupter)}</td><td>{html.escape(r.interrupted_speaker)}</td><td>{html.escape(r.stopped)}</td></tr>"
        for r in acoustic.barge_ins.itertuples())
    barge = (f"<table><thead><tr><th>call</th><th>turn</th><th>at s</th><th>overlap ms</th><th>interrupter</th>"
             f"<th>interrupted</th><th>stopped</th></tr></thead><tbody>{rows}</tbody></table>"
             if rows else '<p class="note">no barge-ins (both sides voiced at once) in the recording</p>')
    warns = "".join(f'<p class="note warn">{html.escape(w)}</p>' for w in acoustic.warnings)
    ok = "" if warns else f'<p class="note">acoustic and event V2V agree within {acoustic.tolerance_ms:g} ms on every turn</p>'
    return ('<section id="acoustic"><h2>From the recording</h2><p class="note">an energy detector on 10 ms frames of '
            "call.wav (independent of the pipeline's VAD): ac V2V = caller speech end → bot audible, Δ ac = acoustic − event V2V</p>"
            f"{ok}{warns}<h3>Barge-ins</h3>{barge}</section>")


def _turn_table(report, wf_index: dict) -> str:
    turns = report.turns
    columns = _table_columns(turns)
    if not len(turns):
        return '<section id="turns"><h2>Turns</h2><p class="note">no turns in the trace input</p></section>'
    content = report.content_captured
    shown = turns
    note = ""
    if len(turns) > MAX_TABLE_ROWS:
        shown = turns.sort_values("v2v_ms", ascending=False, na_position="first").head(MAX_TABLE_ROWS)
        note = f'<p class="note">showing the {MAX_TABLE_ROWS} slowest of {len(turns)} turns by V2V; every turn is in <code>--json</code></p>'
    head = "<th>call</th><th>turn</th>" + "".join(f"<th>{html.escape(h)}</th>" for _, h in columns)
    if content:
        head += "<th>caller said</th><th>bot said</th>"
    budget = report.summary.budget_ms
    rows = []
    for rec in shown.to_dict("records"):
        wf = wf_index.get((rec["trace_id"], rec["turn_span_id"]), -1)
        slow = not pd.isna(rec["v2v_ms"]) and rec["v2v_ms"] > budget
        cls = ' class="over"' if slow else ""
        cells = [f"<td>{html.escape(str(rec['conversation']))}</td>",
                 f"<td>{html.escape(str(rec['turn']))}{'⚡' if rec['interrupted'] else ''}</td>"]
        cells += [f'<td class="n">{_cell(c, rec[c])}</td>' for c, _ in columns]
        if content:
            for col in ("transcript", "llm_output"):
                text = rec[col] if isinstance(rec[col], str) else ""
                snippet = text[:SNIPPET_CHARS] + ("…" if len(text) > SNIPPET_CHARS else "")
                cells.append(f'<td class="t">{html.escape(snippet)}</td>')
        rows.append(f'<tr data-wf="{wf}"{cls}>{"".join(cells)}</tr>')
    privacy = "" if content else '<p class="note">transcripts not captured (run with --capture-content to record them)</p>'
    return (f'<section id="turns"><h2>Turns</h2>{note}{privacy}<div class="scroll"><table class="turns">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
            '<p class="note">ms; red rows are over the V2V budget; ⚡ the caller barged in; click a row for its waterfall.</p></section>')


def _other_table(report) -> str:
    other = report.other
    if not len(other):
        return ""
    rows = "".join(
        f"<tr><td>{html.escape(str(r['service']))}</td><td>{html.escape(str(r['name']))}</td>"
        f'<td class="n">{int(r["count"])}</td><td class="n">{ms(r["p50_ms"])}</td><td class="n">{ms(r["max_ms"])}</td></tr>'
        for r in other.head(200).to_dict("records"))
    return ('<section id="other"><h2>Other spans</h2><p class="note">spans outside voicetrace\'s span model or outside any turn (e.g. a tool at call start), kept and grouped by name</p>'
            f"<table><thead><tr><th>service</th><th>name</th><th>count</th><th>p50 ms</th><th>max ms</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></section>")


def _mean_breakdown(report) -> str:
    turns = report.turns
    if not len(turns) or turns["v2v_ms"].isna().all():
        return ""
    rows = turns[turns["v2v_ms"].notna()]
    parts = []
    for seg in SEGMENTS:
        col = rows[f"bd_{seg}_ms"]
        if col.notna().any():
            parts.append(f"{html.escape(SEGMENT_LABELS[seg])} {ms(np.nan_to_num(col.to_numpy()).mean())}")
    return f'<p class="note">mean over {len(rows)} turn(s): {" + ".join(parts)} = V2V {ms(rows["v2v_ms"].mean())} ms</p>'


def build_page(report) -> str:
    waterfalls, wf_index = _waterfalls(report)
    turns = report.turns
    figures = {
        "breakdown": figs.breakdown(turns, wf_index) if len(turns) else None,
        "itl": figs.itl_histogram(report.gaps),
        "v2v_cdf": figs.v2v_cdf(turns, report.summary.budget_ms) if len(turns) else None,
        "stages": figs.stage_boxes(turns) if len(turns) else None,
        "languages": figs.language_boxes(turns) if len(turns) else None,
        "context": figs.context_growth(turns, report.model_shape.bytes_per_token if report.model_shape else None),
    }
    figures = {k: v for k, v in figures.items() if v is not None}
    default = 0
    if waterfalls:
        worst = turns["v2v_ms"].idxmax() if turns["v2v_ms"].notna().any() else None
        if worst is not None:
            default = wf_index.get((turns.at[worst, "trace_id"], turns.at[worst, "turn_span_id"]), 0)
    data = {"figures": figures, "waterfalls": waterfalls, "default_waterfall": default}
    divs = "".join(f'<div class="plot" id="fig-{k}"></div>' for k in figures if k != "breakdown")
    sources = ", ".join(report.sources[:10]) + (f" and {len(report.sources) - 10} more" if len(report.sources) > 10 else "")
    selector_note = (f"{len(waterfalls)} of {len(turns)} turns have a waterfall here (the slowest and a spread over V2V)"
                     if len(waterfalls) < len(turns) else "")
    skipped = (f'<p class="note warn">{report.tables.skipped} unreadable line(s) in the trace input were skipped</p>'
               if report.tables.skipped else "")
    skipped += "".join(
        f'<p class="note warn">LLM server clock off by {r.skew_ms:,.1f} ms (server span {html.escape(str(r.server_span_id))}): '
        "its queue/prefill/decode are not drawn</p>" for r in report.server_skew.itertuples())
    wf_section = (
        '<section id="waterfall-section"><h2>Waterfall</h2>'
        f'<label>turn <select id="turn-select"></select></label> <span class="note">{html.escape(selector_note)}</span>'
        '<div class="plot" id="waterfall"></div></section>'
        if waterfalls else '<section id="waterfall-section"><h2>Waterfall</h2><p class="note">no turns to draw</p></section>')
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>voicetrace report</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{_CSS}</style>
<script>{plotly_js()}</script>
</head><body>
<h1>voicetrace report</h1>
<p class="note">from {html.escape(sources or "—")}</p>{skipped}
{_headline(report)}
{wf_section}
<section id="breakdown-section"><h2>Where V2V goes</h2><div class="plot" id="fig-breakdown"></div>{_mean_breakdown(report)}</section>
<section id="distributions"><h2>Distributions</h2>{divs}</section>
{_turn_table(report, wf_index)}
{_acoustic_section(report)}
{_other_table(report)}
<script type="application/json" id="voicetrace-data">{_json_for_script(data)}</script>
<script>{_JS}</script>
</body></html>
"""


def render(report, out) -> None:
    """Renderer interface: the whole page to ``out``."""
    out.write(build_page(report))


_CSS = """
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{border:1px solid #ddd;border-radius:6px;padding:8px 12px;min-width:110px}
.card .v{font-size:20px;font-weight:600} .card .k{color:#666;font-size:12px}
.note{color:#666;font-size:12px} .warn{color:#b35806}
.plot{min-height:300px}
#distributions{display:grid;grid-template-columns:repeat(auto-fit,minmax(560px,1fr));gap:12px}
#distributions h2{grid-column:1/-1}
.scroll{overflow-x:auto;max-height:640px;overflow-y:auto}
table{border-collapse:collapse;font-size:12px} th,td{border-bottom:1px solid #eee;padding:3px 6px;text-align:left}
th{position:sticky;top:0;background:#fafafa} td.n{text-align:right;font-variant-numeric:tabular-nums}
td.t{max-width:280px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
tr.over td{background:#fff0f0} tr[data-wf]:hover td{background:#f0f6ff;cursor:pointer}
select{font-size:14px;max-width:600px}
"""

_JS = """
(function () {
  var data = JSON.parse(document.getElementById('voicetrace-data').textContent);
  var cfg = {displaylogo: false, responsive: true};
  var draws = [];
  Object.keys(data.figures).forEach(function (k) {
    var f = data.figures[k];
    draws.push(Plotly.newPlot('fig-' + k, f.data, f.layout, cfg));
  });
  var sel = document.getElementById('turn-select');
  function drawWaterfall(i) {
    var w = data.waterfalls[i];
    if (!w) return Promise.resolve();
    sel.value = String(i);
    return Plotly.react('waterfall', w.data, w.layout, cfg);
  }
  if (sel) {
    data.waterfalls.forEach(function (w, i) {
      var o = document.createElement('option');
      o.value = String(i); o.textContent = w.label; sel.appendChild(o);
    });
    sel.addEventListener('change', function () { drawWaterfall(+sel.value); });
    draws.push(drawWaterfall(data.default_waterfall));
  }
  document.querySelectorAll('tr[data-wf]').forEach(function (tr) {
    tr.addEventListener('click', function () {
      var i = +tr.getAttribute('data-wf');
      if (i >= 0) { drawWaterfall(i); document.getElementById('waterfall-section').scrollIntoView(); }
    });
  });
  var bd = document.getElementById('fig-breakdown');
  Promise.all(draws).then(function () {
    if (bd && bd.on) bd.on('plotly_click', function (ev) {
      var i = ev.points && ev.points[0] ? ev.points[0].customdata : -1;
      if (i >= 0) { drawWaterfall(i); document.getElementById('waterfall-section').scrollIntoView(); }
    });
    document.body.setAttribute('data-ready', '1');
  }, function (err) { console.error('voicetrace: a plot failed: ' + err); });
})();
"""
