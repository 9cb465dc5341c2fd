"""Whether OpenTelemetry export is on, and where it goes: the standard ``OTEL_*`` variables,
with the config file's ``[otel]`` table as their defaults.

Why from the environment: every process that drives runs (``io-tui run``, the TUI's harness
worker, ``io-tui worker``, ``io-tui acp``) inherits it, and the OTLP exporters read the same
variables for what io-tui does not name (timeouts, certificates, compression). The ``[otel]``
table is written into the environment of the process that loads the config (each variable only
where it is not set: the environment wins), so the processes it starts inherit it too.
Nothing here imports OpenTelemetry.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
Protocol = Literal["http/protobuf", "grpc"]
_TRUE = frozenset({"1", "true", "yes", "on"})


class OtelSettings(BaseModel):
    """``[otel]`` in the config file: OpenTelemetry export, off unless an endpoint is set."""

    model_config = ConfigDict(extra="forbid")
    endpoint: str | None = Field(
        default=None, description="OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT); set: export on"
    )
    protocol: Protocol | None = Field(
        default=None, description="http/protobuf (default) or grpc (OTEL_EXPORTER_OTLP_PROTOCOL)"
    )
    headers: dict[str, str] = Field(
        default_factory=dict, description="sent with every export (OTEL_EXPORTER_OTLP_HEADERS)"
    )
    service_name: str | None = Field(default=None, description="OTEL_SERVICE_NAME (io-tui)")
    capture_content: bool | None = Field(
        default=None,
        description="export message contents, redacted (" + CAPTURE_CONTENT_ENV + ")",
    )
    metrics: bool = Field(default=True, description="export metrics as well as traces")

    def as_env(self) -> dict[str, str]:
        """The standard variables this table stands for."""
        env: dict[str, str] = {}
        if self.endpoint:
            env["OTEL_EXPORTER_OTLP_ENDPOINT"] = self.endpoint
        if self.protocol:
            env["OTEL_EXPORTER_OTLP_PROTOCOL"] = self.protocol
        if self.headers:
            env["OTEL_EXPORTER_OTLP_HEADERS"] = ",".join(
                f"{k}={v}" for k, v in self.headers.items()
            )
        if self.service_name:
            env["OTEL_SERVICE_NAME"] = self.service_name
        if self.capture_content is not None:
            env[CAPTURE_CONTENT_ENV] = "true" if self.capture_content else "false"
        if not self.metrics:
            env["OTEL_METRICS_EXPORTER"] = "none"
        return env

    def export_to(self, environ: MutableMapping[str, str] | None = None) -> None:
        """Each variable of ``as_env`` set in ``environ`` (default ``os.environ``) where unset."""
        target = os.environ if environ is None else environ
        for name, value in self.as_env().items():
            target.setdefault(name, value)


@dataclass(frozen=True, slots=True)
class OtelConfig:
    """Export as the environment says: on when an OTLP endpoint is set for traces (or
    ``OTEL_TRACES_EXPORTER=otlp``) and the SDK is not disabled."""

    traces: bool
    metrics: bool
    protocol: Protocol
    service_name: str
    capture_content: bool

    @property
    def enabled(self) -> bool:
        return self.traces or self.metrics

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> OtelConfig:
        env = os.environ if env is None else env
        disabled = env.get("OTEL_SDK_DISABLED", "").strip().lower() in _TRUE
        endpoint = bool(env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip())
        traces_exporter = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
        metrics_exporter = env.get("OTEL_METRICS_EXPORTER", "").strip().lower()
        traces = (
            not disabled
            and traces_exporter != "none"
            and (
                endpoint
                or bool(env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip())
                or traces_exporter == "otlp"
            )
        )
        metrics = (
            not disabled
            and metrics_exporter != "none"
            and (
                endpoint
                or bool(env.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "").strip())
                or metrics_exporter == "otlp"
            )
        )
        protocol = env.get("OTEL_EXPORTER_OTLP_PROTOCOL", "").strip().lower()
        return cls(
            traces=traces,
            metrics=metrics,
            protocol="grpc" if protocol == "grpc" else "http/protobuf",
            service_name=env.get("OTEL_SERVICE_NAME", "").strip() or "io-tui",
            capture_content=env.get(CAPTURE_CONTENT_ENV, "").strip().lower() in _TRUE,
        )
