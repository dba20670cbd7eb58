"""A real Prometheus (Debian's, started here on a free loopback port with its own config and storage)
scrapes a real replay (`voicetrace run --prometheus-port`): its quantiles and counters agree with
`voicetrace report` on the same run, and every query of the dashboard and the rules returns series."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import numpy as np
import pytest
import yaml

from tests.conftest import ROOT, SAMPLES, VOICETRACE, wait_for
from voicetrace import metric_names as mn
from voicetrace.analysis.summary import stat
from voicetrace.run.folder import RunFolder
from voicetrace.traces.files import read_trace_files

pytestmark = pytest.mark.integration

CALL = "claim_status"
DASHBOARDS = ROOT / "dashboards"
WINDOW = "15m"  # longer than the whole replay: the run's cumulative numbers, whatever the scrape times


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    def __init__(self, base: str) -> None:
        self.base = base

    def get(self, path: str, **params) -> dict:
        url = f"{self.base}{path}?{urllib.parse.urlencode(params)}" if params else self.base + path
        with urllib.request.urlopen(url, timeout=10) as response:
            doc = json.load(response)
        assert doc["status"] == "success", doc
        return doc["data"]

    def query(self, expr: str, at: float) -> list:
        data = self.get("/api/v1/query", query=expr, time=f"{at:.3f}")
        assert data["resultType"] == "vector", (expr, data)
        return data["result"]

    def scalar(self, expr: str, at: float) -> float:
        result = self.query(expr, at)
        assert len(result) == 1, (expr, result)
        return float(result[0]["value"][1])


@pytest.fixture(scope="module")
def scraped(tmp_path_factory):
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail("prometheus is not installed: run scripts/install-test-deps.sh (make test does)")
    tmp = tmp_path_factory.mktemp("prometheus")
    web_port, metrics_port = _free_port(), _free_port()
    rules = yaml.safe_load((DASHBOARDS / "prometheus-rules.yml").read_text())
    for group in rules["groups"]:
        group["interval"] = "1s"  # the shipped 15 s would evaluate a short replay only a few times
    (tmp / "rules.yml").write_text(yaml.safe_dump(rules))
    (tmp / "prometheus.yml").write_text(yaml.safe_dump({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(tmp / "rules.yml")],
        "scrape_configs": [{"job_name": "voicetrace", "static_configs": [{"targets": [f"127.0.0.1:{metrics_port}"]}]}],
    }))
    log = open(tmp / "prometheus.log", "w")
    server = subprocess.Popen(
        [binary, f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={tmp / 'data'}",
         f"--web.listen-address=127.0.0.1:{web_port}"], stdout=log, stderr=subprocess.STDOUT)
    prom = Prometheus(f"http://127.0.0.1:{web_port}")
    try:
        def ready():
            try:
                return urllib.request.urlopen(prom.base + "/-/ready", timeout=2).status == 200
            except OSError:
                return False

        wait_for(ready, 60, "Prometheus ready")
        out = tmp / "runs"
        env = dict(os.environ, COLUMNS="140")
        run = subprocess.run(
            [str(VOICETRACE), "run", str(SAMPLES / f"{CALL}.wav"), "--out", str(out), "--run-id", "prom",
             "--prometheus-port", str(metrics_port), "--prometheus-linger-s", "60"],
            capture_output=True, text=True, timeout=400, env=env)
        assert run.returncode == 0, run.stderr[-3000:]
        ended = time.time()
        report = subprocess.run([str(VOICETRACE), "report", str(out / "prom"), "--json"], capture_output=True,
                                text=True, timeout=120, env=env)
        assert report.returncode == 0, report.stderr
        yield {"prom": prom, "at": ended, "doc": json.loads(report.stdout), "run": run,
               "tables": read_trace_files([RunFolder(out / "prom").trace])}
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def prometheus_quantile(q: float, values, bounds) -> float:
    """histogram_quantile as Prometheus computes it, on the exporter's buckets of ``values``."""
    upper = list(bounds) + [math.inf]
    counts = np.cumsum([sum(1 for v in values if (upper[i - 1] if i else -math.inf) < v <= upper[i])
                        for i in range(len(upper))])
    rank = q * counts[-1]
    i = int(np.searchsorted(counts, rank))  # first bucket whose cumulative count reaches the rank
    lower = 0.0 if i == 0 else upper[i - 1]
    below = 0 if i == 0 else counts[i - 1]
    return lower + (upper[i] - lower) * (rank - below) / (counts[i] - below)


def bucket_width(value: float, bounds) -> float:
    for lo, hi in zip(bounds, bounds[1:]):
        if lo < value <= hi:
            return hi - lo
    raise AssertionError(f"{value} outside the finite buckets")


@pytest.mark.parametrize("inst,column,scale", [(mn.V2V, "v2v_ms", 1), (mn.TTFT, "ttft_ms", 1000)],
                         ids=["v2v", "ttft"])
@pytest.mark.parametrize("q", [0.5, 0.95])
def test_histogram_quantile_agrees_with_the_report_within_one_bucket(scraped, inst, column, scale, q):
    values = [t[column] for t in scraped["doc"]["turns"] if t[column] is not None]
    assert len(values) >= 3
    name = mn.prometheus_name(inst)
    count = scraped["prom"].scalar(f"sum(last_over_time({name}_count[{WINDOW}]))", scraped["at"])
    assert count == len(values)  # one observation per turn (one LLM request per turn in this call)
    measured = scale * scraped["prom"].scalar(
        f"histogram_quantile({q}, sum by (le) (last_over_time({name}_bucket[{WINDOW}])))", scraped["at"])
    bounds_ms = [b * scale for b in inst.boundaries]
    report = stat(values).raw[f"p{round(q * 100)}"]
    # The buckets hold exactly the report's per-turn values...
    assert measured == pytest.approx(prometheus_quantile(q, values, bounds_ms), abs=1e-6)
    # ...so the estimate is within one bucket of the report's own percentile, give or take the gap
    # between the two turns the report interpolates between (numpy's linear percentile on a few turns;
    # Prometheus takes the bucket of one order statistic): no histogram resolves inside that gap, and
    # it shrinks to nothing as turns accumulate.
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    gap = ordered[math.ceil(position)] - ordered[math.floor(position)]
    width = bucket_width(report, bounds_ms)
    print(f"{inst.name} p{round(q * 100)}: prometheus {measured:.1f} ms, report {report:.1f} ms, "
          f"bucket {width:.0f} ms, interpolation gap {gap:.1f} ms, turns {[round(v, 1) for v in ordered]}")
    assert abs(measured - report) <= width + gap


def test_counters_equal_the_reports_turns_barge_ins_and_errors(scraped):
    prom, at, turns = scraped["prom"], scraped["at"], scraped["doc"]["turns"]
    total = lambda name, sel="": prom.scalar(f"sum(last_over_time({name}{{{sel}}}[{WINDOW}]))", at)
    assert total("voice_turns_total") == len(turns) >= 3
    assert total("voice_barge_ins_total") == sum(1 for t in turns if t["interrupted"])
    assert total("voice_turns_over_budget_total") == sum(1 for t in turns if (t["v2v_ms"] or 0) > 1000)
    spans = scraped["tables"].spans
    stage_errors = spans[(spans["status_code"] == 2) & spans["name"].str.match(r"^(?:llm$|tts$|tool\.)")]
    assert total("voice_errors_total", 'voice_stage=~"llm|tts|tool"') == len(stage_errors)
    labels = prom.get("/api/v1/label/service_name/values", **{"match[]": "voice_turns_total"})
    assert labels == ["voicetrace"]  # the dashboard's $service variable
    assert "conversation_id" not in prom.get("/api/v1/labels", **{"match[]": "{job='voicetrace'}"})


def _dashboard_exprs() -> list[str]:
    doc = json.loads((DASHBOARDS / "grafana-voicetrace.json").read_text())
    return [t["expr"] for p in doc["panels"] for t in p["targets"]]


def test_every_dashboard_query_returns_series(scraped):
    for expr in _dashboard_exprs():
        concrete = expr.replace("$__rate_interval", "5m").replace("$service", ".*").replace("$environment", ".*")
        result = scraped["prom"].query(concrete, scraped["at"])
        assert result, expr
        assert any(math.isfinite(float(r["value"][1])) for r in result), (expr, result)


def test_every_rule_runs_on_the_live_prometheus_and_returns_series(scraped):
    prom, at = scraped["prom"], scraped["at"]
    groups = prom.get("/api/v1/rules")["groups"]
    rules = [r for g in groups for r in g["rules"]]
    assert len(rules) == 8 and all(r["health"] == "ok" for r in rules), [(r["name"], r.get("lastError")) for r in rules]
    for rule in rules:
        if rule["type"] == "recording":
            assert prom.query(rule["query"], at), rule["query"]
            assert prom.query(rule["name"], at), rule["name"]  # Prometheus recorded it during the call
        else:
            prom.query(rule["query"], at)  # runs (fires or not, depending on this machine's V2V)
            lhs = re.split(r"\s[<>]\s", rule["query"])[0]
            assert prom.query(lhs, at), (rule["name"], lhs)
