"""The keywords of `drfemu.run` and `drfemu.configure`.

Do not edit: written by `python -m drfemu.workloads.derived` from the parameters' declarations."""

from __future__ import annotations

from typing import TypedDict

__all__ = ["RunKeywords"]


class RunKeywords(TypedDict, total=False):
    """Every built-in run parameter by name (`drfemu params`); None or absent: its default."""

    machines: int | None
    users: int | None
    case_seed: int | None
    gpu_users: float | None
    whole: float | None
    openb_trace: str | None
    seed: int | None
    tick: str | float | None
    latency: str | None
    neighbors: int | None
    shuffles_per_tick: float | None
    cyclon_view: int | None
    shuffle_length: int | None
    gradient: str | None
    softmax_temperature: float | None
    gradient_shuffle: int | None
    max_age: int | None
    placement: str | None
    fragmentation_mix: str | None
    stall_ticks: int | None
    max_time: str | float | None
    walk_ttl: int | None
    idle_cyclon_every: int | None
    reconnect_every: int | None
    mark_saturated: bool | None
    saturation_retry: int | None
    idle_gradient_every: int | None
    devices: str | None
    fit_candidates: int | None
    sample_every: str | float | None
    reference: str | None
    faults: str | None
    swm_every: str | float | None
    allocations_per_tick: int | None
    head_of_line: bool | None
    probe_d: int | None
    probe_load: str | None
    probe_retry: int | None
    probe_band: float | None
    probe_poll_every: int | None
    freeze_after: int | None
    warmup_cap: int | None
    centre_ties: str | None
    band: float | None
    band_cap: float | None
    band_cap_when: str | None
    notify: bool | None
    rumour_fanout: int | None
    adrf_alpha: float | None
    adrf_beta: str | None
    wmmf_resource: int | None
    wmmf_weighted: bool | None
