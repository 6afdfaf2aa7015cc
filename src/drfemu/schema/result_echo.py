"""The fields of the result's echo, `schema.result.Echo`.

Do not edit: written by `python -m drfemu.workloads.derived` from the parameters' declarations."""

from __future__ import annotations

from typing import ClassVar

from drfemu.schema.result_blocks import Number, Section, echoes

__all__ = ["EchoFields"]


class EchoFields(Section):
    """Each built-in parameter that declares an echo key, under that key."""

    neighbors: int | None = echoes("neighbors")
    shuffles_per_tick: Number = echoes("shuffles_per_tick")
    gradient_variant: str | None = echoes("gradient")
    gradient_max_age_periods: int = echoes("max_age", required=True)
    placement_mode: str | None = echoes("placement")
    idle_cyclon_every: int | None = echoes("idle_cyclon_every")
    reconnect_every: int | None = echoes("reconnect_every")
    mark_saturated: bool | None = echoes("mark_saturated")
    saturation_retry_ticks: int = echoes("saturation_retry", required=True)
    idle_gradient_every: int | None = echoes("idle_gradient_every")
    devices: str | None = echoes("devices")
    sample_every_s: Number = echoes("sample_every")
    fault_scenario: str | None = echoes("faults")
    swm_every_s: Number = echoes("swm_every")
    allocations_per_tick: int | None = echoes("allocations_per_tick")
    head_of_line: bool | None = echoes("head_of_line")
    probe_d: int | None = echoes("probe_d")
    probe_load: str | None = echoes("probe_load")
    probe_retry_ticks: int | None = echoes("probe_retry")
    probe_band: Number = echoes("probe_band")
    probe_poll_every_ticks: int | None = echoes("probe_poll_every")
    freeze_after_ticks: int | None = echoes("freeze_after")
    warmup_cap_ticks: int | None = echoes("warmup_cap")
    centre_ties: str | None = echoes("centre_ties")
    band: Number = echoes("band")
    band_cap: Number = echoes("band_cap")
    band_cap_when: str | None = echoes("band_cap_when")
    notify: bool | None = echoes("notify")
    rumour_fanout: int | None = echoes("rumour_fanout")
    adrf_alpha: Number = echoes("adrf_alpha")
    adrf_beta: str | None = echoes("adrf_beta")
    wmmf_resource: int | None = echoes("wmmf_resource")
    wmmf_weighted: bool | None = echoes("wmmf_weighted")

    RESOLVED: ClassVar[tuple[str, ...]] = ('gradient_max_age_periods', 'saturation_retry_ticks')
    """Echoes whose value is the parameter as the run resolved it, not as given."""
