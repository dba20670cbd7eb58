"""The one OpenTelemetry resource of a trace, and the pipeline configuration as resource attributes.

Precedence, lowest first: voicetrace's defaults (``service.name`` voicetrace, ``deployment.environment``
local, version, host, runtime) < the standard ``OTEL_RESOURCE_ATTRIBUTES`` / ``OTEL_SERVICE_NAME``
(merged by ``Resource.create`` itself) < what the caller passes explicitly.
"""

from __future__ import annotations

import platform
from typing import Any, Callable, Mapping

from opentelemetry.sdk.resources import SERVICE_NAME, Resource

from voicetrace import __version__
from voicetrace import semconv as sc

DEFAULT_SERVICE_NAME = "voicetrace"
DEFAULT_ENVIRONMENT = "local"
ENVIRONMENT_NAME = "deployment.environment.name"
"""The current semconv spelling of deployment.environment; accepted from OTEL_RESOURCE_ATTRIBUTES."""

PERSONAL_CONFIG_KEYS = frozenset({"caller_phone", "caller_email", "caller_name"})
"""Pipeline settings that hold personal data: on the resource only under content capture."""
SKIPPED_CONFIG_KEYS = frozenset({"system_prompt"})
"""Too long for a resource attribute; run.json has it."""
MAX_CONFIG_VALUE_CHARS = 256


def build_resource(
    *,
    service_name: str | None = None,
    environment: str | None = None,
    attributes: Mapping[str, Any] | None = None,
) -> Resource:
    """The resource every span of one trace carries. ``None`` values are left out."""
    explicit = {k: v for k, v in (attributes or {}).items() if v is not None}
    if service_name:
        explicit[SERVICE_NAME] = service_name
    if environment:
        explicit[sc.RES_DEPLOYMENT_ENVIRONMENT] = environment
    created = Resource.create(explicit)
    merged = dict(created.attributes)
    # Resource.create names a nameless service "unknown_service:<exe>"; ours is "voicetrace".
    if SERVICE_NAME not in explicit and str(merged.get(SERVICE_NAME, "")).startswith("unknown_service"):
        del merged[SERVICE_NAME]
    defaults = {
        SERVICE_NAME: DEFAULT_SERVICE_NAME,
        "service.version": __version__,
        sc.RES_DEPLOYMENT_ENVIRONMENT: merged.get(ENVIRONMENT_NAME) or DEFAULT_ENVIRONMENT,
        "host.name": platform.node(),
        "host.arch": platform.machine(),
        "process.runtime.name": platform.python_implementation(),
        "process.runtime.version": platform.python_version(),
    }
    return Resource(defaults).merge(Resource(merged, created.schema_url))


def _drop_personal(value: str) -> str | None:
    return None


def pipeline_config_attributes(
    config: Mapping[str, Any], personal: Callable[[str], str | None] = _drop_personal
) -> dict[str, Any]:
    """``voice.pipeline.config.*``: the configuration's scalars, one level of nesting flattened.

    A key in PERSONAL_CONFIG_KEYS (at any level) goes through ``personal`` (content policy: None
    drops it, else the text to record, e.g. redacted); by default it is dropped.
    """
    attrs: dict[str, Any] = {}

    def put(key: str, name: str, value: Any) -> None:
        if name in PERSONAL_CONFIG_KEYS:
            value = personal(str(value)) if value not in (None, "") else None
        if isinstance(value, (bool, int, float)):
            attrs[key] = value
        elif isinstance(value, str) and value:
            attrs[key] = value[:MAX_CONFIG_VALUE_CHARS]

    for key, value in config.items():
        if key in SKIPPED_CONFIG_KEYS:
            continue
        if isinstance(value, Mapping):
            for sub, inner in value.items():
                put(f"{sc.RES_PIPELINE_CONFIG_PREFIX}{key}.{sub}", str(sub), inner)
        else:
            put(f"{sc.RES_PIPELINE_CONFIG_PREFIX}{key}", str(key), value)
    return attrs
