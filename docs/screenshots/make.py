"""Regenerate the HTML report screenshots: ``python docs/screenshots/make.py`` (needs chromium).

Profiles the renderer tests' kernels (a caller and a callee with a long source
line), writes the report, and has headless chromium photograph it at a narrow
(700 px) and a wide (1600 px) window.
"""

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from numba_lprun.renderers import profile_html  # noqa: E402
from tests.render_kernels import long_line_profile  # noqa: E402


def main() -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.exit("no chromium on PATH (apt-get install -y chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.html"
        report.write_text(profile_html(long_line_profile(), page=True), encoding="utf-8")
        for width, height in ((700, 1500), (1600, 1100)):
            shot = HERE / f"report-{width}px.png"
            subprocess.run(
                [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                 f"--user-data-dir={tmp}/profile", f"--window-size={width},{height}",
                 f"--screenshot={shot}", report.as_uri()],
                check=True, capture_output=True, timeout=120,
            )  # fmt: skip
            print(shot)


if __name__ == "__main__":
    main()
