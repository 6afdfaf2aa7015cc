"""Pages in a real browser, for the tests: headless Chromium (Debian's package) opens a page and
reports what its charts drew, the errors it caught and the console's errors, and can keep a
screenshot (in `$DRFEMU_TEST_ARTIFACTS`, default `test-artifacts/`)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from html import unescape
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_browser = pytest.mark.skipif(CHROMIUM is None, reason="no headless Chromium here (Debian's chromium package; "
                                                            ".ci/run installs it)")
ARTIFACTS = Path(os.environ.get("DRFEMU_TEST_ARTIFACTS", ROOT / "test-artifacts"))


def browse(page: Path, screenshot: Path | None = None) -> dict[str, Any]:
    """Open `page` in headless Chromium: what its charts drew (`data-drawn`), the errors the page
    caught, the console's errors, and (optionally) a screenshot."""
    assert CHROMIUM is not None
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={page.parent / '.chromium'}", "--virtual-time-budget=10000"]
    done = subprocess.run([*flags, "--enable-logging=stderr", "--v=0", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=120, check=True)
    body = re.search(r"<body([^>]*)>", done.stdout)
    assert body is not None, done.stdout[:500]
    attributes = dict(re.findall(r'data-(\w+)="([^"]*)"', body.group(1)))
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    if screenshot is not None:
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([*flags, "--window-size=1000,2400", f"--screenshot={screenshot}", page.as_uri()],
                       capture_output=True, timeout=120, check=True)
    return {"drawn": json.loads(unescape(attributes.get("drawn", "null"))),
            "errors": json.loads(unescape(attributes.get("errors", "null"))), "console": console,
            "dom": done.stdout}


