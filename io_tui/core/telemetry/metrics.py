"""The metrics io-tui exports: token usage and operation duration histograms as the GenAI
semantic conventions name them (``gen_ai.client.token.usage``, ``gen_ai.client.operation
.duration``), the approvals waiting for the operator (``io_tui.approvals.waiting``) and the
runs that ended, by status (``io_tui.runs``).

Why these: they are what a dashboard over many runs needs (spend, latency, who waits on whom,
how runs end), and the first two are what GenAI dashboards already chart. Imported only when
export is on.
"""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry.metrics import Meter

# the conventions' advice for each histogram's buckets
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304)
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48,
                    40.96, 81.92)  # fmt: skip


class Instruments:
    def __init__(self, meter: Meter) -> None:
        self.token_usage = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=list(TOKEN_BUCKETS),
        )
        self.operation_duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS),
        )
        self.approvals_waiting = meter.create_up_down_counter(
            "io_tui.approvals.waiting",
            unit="{approval}",
            description="Approvals waiting for the operator",
        )
        self.runs = meter.create_counter(
            "io_tui.runs", unit="{run}", description="Runs that ended, by status"
        )

    def tokens(self, provider: str, model: str, usage: Mapping[str, object]) -> None:
        base = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
        }
        for key, kind in (("gen_ai.usage.input_tokens", "input"),
                          ("gen_ai.usage.output_tokens", "output")):  # fmt: skip
            value = usage.get(key)
            if isinstance(value, int):
                self.token_usage.record(value, {**base, "gen_ai.token.type": kind})

    def duration(self, provider: str, model: str, seconds: float, error: str | None) -> None:
        labels = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
        }
        if error is not None:
            labels["error.type"] = error
        self.operation_duration.record(max(0.0, seconds), labels)
