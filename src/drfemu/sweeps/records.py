"""Run records of a sweep directory: `DIR/runs/<run id>.json`, written atomically."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from drfemu.kernel.errors import InputError
from drfemu.kernel.files import read_json

__all__ = ["Record", "load_records", "read_manifest", "write_atomic", "write_record"]

Record = dict[str, Any]


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temporary file and a rename, so readers never see half a file."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a full disk leaves the earlier file whole, and no stray temporary
        raise


def write_record(out: Path, record: Record) -> None:
    write_atomic(out / "runs" / f"{record['id']}.json", json.dumps(record, indent=1, allow_nan=False) + "\n")


def _is_result(result: Any) -> bool:
    """Whether `result` is a run's result document (`drfemu run --json`), as far as its
    versioned schema's first key says."""
    return isinstance(result, dict) and isinstance(result.get("schema_version"), str)


def load_records(out: Path) -> dict[str, Record]:
    """Every run record in `out/runs`, by id."""
    records = {}
    for path in sorted((out / "runs").glob("*.json")):
        record = read_json(path, "a run record (delete it to re-run that point)")
        if not (isinstance(record, dict) and isinstance(record.get("id"), str) and record.get("status") in ("ok", "failed")
                and isinstance(record.get("params"), dict)
                and (record["status"] != "ok" or _is_result(record.get("result")))):
            raise InputError(f"{path}: not a run record (it needs id, params, status and, when ok, a result document "
                             "with its schema_version); delete it to re-run that point")
        records[record["id"]] = record
    return records


def read_manifest(path: Path) -> list[dict[str, Any]]:
    """The experiments of a `sweep.json`; `InputError` if it is not one (a corrupt file is the
    user's to move away: it is never overwritten)."""
    advice = "move it away to start a new sweep there, or restore it to resume"
    try:
        document = read_json(path, "a sweep manifest")
    except InputError as error:
        raise InputError(f"{error}: {advice}") from None
    experiments = document.get("experiments") if isinstance(document, dict) else None
    if not (isinstance(experiments, list)
            and all(isinstance(e, dict) and isinstance(e.get("name"), str) for e in experiments)):
        raise InputError(f"{path} is not a sweep manifest (corrupt?): {advice}")
    return list(experiments)
