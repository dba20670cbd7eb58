"""`voicetrace run`'s options: `--set KEY=VALUE` parsing, and every usage mistake refused (exit 2)
before a run folder, a file or a server exists."""

from __future__ import annotations

import pytest

from voicetrace.errors import EXIT_USAGE, UsageError
from voicetrace.run import RunOptions, run_call
from voicetrace.run.options import check_overrides, parse_settings

from tests.conftest import SAMPLES
from tests.unit.test_cli_errors import assert_one_line_error, run_cli

CALL = SAMPLES / "claim_status.wav"


@pytest.fixture(autouse=True)
def no_llama_server(monkeypatch, tmp_path):
    """Should a check be missing, the run stops at "llama-server is not installed" instead of replaying."""
    monkeypatch.setenv("VOICETRACE_LLAMA_SERVER", str(tmp_path / "no-llama-server"))


# --- --set KEY=VALUE --------------------------------------------------------------------------

def test_set_values_take_the_type_of_their_setting():
    parsed = parse_settings(["turn_stop_secs=1.5", "llm_threads=2", "warmup=FALSE", "tts_first_clause=true",
                             "asr_window_s=8", "asr_window_s=none", "vad_mode=3", "caller_phone=+15550199",
                             "tts_voice=en_US-amy-low"])
    assert parsed == {"turn_stop_secs": 1.5, "llm_threads": 2, "warmup": False, "tts_first_clause": True,
                      "asr_window_s": None, "vad_mode": 3, "caller_phone": "+15550199", "tts_voice": "en_US-amy-low"}
    assert type(parsed["llm_threads"]) is int and type(parse_settings(["asr_window_s=8"])["asr_window_s"]) is float
    assert parse_settings([]) == {}


@pytest.mark.parametrize("item, needle", [
    ("turn_stop_secs", "expected KEY=VALUE"),  # no '='
    ("no_such_setting=1", "expected KEY=VALUE with KEY one of"),
    ("extra=1", "expected KEY=VALUE with KEY one of"),  # the old side channel is gone
    ("warmup=yes", "expected true or false"),
    ("llm_threads=2.5", "expected a whole number"),
    ("turn_stop_secs=soon", "expected a number"),
    ("turn_stop_secs=none", "expected a number"),  # not optional
])
def test_bad_set_items_are_usage_errors(item, needle):
    with pytest.raises(UsageError) as err:
        parse_settings([item])
    assert err.value.exit_code == EXIT_USAGE and needle in err.value.message


def test_library_overrides_are_checked_like_set_items():
    check_overrides({"turn_stop_secs": 1, "asr_window_s": None, "warmup": False})
    for bad in ({"nope": 1}, {"warmup": "no"}, {"llm_threads": True}, {"turn_stop_secs": "1"}):
        with pytest.raises(UsageError):
            check_overrides(bad)


# --- usage mistakes: refused before anything is created ---------------------------------------

USAGE_MISTAKES = {
    "llm_url_without_model": (dict(llm_url="http://127.0.0.1:9"), "--llm-url needs --model"),
    "vad": (dict(vad="energy"), "--vad must be webrtc or silero, not 'energy'"),
    "asr": (dict(asr_mode="batch"), "--asr must be streaming or segmented"),
    "asr_model": (dict(asr_model="large"), "--asr-model must be tiny.en or base"),
    "tools": (dict(tools="all"), "--tools must be intent, function, both or off"),
    "tiny_en_not_english": (dict(asr_model="tiny.en", language="hi"), "tiny.en is English-only"),
    "set_vad": (dict(overrides={"vad": "energy"}), "--vad must be"),  # --set cannot sneak past the checks
    "set_key": (dict(overrides={"nope": 1}), "unknown pipeline setting 'nope'"),
    "timeout_zero": (dict(llm_stall_timeout_s=0), "--llm-timeout-s must be positive"),
    "timeout_negative": (dict(llm_stall_timeout_s=-1.5), "--llm-timeout-s must be positive, not -1.5"),
    "run_id_path": (dict(run_id="../elsewhere"), "expected a folder name"),
    "caller_channel": (dict(caller_channel=-1), "--caller-channel must be 0 or more"),
}


@pytest.mark.parametrize("name", sorted(USAGE_MISTAKES))
def test_run_call_refuses_usage_mistakes_before_creating_anything(tmp_path, name):
    kwargs, needle = USAGE_MISTAKES[name]
    out = tmp_path / "runs"
    with pytest.raises(UsageError) as err:
        run_call(RunOptions(call_path=CALL, out_dir=out, **{"run_id": "r", **kwargs}))
    assert needle in err.value.message and err.value.exit_code == EXIT_USAGE
    assert not out.exists()


def test_the_language_picks_the_multilingual_model_when_none_is_given():
    RunOptions(call_path=CALL, language="hi").validate()
    assert RunOptions(call_path=CALL, language="hi").asr_model_name == "base"
    assert RunOptions(call_path=CALL).asr_model_name == "tiny.en"


def test_an_existing_run_folder_is_a_usage_error(tmp_path):
    (tmp_path / "taken").mkdir()
    with pytest.raises(UsageError, match="run folder already exists"):
        RunOptions(call_path=CALL, out_dir=tmp_path, run_id="taken").validate()


@pytest.mark.parametrize("args, needle", [
    (["--llm-url", "http://127.0.0.1:9"], "--model"),
    (["--vad", "energy"], "--vad must be"),
    (["--tools", "all"], "--tools must be"),
    (["--asr-model", "tiny.en", "--language", "hi"], "English-only"),
    (["--set", "nope=1"], "--set 'nope=1'"),
    (["--set", "warmup=maybe"], "expected true or false"),
    (["--llm-timeout-s", "0"], "--llm-timeout-s must be positive"),
])
def test_cli_usage_mistakes_exit_2_with_one_line_and_no_run_folder(tmp_path, cli_env, args, needle):
    out = tmp_path / "runs"
    result = run_cli("run", str(CALL), "--out", str(out), *args,
                     env=dict(cli_env, VOICETRACE_LLAMA_SERVER=str(tmp_path / "no-llama-server")))
    assert_one_line_error(result, 2, needle)
    assert not out.exists()
