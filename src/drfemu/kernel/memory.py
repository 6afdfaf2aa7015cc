"""How much memory this process may still take: the least of what the machine has free, what
its control group allows and what its resource limits allow.

A size check (`drfemu overlay --nodes`, …) compares its estimate with this, so a run that could
not finish is refused in one line before it starts — under `ulimit -v`, in a container whose
cgroup is smaller than the machine, or on a machine short of free memory alike.

Decisions: the machine's share is Linux's `MemAvailable` (else its physical memory); a cgroup's is
its limit less its usage (v2 `memory.max`/`memory.current`, v1 `memory.limit_in_bytes`/
`memory.usage_in_bytes`, at the process's own cgroup path, else at the mount's root); the
resource limits' are `RLIMIT_AS` and `RLIMIT_DATA` less the address space the process already
maps (they limit the address space, which a run's arrays grow one for one). What cannot be read
does not count; None when nothing can be.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["available_memory", "cgroup_memory", "machine_memory", "rlimit_memory"]

CGROUP_ROOT = Path("/sys/fs/cgroup")
UNLIMITED = 1 << 60  # a cgroup v1 limit at or above this means none


def machine_memory() -> int | None:
    """Bytes the machine can give a new process now (Linux `MemAvailable`), else its physical memory."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None  # "max" (v2: no limit) and anything odd: none


def _cgroup_paths() -> dict[str, str]:
    """The process's cgroup path per hierarchy: "" for v2, the controller names for v1."""
    paths: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return paths
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) == 3:
            for controller in parts[1].split(",") if parts[1] else [""]:
                paths[controller] = parts[2].lstrip("/")
    return paths


def cgroup_memory(root: Path = CGROUP_ROOT) -> int | None:
    """Bytes the process's memory cgroup still allows (its limit less its usage), or None when it
    has no limit or none can be read."""
    paths = _cgroup_paths()
    candidates = []
    for base, own, limit_file, usage_file in ((root, paths.get(""), "memory.max", "memory.current"),
                                              (root / "memory", paths.get("memory"), "memory.limit_in_bytes",
                                               "memory.usage_in_bytes")):
        for folder in ([base / own] if own else []) + [base]:  # a namespaced cgroup shows as the root
            limit, usage = _read_int(folder / limit_file), _read_int(folder / usage_file)
            if limit is not None:
                if limit < UNLIMITED:
                    candidates.append(max(0, limit - (usage or 0)))
                break
    return min(candidates) if candidates else None


def rlimit_memory() -> int | None:
    """Bytes of address space the resource limits (`RLIMIT_AS`, `RLIMIT_DATA`) still allow, or None."""
    try:
        import resource
    except ImportError:  # not a POSIX system
        return None
    limits = [soft for soft in (resource.getrlimit(resource.RLIMIT_AS)[0], resource.getrlimit(resource.RLIMIT_DATA)[0])
              if soft != resource.RLIM_INFINITY]
    if not limits:
        return None
    try:
        mapped = int(Path("/proc/self/statm").read_text(encoding="ascii").split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        mapped = 0
    return max(0, min(limits) - mapped)


def available_memory() -> int | None:
    """The least of `machine_memory`, `cgroup_memory` and `rlimit_memory` (None if none is known)."""
    known = [m for m in (machine_memory(), cgroup_memory(), rlimit_memory()) if m is not None]
    return min(known) if known else None
