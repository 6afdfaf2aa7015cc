"""A user's script, type-checked by `.ci/typecheck-client` with `mypy --strict` against the
installed package: each `reveal_type` must show the type the docs promise (`docs/api.md`), and
each line marked `expect-error` must be the one error mypy reports there."""

import asyncio
from typing import Any, reveal_type

import drfemu

result = drfemu.run(protocol="drf", machines=20, users=4)
reveal_type(result.allocations)  # expect: int
reveal_type(result.min_dominant_share)  # expect: float | None
reveal_type(result.utilization)  # expect: dict[str, float | None]
reveal_type(result.ledger)  # expect: dict[str, int]
reveal_type(result.neighbors)  # expect: int | None
reveal_type(result.tick_s)  # expect: float | None
reveal_type(result.probe_d)  # expect: int | None
reveal_type(result.saturation_retry_ticks)  # expect: int
reveal_type(result.to_dict())  # expect: dict[str, Any]
reveal_type(result.placement)  # expect: dict[str, int] | None
reveal_type(result.first_blocked)  # expect: drfemu.schema.result_blocks.FirstBlocked | None
reveal_type(result.fault_windows[0].time_to_recover_s)  # expect: float | None

config = drfemu.configure(protocol="pdgdrf", machines=20, users=4, neighbors=2)
reveal_type(config.params.neighbors)  # expect: int
reveal_type(config.params.tick)  # expect: float
reveal_type(config.workload.servers)  # expect: tuple[drfemu.schema.workload.Server, ...]
reveal_type(drfemu.run_config(config).gini)  # expect: float | None
reveal_type(asyncio.run(drfemu.run_config_async(config)).gini)  # expect: float | None
reveal_type(drfemu.SCHEMA_VERSION)  # expect: str
reveal_type(drfemu.params())  # expect: tuple[drfemu.kernel.params.Param, ...]
reveal_type(drfemu.google_case(10, 3, seed=1))  # expect: drfemu.schema.workload.Workload

drfemu.run(protocol="drf", neighbours=3)  # expect-error: Unexpected keyword argument "neighbours" for "run"
drfemu.configure(protocol="pdgdrf", neighbors="3")  # expect-error: Argument "neighbors" to "configure" has incompatible type "str"
drfemu.run(protocol="drf", tick="100ms", max_time=50.0, placement="best-fit")  # durations: text or seconds
plugin_params: dict[str, Any] = {"demo_every": 3}  # a plug-in's own parameter: through a mapping
drfemu.configure(protocol="drf", machines=10, users=3, **plugin_params)
