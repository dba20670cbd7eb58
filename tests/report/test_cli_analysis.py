"""report / diff / check / whatif through the real CLI: output, exit codes, one-line errors."""

from __future__ import annotations

import orjson

from tests.report.synth import Turn, call_spans, write_trace
from tests.unit.test_cli_errors import assert_one_line_error, run_cli


def fast_and_slow(tmp_path):
    fast = write_trace(tmp_path / "fast.jsonl", [call_spans([Turn(at=1000 + 8000 * i, ttft=100) for i in range(3)])])
    slow = write_trace(tmp_path / "slow.jsonl", [call_spans([Turn(at=1000 + 8000 * i, ttft=900) for i in range(3)])])
    return fast, slow


def test_report_writes_html_and_json_with_the_same_numbers(tmp_path, cli_env):
    fast, slow = fast_and_slow(tmp_path)
    out = tmp_path / "r" / "report.html"
    result = run_cli("report", str(fast), str(slow), "--json", "-o", str(out), "--budget-ms", "1500", env=cli_env)
    assert result.returncode == 0, result.stderr
    doc = orjson.loads(result.stdout)
    assert doc["summary"]["calls"] == 2 and doc["summary"]["turns"] == 6
    assert doc["summary"]["goodput"] == 0.5  # fast turns: V2V 1,012 ms; slow: 1,812 ms
    assert out.exists() and "wrote" in result.stderr
    terminal = run_cli("report", str(fast), str(slow), "--budget-ms", "1500", env=cli_env)
    assert terminal.returncode == 0
    assert f"{doc['summary']['metrics_ms']['v2v']['p50']:,.0f}" in terminal.stdout
    assert "50% of 6 turn(s)" in terminal.stdout


def test_check_exits_1_and_lists_violations(tmp_path, cli_env):
    fast, slow = fast_and_slow(tmp_path)
    budgets = tmp_path / "budgets.toml"
    budgets.write_text("goodput = 0.9\nv2v_budget_ms = 1500\n[v2v]\np95 = 1200\n[ttft]\np50 = 300\n")
    bad = run_cli("check", str(slow), "--budget", str(budgets), env=cli_env)
    assert bad.returncode == 1, bad.stderr
    assert "FAIL v2v.p95 <= 1200" in bad.stdout and "FAIL ttft.p50 <= 300" in bad.stdout
    assert "FAIL goodput >= 0.9" in bad.stdout
    assert "3 of 3 budget(s) violated" in bad.stderr and "Traceback" not in bad.stderr
    good = run_cli("check", str(fast), "--budget", str(budgets), env=cli_env)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "all 3 budget(s) met" in good.stdout


def test_diff_marks_the_change(tmp_path, cli_env):
    fast, slow = fast_and_slow(tmp_path)
    result = run_cli("diff", str(fast), str(slow), env=cli_env)
    assert result.returncode == 0, result.stderr
    ttft_row = next(line for line in result.stdout.splitlines() if line.strip("│ ").startswith("ttft") and "p50" in line)
    assert "+800" in ttft_row and "worse" in ttft_row


def test_whatif_reports_the_gain(tmp_path, cli_env):
    fast, _ = fast_and_slow(tmp_path)
    result = run_cli("whatif", str(fast), "--stage", "tts", "--faster-ms", "100", env=cli_env)
    assert result.returncode == 0, result.stderr
    t = Turn(at=0, ttft=100)
    v2v = t.endpoint + t.asr_final + t.gap + t.ttft + t.first_sentence + t.tts_ttfb + t.transport
    assert f"V2V p50: {v2v:,.0f} → {v2v - 100:,.0f} ms" in result.stdout
    off = run_cli("whatif", str(fast), "--stage", "endpointing", "--faster-ms", "100", env=cli_env)
    assert "off the critical path" in off.stdout and "0 of 3 turn(s) gain" in off.stdout


def test_user_errors_are_one_line(tmp_path, cli_env):
    fast, _ = fast_and_slow(tmp_path)
    budgets = tmp_path / "b.toml"
    budgets.write_text("[v2v]\np42 = 1\n")
    assert_one_line_error(run_cli("check", str(fast), "--budget", str(budgets), env=cli_env), 2, "p42")
    assert_one_line_error(run_cli("check", str(fast), "--budget", str(tmp_path / "none.toml"), env=cli_env), 3, "no such file")
    budgets.write_text("v2v = [")
    assert_one_line_error(run_cli("check", str(fast), "--budget", str(budgets), env=cli_env), 2, "not valid TOML")
    assert_one_line_error(run_cli("whatif", str(fast), "--stage", "nope", "--faster-ms", "1", env=cli_env), 2, "--stage")
    assert_one_line_error(run_cli("report", str(fast), "--model-shape", "1,2", env=cli_env), 2, "--model-shape")
    assert_one_line_error(run_cli("report", str(fast), "--gguf", str(fast), env=cli_env), 3, "not a GGUF")
    assert_one_line_error(run_cli("diff", str(fast), str(tmp_path / "x.jsonl"), env=cli_env), 3, "no such file")
