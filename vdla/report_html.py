"""``report.html``: one self-contained page of a run (``vdla run --plots DIR``) or of a sweep.

The page holds everything it shows: the figures as embedded PNG data, the tables as HTML (the
per-layer or per-point table sortable by any column, with a few lines of inline script and no
library), the configuration with its fingerprint and each parameter's source, and what was
modelled with its sources. It loads nothing from the network or from other files, so it can be
mailed or archived on its own and opened offline.

The inline script records what happened in ``<body>``'s data attributes (``data-ready``,
``data-errors``), and with ``#selftest`` in the address it sorts its first sortable table by the
column marked ``data-selftest`` and writes the first three rows' first cells in ``data-sorted`` and
their values in that column in ``data-sorted-values``: what
tests/vdla/test_report_html.py reads back from a headless browser's rendered page.
"""

from __future__ import annotations

import base64
import html
import math

STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1200px; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
table.sortable th { cursor: pointer; background: #f3f3f3; }
table.sortable th:hover { background: #e4e4e4; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.85em; color: #555; }
.note { color: #555; font-size: 0.9em; }
"""

# Sort a table by the clicked header (numbers as numbers, then text); record errors and readiness.
SCRIPT = """
(function () {
  var errors = [];
  window.addEventListener('error', function (e) { errors.push(String(e.message)); mark(); });
  function mark() { document.body.setAttribute('data-errors', errors.join(' | ')); }
  function key(cell) {
    var t = cell.getAttribute('data-value') || cell.textContent.trim();
    var n = parseFloat(t.replace(/,/g, ''));
    return isNaN(n) ? [1, t.toLowerCase()] : [0, n];
  }
  function sortBy(table, col) {
    var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
    var th = table.tHead.rows[0].cells[col], down = th.getAttribute('data-order') !== 'asc';
    rows.sort(function (a, b) {
      var x = key(a.cells[col]), y = key(b.cells[col]);
      var c = x[0] - y[0] || (x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0);
      return down ? -c : c;
    });
    th.setAttribute('data-order', down ? 'asc' : 'desc');
    rows.forEach(function (r) { body.appendChild(r); });
  }
  document.querySelectorAll('table.sortable').forEach(function (table) {
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      th.title = 'sort by this column';
      th.addEventListener('click', function () { sortBy(table, col); });
    });
  });
  if (location.hash === '#selftest') {
    var table = document.querySelector('table.sortable');
    var th = table.querySelector('th[data-selftest]');
    th.click();
    var rows = Array.prototype.slice.call(table.tBodies[0].rows, 0, 3);
    document.body.setAttribute('data-sorted', rows.map(function (r) { return r.cells[0].textContent; }).join('|'));
    document.body.setAttribute('data-sorted-values', rows.map(function (r) {
      return r.cells[th.cellIndex].getAttribute('data-value'); }).join('|'));
  }
  mark();
  document.body.setAttribute('data-ready', '1');
})();
"""


def esc(value) -> str:
    return html.escape(str(value), quote=True)


def number(value, digits: int = 4) -> str:
    """A number as a table shows it: integers with separators, others to ``digits`` significant."""
    if isinstance(value, bool) or value is None:
        return "" if value is None else str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return f"{value:,.0f}" if abs(value) >= 10 ** digits else f"{value:.{digits}g}"
    return str(value)


def table(header: list[str], rows: list[list], sortable: bool = False, selftest: int | None = None) -> str:
    """An HTML table; cells that are numbers are right-aligned and sort as numbers."""
    marked = ' data-selftest="1"'
    head = "".join(f"<th{marked if k == selftest else ''}>{esc(h)}</th>" for k, h in enumerate(header))
    body = []
    for row in rows:
        cells = []
        for value in row:
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                cells.append(f'<td class="n" data-value="{esc(repr(value))}">{esc(number(value))}</td>')
            else:
                cells.append(f"<td>{esc('' if value is None else value)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    cls = ' class="sortable"' if sortable else ""
    return f"<table{cls}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def figure(name: str, png: bytes, caption: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return (f'<figure id="fig-{esc(name)}"><img alt="{esc(caption)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{esc(name)}.png: {esc(caption)}</figcaption></figure>")


def document(title: str, sections: list[tuple[str, str]]) -> str:
    """The whole page: ``sections`` are (heading, HTML body)."""
    parts = [f"<h2>{esc(h)}</h2>\n{body}" for h, body in sections]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width\"><title>{esc(title)}</title>"
            f"<style>{STYLE}</style></head>\n<body><h1>{esc(title)}</h1>\n" + "\n".join(parts)
            + f"\n<script>{SCRIPT}</script>\n</body></html>\n")


def configuration(config: dict) -> str:
    """A configuration's parameters with their sources (``Config.describe()``)."""
    rows = [[key, value, config["sources"].get(key, "")] for key, value in config["params"].items()]
    derived = ", ".join(f"{k} {number(v)}" for k, v in config["derived"].items())
    return (f"<p>{esc(config['name'])}: fingerprint <code>{esc(config['fingerprint'])}</code>, "
            f"ISA v{esc(config['isa_version'])}.</p>" + table(["parameter", "value", "source"], rows)
            + f"<p class=\"note\">Derived: {esc(derived)}.</p>")


FIGURE_CAPTIONS = {
    "layer_speedup": "each layer's speedup with and without the host's work, the whole-network speedup and "
                     "the Amdahl bound",
    "fig21_breakdown": "time by category, CPU only and CPU + accelerator, beside the TVM paper's Fig. 21",
    "roofline": "every offloaded convolution with and without latency hiding under the configuration's roof",
    "timeline": "one offloaded layer's instructions on the load, compute and store modules over time",
}
LAYER_COLUMNS = [("name", "layer"), ("op", "op"), ("placement", "placed"), ("macs", "MACs"), ("cycles", "cycles"),
                 ("seconds", "time s"), ("host_s", "host s"), ("cpu_s", "CPU s"), ("utilization", "GEMM util"),
                 ("reason", "why placed there")]


def run_page(summary: dict, rows: list[dict], figures: dict[str, bytes], config: dict) -> str:
    """The page of ``vdla run --plots``: ``summary`` is summary.json's object, ``rows`` the
    per-layer rows of layers.csv (as dicts of Python values), ``figures`` each figure's PNG,
    ``config`` the configuration's ``describe()``."""
    from compiler.network.report import median_error

    t = summary["totals"]
    quant = summary["quantization"]
    key = [["CPU only (modelled)", f"{t['cpu_only_s'] * 1e3:.1f} ms"],
           ["CPU + accelerator", f"{t['offload_s'] * 1e3:.1f} ms"],
           ["speedup", f"{t['speedup']:.2f}x"],
           ["Amdahl bound (the accelerator infinitely fast)", f"{t['amdahl_bound']:.2f}x"],
           ["offloaded ops alone", f"{t['offloaded_speedup']:.1f}x" if t["offloaded_ops"] else "nothing offloaded"],
           ["host work around the offloads", f"{t['host_s'] * 1e3:.1f} ms"],
           ["bit exact against the int8 numpy reference", str(summary["bit_exact"])],
           [f"quantization on {quant['test_inputs']} inputs: median per-layer error",
            median_error(quant["per_layer_error"].values())]]
    cpu = t.get("cpu_model") or {}
    modelled = [["accelerator time", f"cycles of the cycle-level simulator at the configuration's clock "
                 f"({summary['config']}, {summary['target']})"],
                ["CPU time", f"{cpu.get('title', '')}: {t.get('time_basis', '')}"],
                *[[name, f"{p['value']}: {p['source']}"] for name, p in cpu.get("params", {}).items()],
                *[[f"host: {part}", f"{seconds * 1e3:.2f} ms"] for part, seconds in t.get("host_parts", {}).items()]]
    layer_rows = [[row.get(field) for field, _ in LAYER_COLUMNS] for row in rows]
    figs = "".join(figure(name, png, FIGURE_CAPTIONS.get(name, name)) for name, png in figures.items())
    title = f"{summary['model']} on {summary['config']} ({summary['fingerprint']})"
    return document(title, [
        ("Result", table(["", ""], key)),
        ("Figures", figs or "<p>No figures (nothing was offloaded).</p>"),
        ("Layers (click a column to sort)", table([h for _, h in LAYER_COLUMNS], layer_rows, sortable=True,
                                                  selftest=[f for f, _ in LAYER_COLUMNS].index("cycles"))),
        ("What was modelled, and from which sources", table(["what", "how, and its source"], modelled)),
        ("Configuration", configuration(config)),
    ])


SWEEP_KEYS = [("space", "design space"), ("search", "search"), ("models", "models"), ("points", "points"),
              ("ok", "points that ran"), ("invalid", "invalid configurations"), ("failed", "failed points"),
              ("pareto_points", "points on the Pareto front"), ("objectives", "objectives"), ("part", "FPGA part"),
              ("seconds", "seconds"), ("points_per_s", "points per second")]
SWEEP_MODELLED = [("resource_model", "resources (LUT, FF, DSP, BRAM)"), ("clock_estimate", "clock estimate"),
                  ("energy_table", "energy per operation"), ("ray", "where the points ran")]


def _plain(value) -> str:
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_plain(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(_plain(v) for v in value)
    return number(value) if isinstance(value, (int, float)) else str(value)


def sweep_page(summary: dict, front: list[dict], columns: list[str], figures: dict[str, bytes]) -> str:
    """The page of ``vdla sweep``: ``summary`` is its summary.json object, ``front`` the Pareto
    points (pareto.csv's rows) shown in ``columns`` order, ``figures`` each figure's PNG by name."""
    key = [[label, _plain(summary[k])] for k, label in SWEEP_KEYS if k in summary]
    modelled = [[label, _plain(summary[k])] for k, label in SWEEP_MODELLED if k in summary]
    best = [[part, _plain(point)] for part, point in (summary.get("best_fitting") or {}).items()]
    rows = [[row.get(c) for c in columns] for row in front]
    first = next((k for k, c in enumerate(columns) if c.startswith("latency")), None)
    figs = "".join(figure(name, png, name.replace("_", " ")) for name, png in figures.items())
    return document(f"Sweep of {_plain(summary.get('models', []))} over {summary.get('space', '')}", [
        ("Result", table(["", ""], key)),
        ("Best configurations that fit", table(["part", "point"], best) if best else "<p>None fits.</p>"),
        ("Pareto front (click a column to sort)", table(columns, rows, sortable=True, selftest=first)
         if rows else "<p>No point ran.</p>"),
        ("Figures", figs or "<p>No figures (--no-figures).</p>"),
        ("What was modelled, and from which sources", table(["what", "how"], modelled)),
    ])
