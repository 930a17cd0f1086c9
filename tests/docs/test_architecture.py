"""The architecture pictures (``vdla config draw``, vdla/architecture.py): the committed
docs/figures/architecture-<preset>.svg are what today's presets draw, and each picture says the
sizes the spec gives its configuration (docs/spec.md section 2's preset table)."""

import json
import re
import sys
from pathlib import Path

import pytest

from vdla.cli import main
from vdla_hw.config import load_config
from vdla_hw.presets import PRESETS

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "figures"))
import architecture as script  # noqa: E402

sys.path.remove(str(ROOT / "scripts" / "figures"))


def svg_text(path: Path) -> str:
    """The words of an SVG written with text as text (svg.fonttype none), in one string."""
    return " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", path.read_text()))


@pytest.mark.parametrize("preset", PRESETS)
def test_the_committed_picture_is_what_the_preset_draws(preset, tmp_path, capsys):
    assert main(["config", "draw", preset, "-o", str(tmp_path / "a.svg")]) == 0
    assert (tmp_path / "a.svg").read_bytes() == script.path(preset).read_bytes(), \
        f"{script.path(preset).relative_to(ROOT)} is stale: run .venv/bin/python scripts/figures/architecture.py"


# the sizes of docs/spec.md section 2 (buffers in kB; the paper's and VTA's published numbers)
@pytest.mark.parametrize("preset, words", [
    ("osdi18", ["INP 32 kB", "WGT 32 kB", "ACC 128 kB", "UOP 32 kB", "GEMM core 1x16x16", "51.2 GOPS peak",
                "100 MHz", "command queue", "512 deep", "l2c (1024)", "ACP"]),
    ("vta-pynq", ["WGT 256 kB", "1,024 x", "[16x16] int8", "ACC 128 kB", "2,048 x", "[1x16] int32"]),
    ("osdi18-200", ["102.4 GOPS peak", "200 MHz"]),
    ("tiny", ["GEMM core 1x4x4", "16 MACs/cycle", "ALU 4 lanes"]),
])
def test_each_picture_says_its_configuration(preset, words):
    text = svg_text(script.path(preset))
    assert load_config(preset).fingerprint in text
    for word in words:
        assert word in text, (preset, word)


def test_a_users_configuration_is_drawn(tmp_path, capsys):
    cfg = tmp_path / "big.json"
    cfg.write_text(json.dumps({"preset": "osdi18", "LOG_BLOCK": 5, "LOG_WGT_BUFF_SIZE": 17}))
    assert main(["config", "draw", str(cfg), "-o", str(tmp_path / "b.svg")]) == 0
    text = svg_text(tmp_path / "b.svg")
    assert "GEMM core 1x32x32" in text and "1024 MACs/cycle" in text and "WGT 128 kB" in text


@pytest.mark.parametrize("argv, words", [
    (["config", "draw", "tiny", "-o", "{tmp}/a.txt"], "is written as .svg, .png, .pdf, not .txt"),
    (["config", "draw", "no-such-preset", "-o", "{tmp}/a.svg"], "no-such-preset"),
])
def test_bad_requests_are_one_line(argv, words, tmp_path, capsys):
    assert main([a.format(tmp=tmp_path) for a in argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0], err


def test_the_committed_token_flow_is_what_vdla_sim_draws(tmp_path, capsys):
    bundle = tmp_path / "db.npz"
    assert main(["asm", str(ROOT / "examples" / f"{script.TOKENS_EXAMPLE}.s"), "-o", str(bundle)]) == 0
    assert main(["sim", str(bundle), "--tokens", str(tmp_path / "t.svg")]) == 0
    assert (tmp_path / "t.svg").read_bytes() == script.TOKENS.read_bytes(), \
        f"{script.TOKENS.relative_to(ROOT)} is stale: run .venv/bin/python scripts/figures/architecture.py"
    text = svg_text(script.TOKENS)
    assert "token flow: 163 cycles on tiny" in text and "token" in text


def test_token_pairs_follow_the_fifo_order():
    from vdla.token_picture import token_pairs
    from vdla_hw.asm import assemble

    bundle = assemble((ROOT / "examples" / "double_buffer.s").read_text())
    pairs = token_pairs(bundle.insns())
    # each input load's l2c goes to the GEMM of its tile, in order; tiles 0 and 1 hand their
    # buffers back (c2l) to the loads of tiles 2 and 3; the ALU tells the store, the store FINISH
    assert [(a, b) for q, a, b in pairs if q == "l2c"] == [(1, 7), (2, 8), (3, 9), (4, 10)]
    assert [(a, b) for q, a, b in pairs if q == "c2l"] == [(7, 3), (8, 4)]
    assert [(q, a, b) for q, a, b in pairs if q in ("c2s", "s2c")] == [("c2s", 11, 12), ("s2c", 12, 13)]


def test_the_committed_layout_and_tiling_picture_is_current(tmp_path):
    sys.path.insert(0, str(ROOT / "scripts" / "figures"))
    try:
        import layouts
    finally:
        sys.path.remove(str(ROOT / "scripts" / "figures"))
    assert layouts.draw(tmp_path / "l.svg").read_bytes() == layouts.PATH.read_bytes(), \
        "docs/figures/layout-and-tiling.svg is stale: run .venv/bin/python scripts/figures/layouts.py"
    text = svg_text(layouts.PATH)
    assert "th=2, tw=4, 2 virtual threads" in text and "tile 1" in text and "thread 1" in text
