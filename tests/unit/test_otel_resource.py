"""The one resource builder (voicetrace.otel.resource): defaults < OTEL_* environment < explicit;
the pipeline configuration as attributes, personal settings only through the content policy."""

from __future__ import annotations

import pytest

from voicetrace import __version__
from voicetrace.otel.resource import PERSONAL_CONFIG_KEYS, build_resource, pipeline_config_attributes


@pytest.fixture(autouse=True)
def no_otel_environment(monkeypatch):
    for name in ("OTEL_RESOURCE_ATTRIBUTES", "OTEL_SERVICE_NAME", "OTEL_EXPERIMENTAL_RESOURCE_DETECTORS"):
        monkeypatch.delenv(name, raising=False)


def test_defaults():
    attrs = build_resource().attributes
    assert attrs["service.name"] == "voicetrace" and attrs["service.version"] == __version__
    assert attrs["deployment.environment"] == "local" and attrs["host.name"]


def test_standard_environment_beats_defaults_and_explicit_beats_both(monkeypatch):
    monkeypatch.setenv("OTEL_SERVICE_NAME", "agent-from-env")
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=staging,team=voice%20ops,host.name=h1")
    attrs = build_resource().attributes
    assert attrs["service.name"] == "agent-from-env" and attrs["deployment.environment"] == "staging"
    assert attrs["team"] == "voice ops" and attrs["host.name"] == "h1"
    attrs = build_resource(service_name="explicit", environment="prod", attributes={"team": "mine"}).attributes
    assert (attrs["service.name"], attrs["deployment.environment"], attrs["team"]) == ("explicit", "prod", "mine")


def test_service_name_from_resource_attributes_and_new_environment_spelling(monkeypatch):
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "service.name=svc,deployment.environment.name=qa")
    attrs = build_resource().attributes
    assert attrs["service.name"] == "svc" and attrs["deployment.environment"] == "qa"


def test_none_values_are_left_out():
    assert "conversation.id" not in build_resource(attributes={"conversation.id": None}).attributes


def test_pipeline_config_scalars_flattened_without_prompt_or_empties():
    attrs = pipeline_config_attributes(
        {"vad_stop_secs": 0.2, "llm_model": "m", "system_prompt": "long", "extra": {"llm_server": "x"},
         "none": None, "empty": "", "warmup": False, "name": "n" * 300})
    assert attrs == {
        "voice.pipeline.config.vad_stop_secs": 0.2, "voice.pipeline.config.llm_model": "m",
        "voice.pipeline.config.extra.llm_server": "x", "voice.pipeline.config.warmup": False,
        "voice.pipeline.config.name": "n" * 256,
    }


def test_personal_settings_only_through_the_content_policy():
    config = {"caller_phone": "+15550100", "vad": "webrtc", "extra": {"caller_email": "a@b.example"}}
    assert PERSONAL_CONFIG_KEYS >= {"caller_phone", "caller_email"}
    dropped = pipeline_config_attributes(config)
    assert dropped == {"voice.pipeline.config.vad": "webrtc"}
    masked = pipeline_config_attributes(config, personal=lambda v: v.upper())
    assert masked["voice.pipeline.config.caller_phone"] == "+15550100"
    assert masked["voice.pipeline.config.extra.caller_email"] == "A@B.EXAMPLE"
