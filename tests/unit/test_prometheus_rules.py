"""dashboards/: the rules pass promtool (check and unit tests of each alert firing and not), the
dashboard JSON is the generator's output and names only metrics voicetrace exports, and the Collector
config's pipelines use components it defines. (Their queries run on a real Prometheus in
tests/integration/test_prometheus.py.)"""

from __future__ import annotations

import json
import re
import runpy
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from voicetrace import metric_names as mn

DASHBOARDS = Path(__file__).resolve().parents[2] / "dashboards"
SERIES_SUFFIXES = ("_bucket", "_count", "_sum", "")


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.fail("promtool is not installed: run scripts/install-test-deps.sh (make test does)")
    return found


def test_promtool_checks_the_rules():
    done = subprocess.run([promtool(), "check", "rules", "prometheus-rules.yml"], cwd=DASHBOARDS,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 8 rules found" in done.stdout


def test_promtool_unit_tests_each_alert_firing_and_not_firing():
    tests = yaml.safe_load((DASHBOARDS / "prometheus-rules.test.yml").read_text())
    alerts = {r["alert"] for g in yaml.safe_load((DASHBOARDS / "prometheus-rules.yml").read_text())["groups"]
              for r in g["rules"] if "alert" in r}
    cases = [c for t in tests["tests"] for c in t.get("alert_rule_test", [])]
    assert {c["alertname"] for c in cases if c["exp_alerts"]} == alerts  # each one fires somewhere
    assert {c["alertname"] for c in cases if not c["exp_alerts"]} == alerts  # and stays quiet somewhere
    done = subprocess.run([promtool(), "test", "rules", "prometheus-rules.test.yml"], cwd=DASHBOARDS,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def dashboard_exprs() -> list[str]:
    doc = json.loads((DASHBOARDS / "grafana-voicetrace.json").read_text())
    return [t["expr"] for p in doc["panels"] for t in p["targets"]]


def rule_exprs() -> list[str]:
    groups = yaml.safe_load((DASHBOARDS / "prometheus-rules.yml").read_text())["groups"]
    return [r["expr"] for g in groups for r in g["rules"]]


def test_dashboard_json_is_what_the_generator_writes(tmp_path):
    module = runpy.run_path(str(DASHBOARDS / "make_dashboard.py"))
    assert json.loads((DASHBOARDS / "grafana-voicetrace.json").read_text()) == json.loads(
        json.dumps(module["DASHBOARD"]))


def test_queries_name_only_metrics_voicetrace_exports():
    exported = {mn.prometheus_name(i) + s for i in mn.INSTRUMENTS for s in SERIES_SUFFIXES}
    recorded = {r["record"] for g in yaml.safe_load((DASHBOARDS / "prometheus-rules.yml").read_text())["groups"]
                for r in g["rules"] if "record" in r}
    for expr in dashboard_exprs() + rule_exprs():
        names = set(re.findall(r"\b((?:voice|gen_ai)[a-z0-9_:]*)\s*[{\[]", expr))
        names |= set(re.findall(r"(voice:[a-z0-9_:]+)", expr))
        assert names, expr
        assert names <= exported | recorded, (expr, names - exported - recorded)


def test_collector_pipelines_use_the_components_it_defines():
    config = yaml.safe_load((DASHBOARDS / "otel-collector.yaml").read_text())
    pipelines = config["service"]["pipelines"]
    assert set(pipelines) == {"traces", "metrics"}
    for pipeline in pipelines.values():
        for kind in ("receivers", "processors", "exporters"):
            assert set(pipeline[kind]) <= set(config[kind]), (kind, pipeline[kind])
    assert config["exporters"]["prometheus"]["enable_open_metrics"] is True  # exemplars


def test_the_replay_prometheus_config_is_valid_and_loads_the_rules():
    done = subprocess.run([promtool(), "check", "config", "prometheus.yml"], cwd=DASHBOARDS,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 8 rules found" in done.stdout
