"""The HTML report in live notebook hosts: a real Jupyter server, JupyterLab 4 and Notebook 7
in headless chromium, trusted and untrusted, in the light and the dark theme.

``tests/test_html_untrusted.py`` lays the report out in nbconvert's exports with the hosts' CSS
and through a sanitizer of our own; what it cannot show is the host itself: its own sanitizer
deciding what an untrusted output keeps, its theme's stylesheets and variables, its panels and
scrollers around the output (JupyterLab's file browser takes 250 px of a 1280 px window). Here
the report of a real profile (the fixture profile with its 79-character source line, shown by
``%nlprun --load`` in a kernel: the magic's own text/html and text/plain) is saved in two
notebooks, one signed with the server's notary (trusted) and one not, and each is opened in
JupyterLab (``/lab/workspaces/<name>/tree``, the file browser open) and in Notebook 7
(``/notebooks``) in a 1280 px window, first in JupyterLab Light (the theme setting written
before the server starts), then in JupyterLab Dark (switched by the front end's own theme
command, which saves the setting as the Settings menu does). The checks of
``test_html_untrusted`` then read each view's DOM: code left-aligned with its indentation and
wholly visible in a column wide enough to read, numbers right-aligned, no run-on chart text
and no false notice, text at 4.5:1 or more, hits equal to text/plain.

One server for the module, its every directory (config, data, runtime, settings, workspaces,
home) in a temporary folder, so nothing of the user's Jupyter set-up is read or written; the
notebooks start no kernel (``notebook_starts_kernel``: the host renders saved outputs without
one, and two cores have no time to spare for it). One chromium, driven over the DevTools
protocol (``tests/browser.py``: JupyterLab builds its page long after load, so the test waits
for the rendered output itself), loads the four pages at once, each in a window of its own.
25 to 37 s on two cores beside another test run (the four pages' start-up is most of it).
``NUMBA_LPRUN_SCREENSHOTS=<folder>`` saves what the four JupyterLab views show. Skips where
chromium, JupyterLab or Notebook 7 is missing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from importlib.util import find_spec
from pathlib import Path

import nbformat
import pytest
from jupyter_client import KernelManager
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient
from nbformat.sign import NotebookNotary

from numba_lprun.stats import ProfileStats
from tests.browser import DevTools, chromium_or_skip
from tests.test_html_untrusted import (
    LINE_79,
    PROBE_FUNCTION,
    backdrop,
    chart_texts,
    check_chart_and_notices,
    check_code,
    check_contrast,
    check_inline_bars,
    check_numbers,
    line_79_profile_json,
    luminance,
    source_lines,
)

# looked up, not imported: the server imports them, in its own process
_NEEDED = {"jupyterlab": "JupyterLab", "notebook": "Notebook 7", "jupyter_server": "Jupyter Server"}
for _package, _name in _NEEDED.items():
    if find_spec(_package) is None:
        pytest.skip(f"{_name} is not installed (pip install jupyterlab notebook)", allow_module_level=True)

WIDTH, HEIGHT = 1280, 1000
THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}
#: each host's page for a notebook (``{}``: trusted or untrusted). Each JupyterLab window has a
#: workspace of its own: a second window on a workspace in use is sent to a new one (a navigation
#: that would cut a command to the page short)
HOSTS = {"lab": "/lab/workspaces/{0}/tree/{0}.ipynb", "notebook": "/notebooks/{0}.ipynb"}
TRUST = ("trusted", "untrusted")
VIEWS = [f"{host} {theme} {trust}" for host in HOSTS for theme in THEMES for trust in TRUST]

#: what the server is told: no network (no news, no update check, no extension catalogue), the
#: front end's app object on ``window`` (to run its theme command), no kernel for a notebook
#: opened, no language-server or terminal extension (nothing here uses them), and Jupyter
#: Server's synchronous contents manager: its asynchronous default reads files in anyio's worker
#: threads, and one left idle at shutdown kept the stopped server's process alive 10 s more
SERVER_CONFIG = {
    "ServerApp": {
        "jpserver_extensions": {"jupyter_lsp": False, "jupyter_server_terminals": False},
        "contents_manager_class": "jupyter_server.services.contents.largefilemanager.LargeFileManager",
        "open_browser": False,
        "allow_root": True,  # containers and CI run as root; the server refuses root otherwise
    },
    "LabServerApp": {"notebook_starts_kernel": False},
    "LabApp": {
        "news_url": None,
        "check_for_updates_class": "jupyterlab.handlers.announcements.NeverCheckForUpdate",
        "extension_manager": "readonly",
        "expose_app_in_browser": True,
    },
    "JupyterNotebookApp": {"expose_app_in_browser": True},
}

#: the user settings both front ends start with: the light theme, and no news toast over the page
SETTINGS = {
    "@jupyterlab/apputils-extension/themes.jupyterlab-settings": {"theme": THEMES["light"]},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}

TOKEN = "numba-lprun-live-test"


class JupyterServer:
    """``jupyter server`` (with JupyterLab's and Notebook 7's extensions) on a free port of
    127.0.0.1, every Jupyter directory under ``tmp``; ``url`` waits until it serves."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        dirs = {
            name: tmp / name.lower()
            for name in (
                "JUPYTER_CONFIG_DIR",
                "JUPYTER_DATA_DIR",
                "JUPYTER_RUNTIME_DIR",
                "JUPYTERLAB_SETTINGS_DIR",
                "JUPYTERLAB_WORKSPACES_DIR",
                "IPYTHONDIR",
                "HOME",
            )
        }
        for path in dirs.values():
            path.mkdir()
        self.data_dir, self.runtime_dir = dirs["JUPYTER_DATA_DIR"], dirs["JUPYTER_RUNTIME_DIR"]
        # no JUPYTER_PATH and the like from the user's environment: only the dirs above
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "IPYTHON"))}
        self.env.update({name: str(path) for name, path in dirs.items()})
        (dirs["JUPYTER_CONFIG_DIR"] / "jupyter_server_config.json").write_text(json.dumps(SERVER_CONFIG))
        for name, values in SETTINGS.items():
            path = dirs["JUPYTERLAB_SETTINGS_DIR"] / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
        self.root = tmp / "notebooks"
        self.root.mkdir()
        self.notary = NotebookNotary(data_dir=str(self.data_dir))
        # the secret the server's notary will read, made before it starts (it would make its own)
        assert self.notary.secret
        self.log = tmp / "server.log"
        with open(self.log, "w", encoding="utf-8") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "jupyter_server", "--ServerApp.ip=127.0.0.1", "--ServerApp.port=0"]
                + [f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={self.root}"],
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self._url: str | None = None

    @property
    def url(self) -> str:
        """The server's base URL, once it has written its runtime file (it listens by then)."""
        deadline = time.monotonic() + 60
        while self._url is None:
            assert self.process.poll() is None, self.log.read_text()[-3000:]
            assert time.monotonic() < deadline, "no Jupyter server in 60 s:\n" + self.log.read_text()[-3000:]
            found = self.runtime_dir / f"jpserver-{self.process.pid}.json"
            try:
                self._url = json.loads(found.read_text())["url"].rstrip("/")
            except (FileNotFoundError, json.JSONDecodeError):  # not written yet, or half-written
                time.sleep(0.05)
        return self._url

    def stop(self) -> None:
        """SIGTERM, as Ctrl-C would; killed where it has not gone in 20 s."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture(scope="module")
def jupyter(tmp_path_factory):
    """One live server for the module, always stopped."""
    chromium_or_skip()  # skip before starting anything
    server = JupyterServer(tmp_path_factory.mktemp("jupyter"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def executed(jupyter):
    """The magic's output for the profile, in a real kernel (run while the server starts):
    ``%nlprun --load`` shows a saved profile as its run showed it."""
    (jupyter.root / "caller.json").write_text(line_79_profile_json(), encoding="utf-8")
    cell = nbformat.v4.new_code_cell("%load_ext numba_lprun\n%nlprun --load caller.json")
    nb = nbformat.v4.new_notebook(
        cells=[cell],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    )
    # this Python's own kernel (ipykernel's, beside numba_lprun), whatever kernel the user's
    # Jupyter set-up may call python3
    kernel = KernelManager(kernel_name="python3", kernel_spec_manager=KernelSpecManager(kernel_dirs=[]))
    resources = {"metadata": {"path": str(jupyter.root)}}
    try:
        NotebookClient(nb, km=kernel, timeout=120, resources=resources).execute(env=jupyter.env)
    finally:
        if kernel.has_kernel:
            kernel.shutdown_kernel(now=True)
    (output,) = cell.outputs
    assert output.output_type == "display_data" and {"text/html", "text/plain"} <= set(output.data)
    return nb


def save_notebooks(jupyter: JupyterServer, nb) -> None:
    """``trusted.ipynb``, signed by the server's notary, and ``untrusted.ipynb``, which differs
    by a metadata field (the signature is of the content, wherever it is saved)."""
    for trust in TRUST:
        copy = nbformat.from_dict(json.loads(json.dumps(nb)))
        copy.metadata["numba_lprun_view"] = trust
        if trust == "trusted":
            jupyter.notary.sign(copy)
        assert jupyter.notary.check_signature(copy) is (trust == "trusted")
        nbformat.write(copy, jupyter.root / f"{trust}.ipynb")


#: a function of (theme, lab): true once the page shows the report in the cell's output, laid
#: out, in ``theme``, its fonts loaded (and, in JupyterLab, the file browser listed); otherwise
#: what it still lacks. The theme's name is set once its stylesheet has loaded, and the shell is
#: hidden then until the next frame
READY = """((theme, lab) => {
  const body = document.body, row = document.querySelector(".jp-OutputArea-output .nlprun table.lines tr");
  if (!row) return "no report at " + location.href;
  if (body.dataset.jpThemeName !== theme) return "theme: " + body.dataset.jpThemeName;
  if (!row.getBoundingClientRect().width) return "not laid out";
  if (document.fonts.status !== "loaded") return "fonts loading";
  if (lab && !document.querySelector("#filebrowser .jp-DirListing-item")) return "file browser empty";
  return true;
})"""

#: what the checks read: the report (``PROBE_FUNCTION``), and what the host made of the page
PAGE = (
    "(() => {\n"
    + PROBE_FUNCTION
    + """
  const output = document.querySelector(".jp-OutputArea-output");
  const backgrounds = [];
  for (let e = output; e; e = e.parentElement) backgrounds.push(getComputedStyle(e).backgroundColor);
  const files = document.querySelector("#filebrowser");
  const shown = files ? files.getBoundingClientRect() : null;
  return JSON.stringify({...probe(document, window), windowWidth: window.innerWidth,
    theme: document.body.dataset.jpThemeName, backgrounds, outputWidth: output.getBoundingClientRect().width,
    stylesheet: !!output.querySelector("style"), chart: !!output.querySelector("svg"),
    fileBrowser: shown && shown.width > 0 && shown.left < window.innerWidth ? shown.width : 0});
})()"""
)


@pytest.fixture(scope="module")
def live(jupyter, executed, tmp_path_factory):
    """Each view's page, read: the four pages loaded at once in the light theme, then switched
    to the dark one."""
    chromium = chromium_or_skip()
    save_notebooks(jupyter, executed)
    shots = os.environ.get("NUMBA_LPRUN_SCREENSHOTS")
    out = {}
    with DevTools(chromium, tmp_path_factory.mktemp("live-chromium"), WIDTH, HEIGHT) as browser:
        base = jupyter.url
        pages = {
            (host, trust): browser.open(f"{base}{path.format(trust)}?token={TOKEN}")
            for host, path in HOSTS.items()
            for trust in TRUST
        }
        for theme, name in THEMES.items():
            if theme != "light":  # the front end's own command, as the Settings menu runs it
                change = f"jupyterapp.commands.execute('apputils:change-theme', {{theme: '{name}'}})"
                browser.evaluate({str(k): s for k, s in pages.items()}, change + ".then(() => true)")
            for host in HOSTS:
                ready = f"{READY}({json.dumps(name)}, {json.dumps(host == 'lab')})"
                browser.wait_until({t: pages[host, t] for t in TRUST}, ready, timeout=90)
            read = browser.evaluate({f"{h} {theme} {t}": s for (h, t), s in pages.items()}, PAGE)
            out.update({view: json.loads(said) for view, said in read.items()})
            for trust in TRUST if shots else ():
                Path(shots).mkdir(parents=True, exist_ok=True)
                browser.screenshot(pages["lab", trust], Path(shots) / f"lab-{theme}-{trust}.png")
    return out


def report_of(live, view: str) -> dict:
    (report,) = live[view]["reports"]
    return report


def output_data(executed) -> dict:
    return executed.cells[0].outputs[0].data


@pytest.mark.parametrize("view", VIEWS)
def test_each_view_is_the_host_as_set_up(live, view):
    """The view is what its name says: the stylesheet and the chart reached the page exactly
    where the notebook is trusted (the host's sanitizer dropped them otherwise), the theme's
    background behind the output is light or dark, the window is 1280 px wide, and JupyterLab's
    file browser is open beside the notebook."""
    host, theme, trust = view.split()
    page = live[view]
    assert page["stylesheet"] is page["chart"] is (trust == "trusted")
    assert page["theme"] == THEMES[theme]
    behind = luminance(backdrop(page["backgrounds"]))
    assert behind > 0.8 if theme == "light" else behind < 0.05, (page["backgrounds"], behind)
    assert page["windowWidth"] == WIDTH
    if host == "lab":
        assert page["fileBrowser"] >= 200, page["fileBrowser"]
        assert page["outputWidth"] < 900, page["outputWidth"]  # the narrow output the check is about


#: the source column's least room, in characters: a line this long or shorter is on one line.
#: Untrusted in JupyterLab beside the file browser, the column had 15 (the host's half-em cell
#: padding and 13 px figures, the bars' fixed 110 px and the columns that fold only with the
#: stylesheet), and the 79-character line broke every three or four characters under its
#: hanging indent
ROOM = 30


@pytest.mark.parametrize("view", VIEWS)
def test_code_is_left_aligned_indented_and_wholly_visible(live, view):
    """Every source line as written, at its cell's left, and all of it inside what the host
    shows: the 79-character line is not cut by the output area, the notebook panel or the
    window, beside JupyterLab's open file browser; and the column is wide enough to read
    (``ROOM``)."""
    report = report_of(live, view)
    check_code(report, source_lines(ProfileStats.from_json(line_79_profile_json())), must_wrap=False)
    (long,) = [c for c in report["code"] if c["text"] == LINE_79]
    assert long["right"] <= long["visibleRight"] + 1, long
    short = [c for c in report["code"] if len(c["text"]) <= ROOM]
    assert len(short) >= 8 and [c for c in short if c["lines"] != 1] == []
    # in ROOM characters, under its hanging indent (8 + 4): 22, 18, 18 and the last 13
    assert long["lines"] <= 4, long


@pytest.mark.parametrize("view", VIEWS)
def test_numbers_are_right_aligned_and_hits_equal_the_text_plain_output(live, executed, view):
    """Figures at their cells' right on one line, and the hits those of the output's own
    text/plain (what a host without HTML shows)."""
    check_numbers(report_of(live, view), output_data(executed)["text/plain"])


@pytest.mark.parametrize("view", VIEWS)
def test_no_chart_text_runs_on_and_no_notice_is_false(live, executed, view):
    """The host's sanitizer unwraps the chart's SVG, keeping its text: none of it reads as a
    run-on line, and a "narrow window" notice shows only where its columns are folded."""
    said = chart_texts(output_data(executed)["text/html"])
    check_chart_and_notices(report_of(live, view), said, untrusted=view.endswith(" untrusted"))


@pytest.mark.parametrize("view", [v for v in VIEWS if v.endswith(" untrusted")])
def test_bars_and_heaviest_rows_survive_the_hosts_sanitizer(live, view):
    check_inline_bars(report_of(live, view))


@pytest.mark.parametrize("view", VIEWS)
def test_code_numbers_and_notes_read_at_aa_contrast(live, view):
    """Code, figures, notes, labels and marks against what the host's theme draws behind them:
    4.5:1 or more."""
    check_contrast(report_of(live, view), untrusted=view.endswith(" untrusted"))
