"""``report -o report.html``: one self-contained HTML file (plotly.js inlined; opens offline from disk).

Everything from a trace is escaped: the tables (``html_tables``) go through ``html.escape``; figure data travels
as JSON inside ``<script type="application/json">`` with ``<``/``>``/``&`` written as ``\\u003c`` etc.,
so transcript text can never close the script element or become markup.
"""

from __future__ import annotations

import html
from importlib import resources

import orjson
import pandas as pd

from voicetrace.analysis.metrics import METRICS
from voicetrace.analysis.summary import too_few_note
from voicetrace.analysis.turns import KEY
from voicetrace.analysis.waterfall import select_turns, turn_trees
from voicetrace.render import html_audio
from voicetrace.render import html_figures as figs
from voicetrace.render.fmt import share, stat_ms
from voicetrace.render.html_tables import acoustic_section, mean_breakdown, other_table, turn_table

MAX_WATERFALLS = 200
HEADLINE_CARDS = (("v2v", "p50"), ("v2v", "p90"), ("v2v", "p95"), ("v2v", "p99"), ("ttft", "p50"), ("ttft", "p95"),
                  ("itl", "p50"), ("itl", "p99"), ("turn_e2e", "p50"))


def plotly_js() -> str:
    js = resources.files("plotly").joinpath("package_data/plotly.min.js").read_text(encoding="utf-8")
    return js.replace("</script", "<\\/script")


def _json_for_script(value) -> str:
    text = orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY).decode()
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _waterfalls(report) -> tuple[list, dict, html_audio.PageAudio]:
    turns = report.turns
    if not len(turns):
        return [], {}, html_audio.page_audio(report, turns)
    chosen = select_turns(turns, MAX_WATERFALLS)
    audio = html_audio.page_audio(report, chosen)
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
        audio.attach(fig, row)
        index[key] = len(out)
        out.append(fig)
    return out, index, audio


def _headline(report) -> str:
    s = report.summary
    v2v = s.get("v2v")
    cards = [("calls", f"{s.calls}"), ("turns", f"{s.turns}")]
    cards += [(f"{METRICS[key].header} {p}", stat_ms(s.get(key), p)) for key, p in HEADLINE_CARDS]
    cards.append((f"voice goodput (V2V ≤ {s.budget_ms:,.0f} ms)", f"{share(s.goodput)} of {s.goodput_n}"))
    body = "".join(f'<div class="card"><div class="v">{html.escape(v)}</div><div class="k">{html.escape(k)}</div></div>'
                   for k, v in cards)
    note = ""
    if 0 < v2v.n < 100:
        note = (f'<p class="note">{v2v.n} turn(s) with V2V: percentiles that need more turns show the count instead '
                f'({too_few_note()}). All times in ms.</p>')
    return f'<section id="headline"><div class="cards">{body}</div>{note}</section>'


def build_page(report) -> str:
    waterfalls, wf_index, audio = _waterfalls(report)
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
    data = {"figures": figures, "waterfalls": waterfalls, "default_waterfall": default, "audio": {"calls": audio.calls}}
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
        f'{audio.player_html()}<div class="plot" id="waterfall"></div></section>'
        if waterfalls else '<section id="waterfall-section"><h2>Waterfall</h2><p class="note">no turns to draw</p></section>')
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>voicetrace report</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{_CSS}{html_audio.CSS}</style>
<script>{plotly_js()}</script>
</head><body>
<h1>voicetrace report</h1>
<p class="note">from {html.escape(sources or "—")}</p>{skipped}
{_headline(report)}
{wf_section}
<section id="breakdown-section"><h2>Where V2V goes</h2><div class="plot" id="fig-breakdown"></div>{mean_breakdown(report)}</section>
<section id="distributions"><h2>Distributions</h2>{divs}</section>
{turn_table(report, wf_index)}
{acoustic_section(report)}
{other_table(report)}
<script type="application/json" id="voicetrace-data">{_json_for_script(data)}</script>
<script>{html_audio.JS}{_JS}</script>
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
    return Plotly.react('waterfall', w.data, w.layout, cfg).then(function () {  // the audio player follows
      document.dispatchEvent(new CustomEvent('voicetrace:waterfall', {detail: {index: i, waterfall: w}}));
    });
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
