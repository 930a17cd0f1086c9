"""The sweep's report.html (vdla/report_html.sweep_page, written by vdla sweep): self-contained,
named by the folder's README.md, and rendered by headless Chromium without a console message,
its Pareto table sorting by latency as pareto.csv says. The sweep runs on the local executor
(the page is the same whichever executor computed the points)."""

import json

import pytest

from dse.store import read_rows
from tests.vdla.test_report_html import check_self_contained, render
from vdla.cli import main


@pytest.mark.slow
def test_the_sweeps_page_renders_in_a_browser_without_a_console_message(tmp_path, capsys, small_cnn_path):
    space = tmp_path / "space.json"
    space.write_text(json.dumps({"base": "osdi18", "parameters": {"LOG_BLOCK": [3, 4], "CLOCK_MHZ": [100, 200]}}))
    out = tmp_path / "out"
    assert main(["sweep", str(space), "-o", str(out), "--models", small_cnn_path, "--executor", "local",
                 "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    page = out / "report.html"
    assert str(page) in summary["outputs"] and "`report.html`" in (out / "README.md").read_text()
    text = page.read_text()
    check_self_contained(text, figures=sum(p.endswith(".png") for p in summary["outputs"]))
    _, front = read_rows(out / "pareto.csv")
    assert front and all(f"<td>{row['model']}</td>" in text for row in front)
    attrs, console = render(page, tmp_path)
    assert attrs.get("data-ready") == "1" and attrs.get("data-errors") == "", attrs
    assert not console, console
    latencies = sorted((row["latency_s"] for row in front), reverse=True)[:3]  # the click sorts slowest first
    assert [float(v) for v in attrs["data-sorted-values"].split("|")] == latencies
