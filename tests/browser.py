"""Headless chromium for the HTML report's tests: find it, load a page, read back what a probe
script appended to the laid-out page.

Debian's ``chromium`` (``apt-get install -y chromium``); where none is on PATH the tests that
need it skip and say so. Every network request goes to a dead proxy: a report fetches nothing.
"""

import html
import json
import re
import shutil
import subprocess

import pytest


def chromium_or_skip() -> str:
    """Debian's chromium on PATH, or a skip that says how to get it."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no chromium on PATH (install it: apt-get update && apt-get install -y chromium)")


def browse(chromium: str, url: str, tmp_path, width: int, *extra: str) -> str:
    """The DOM after load, in headless chromium with every network request sent to a dead proxy."""
    done = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--proxy-server=127.0.0.1:9",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            f"--user-data-dir={tmp_path / 'chromium-profile'}",
            f"--window-size={width},900",
            "--virtual-time-budget=3000",
            "--dump-dom",
            *extra,
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def probed(dom: str, element_id: str) -> object:
    """The JSON a probe script wrote into ``<pre id=element_id>`` of the dumped DOM."""
    (found,) = re.findall(rf'<pre id="{element_id}">(.*?)</pre>', dom, re.S)
    return json.loads(html.unescape(found))
