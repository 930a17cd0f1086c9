"""report.html (vdla/report_html.py): written by ``vdla run --plots``, self-contained (every
figure embedded, nothing fetched), and rendered by a real headless browser (Debian's
chromium-headless-shell, installed by scripts/setup.sh) without a console message, its layer
table sorting as a reader's click sorts it."""

import csv
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.vdla.test_plots import small_net
from vdla.cli import main

BROWSER = shutil.which("chromium-headless-shell") or shutil.which("chromium")


def render(page: Path, tmp_path: Path) -> tuple[dict, str]:
    """(``<body>``'s attributes after the page's script ran with ``#selftest``, the browser's
    console lines): the DOM as the browser leaves it, read with --dump-dom."""
    assert BROWSER, "no headless Chromium: run scripts/setup.sh (it installs chromium-headless-shell)"
    done = subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=0",
                           "--dump-dom", page.resolve().as_uri() + "#selftest"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    body = re.search(r"<body([^>]*)>", done.stdout)
    assert body, done.stdout[:500]
    attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', body.group(1)))
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return attrs, "\n".join(console)


def check_self_contained(text: str, figures: int) -> None:
    assert not re.search(r"""\b(?:src|href)=["'](?!data:|#)""", text), "the page refers to another file"
    assert "<link" not in text and "@import" not in text
    assert text.count('src="data:image/png;base64,') == figures


def cycles_order(layers_csv: Path) -> list[str]:
    rows = list(csv.DictReader(layers_csv.open()))
    return [r["name"] for r in sorted(rows, key=lambda r: -int(r["cycles"]))][:3]


def test_a_small_networks_page_is_whole_and_self_contained(tmp_path, capsys):
    out = tmp_path / "plots"
    assert main(["run", str(small_net(tmp_path / "n.onnx")), "--plots", str(out), "--placement", "all"]) == 0
    text = (out / "report.html").read_text()
    check_self_contained(text, figures=4)
    for name in ("body1", "body2", "residual", "classifier"):  # every layer is a row
        assert f"<td>{name}</td>" in text
    assert "Amdahl bound" in text and "fingerprint" in text and "cortex-a9" in text
    assert re.search(r"median per-layer error</td><td>\d+\.\d%</td>", text)  # the quantization, as vdla run prints it


@pytest.mark.slow
def test_the_resnet18_page_renders_in_a_browser_without_a_console_message(tmp_path, capsys):
    out = tmp_path / "results"
    assert main(["run", "resnet18", "--plots", str(out)]) == 0
    page = out / "report.html"
    check_self_contained(page.read_text(), figures=4)
    attrs, console = render(page, tmp_path)
    assert attrs.get("data-ready") == "1" and attrs.get("data-errors") == "", attrs
    assert not console, console
    # the click on "cycles" sorted the layers as layers.csv says, most cycles first
    assert attrs["data-sorted"].split("|") == cycles_order(out / "layers.csv")
