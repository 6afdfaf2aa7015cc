"""Reading the files a user gives: one path, one kind of error.

Every file drfemu reads from a user — trace CSVs, workload JSON, sweep and fault TOML, sweep
records, run logs, result documents — is read here, so that whatever is wrong with it (missing,
a directory, unreadable, compressed, binary, not UTF-8, not parseable, a field out of range) is
one `InputError` line naming the file, and the line and field where the reader knows them:
`FILE: line N, FIELD: problem`. The caller passes its own `InputError` subclass (`error`) so
its commands keep their messages' kind.

Decisions: a file is read whole (the largest a user gives, the openb pod list, is 1 MB); a
UTF-8 byte-order mark is accepted; `NaN`, `Infinity` and numbers that overflow a double are
refused in JSON and TOML (no result, config or workload holds one: they cannot be written
back as JSON); CSV fields are limited to one line of text (a stray quote that would run a field
on to the end of the file is reported at the line where it opens).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import tomllib
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from drfemu.kernel.errors import InputError

__all__ = ["csv_records", "csv_rows", "decode", "read_bytes", "read_json", "read_text", "read_toml", "text_lines"]

GZIP_MAGIC = b"\x1f\x8b"


def _regular_or_absent(p: Path, what: str, error: type[InputError]) -> None:
    """Refuse a device or FIFO (`/dev/zero` would be read for ever); a missing file or a directory
    is left to the read, which names it."""
    if p.exists() and not p.is_file() and not p.is_dir():
        raise error(f"{p}: not a regular file (expected {what})")


def read_bytes(path: Path | str, what: str, error: type[InputError] = InputError) -> bytes:
    """The bytes of `path`, or one line: no such file, a directory, or why it cannot be read."""
    p = Path(path)
    _regular_or_absent(p, what, error)
    try:
        return p.read_bytes()
    except FileNotFoundError:
        raise error(f"{p}: no such file (expected {what})") from None
    except IsADirectoryError:
        raise error(f"{p}: a directory, not {what}") from None
    except OSError as failure:
        raise error(f"cannot read {what} {p}: {failure.strerror or failure}") from None


def decode(data: bytes, path: Path | str, what: str, error: type[InputError] = InputError) -> str:
    """`data` as UTF-8 text (a byte-order mark dropped), or one line naming the file and the line
    of the first byte that is not text (a compressed file is named as such)."""
    if data.startswith(GZIP_MAGIC):
        raise error(f"{path}: gzip-compressed, not {what} (decompress it first)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as failure:
        line = data.count(b"\n", 0, failure.start) + 1
        raise error(f"{path}: line {line}: not UTF-8 text (byte 0x{data[failure.start]:02x}); not {what}") from None
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise error(f"{path}: line {line}: a NUL character (a binary file?); not {what}")
    return text


def read_text(path: Path | str, what: str, error: type[InputError] = InputError) -> str:
    """The UTF-8 text of `path` (`read_bytes`, then `decode`)."""
    return decode(read_bytes(path, what, error), path, what, error)


def _finite(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise _NotFinite(token)
    return value


class _NotFinite(ValueError):
    def __init__(self, token: str) -> None:
        super().__init__(token)
        self.token = token


def _refuse_constant(token: str) -> float:
    raise _NotFinite(token)


def read_json(path: Path | str, what: str, error: type[InputError] = InputError) -> Any:
    """The JSON document of `path`, or one line naming the file and the line of the problem."""
    return _parsed(path, what, error, lambda text: json.loads(text, parse_float=_finite, parse_constant=_refuse_constant),
                   json.JSONDecodeError, lambda failure: f"line {failure.lineno}: not JSON ({failure.msg})")


def read_toml(path: Path | str, what: str, error: type[InputError] = InputError) -> dict[str, Any]:
    """The TOML document of `path`, or one line naming the file and the line of the problem."""
    document: dict[str, Any] = _parsed(path, what, error, lambda text: tomllib.loads(text, parse_float=_finite),
                                       tomllib.TOMLDecodeError, lambda failure: f"not valid TOML ({failure})")
    return document


def _parsed(path: Path | str, what: str, error: type[InputError], parse: Callable[[str], Any],
            syntax: type[ValueError], describe: Callable[[Any], str]) -> Any:
    """`parse` of the text of `path`; its `syntax` errors (`describe`d), a number that is not
    finite, nesting too deep for Python and an integer too long to convert are one line each."""
    text = read_text(path, what, error)
    try:
        return parse(text)
    except syntax as failure:
        raise error(f"{path}: {describe(failure)}; not {what}") from None
    except _NotFinite as failure:
        raise error(f"{path}: {_short(failure.token)} is not a finite number (in {what})") from None
    except RecursionError:
        raise error(f"{path}: nested too deeply to be {what}") from None
    except ValueError as failure:  # an integer of more digits than Python converts
        raise error(f"{path}: {failure} (in {what})") from None


def _short(token: str) -> str:
    return repr(token) if len(token) <= 40 else repr(token[:20]) + f"… ({len(token)} characters)"


def csv_rows(path: Path | str, columns: Sequence[str], what: str,
             error: type[InputError] = InputError) -> Iterator[tuple[int, dict[str, str]]]:
    """The rows of the CSV file `path` as (line, {column: text}), every one of `columns` present
    in the header and in each row, or one line naming the file, the line and the column."""
    yield from _rows(read_text(path, what, error), path, columns, what, error)


def text_lines(path: Path | str, what: str, compressed: bool,
               error: type[InputError] = InputError) -> Iterator[str]:
    """The lines of `path`, streamed (for files too large to read whole, such as the Google trace's
    gzip parts), decoded as UTF-8; a read, decompression or decoding failure is one line."""
    p = Path(path)
    number = 0
    _regular_or_absent(p, what, error)
    try:
        with gzip.open(p, "rb") if compressed else p.open("rb") as raw:
            for number, line in enumerate(raw, start=1):
                if b"\x00" in line:
                    raise error(f"{p}: line {number}: a NUL character (a binary file?); not {what}")
                try:
                    yield line.decode("utf-8")
                except UnicodeDecodeError:
                    raise error(f"{p}: line {number}: not UTF-8 text; not {what}") from None
    except FileNotFoundError:
        raise error(f"{p}: no such file (expected {what})") from None
    except IsADirectoryError:
        raise error(f"{p}: a directory, not {what}") from None
    except (OSError, EOFError, zlib.error) as failure:
        raise error(f"{p}: line {number + 1}: cannot be read as {what} ({failure})") from None


def csv_records(lines: Iterator[str], path: Path | str, what: str,
                error: type[InputError] = InputError) -> Iterator[tuple[int, list[str]]]:
    """`csv.reader` over `lines` as (line, fields); a malformed line, or a quoted field that runs
    past its line (no trace has one: it is a stray quote), is one `error` line."""
    reader = csv.reader(lines)
    while True:
        start = reader.line_num + 1
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as failure:
            problem = str(failure)
            if "field larger" in problem or reader.line_num > start:
                problem = "a quoted field runs past its line (a stray quote?)"
            raise error(f"{path}: line {start}: {problem}; not {what}") from None
        if reader.line_num > start:
            raise error(f"{path}: line {start}: a quoted field runs past its line (a stray quote?); not {what}")
        yield start, fields


def _rows(text: str, path: Path | str, columns: Sequence[str], what: str,
          error: type[InputError]) -> Iterator[tuple[int, dict[str, str]]]:
    records = csv_records(iter(io.StringIO(text, newline="")), path, what, error)
    header: list[str] | None = None
    for line, fields in records:
        if header is None:
            header = fields
            missing = [c for c in columns if c not in header]
            if missing:
                raise error(f"{path}: line {line}: no column {', '.join(missing)} in the header; not {what}")
            continue
        if not fields:
            continue
        if len(fields) < len(header):
            raise error(f"{path}: line {line}, {header[len(fields)]}: missing (the line has {len(fields)} of "
                        f"{len(header)} fields)")
        if len(fields) > len(header):
            raise error(f"{path}: line {line}: {len(fields)} fields, the header names {len(header)}")
        yield line, dict(zip(header, fields, strict=True))
    if header is None:
        raise error(f"{path}: empty; not {what}")
