"""The assembly examples of examples/ (docs/asm.md, "Examples"): each assembles, runs on the
reference semantics and leaves in DRAM what plain numpy computes from its own data; the
compiled conv tile is what today's compiler and ``vdla disasm --annotate`` write."""

import json
import sys
from pathlib import Path

import numpy as np

from compiler.layout import unpack_activations
from compiler.quantize import reference
from vdla.cli import main
from vdla_hw.asm import assemble
from vdla_hw.bundle import Bundle
from vdla_hw.disasm import disassemble

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def run(name: str, tmp_path: Path, capsys) -> tuple[Bundle, np.ndarray]:
    """(the assembled example, its output symbol after ``vdla exec -o``, read by ``vdla dump --json``),
    once the cycle-level simulator has run it too."""
    bundle, after = tmp_path / "b.npz", tmp_path / "after.npz"
    assert main(["asm", str(EXAMPLES / name), "-o", str(bundle)]) == 0
    assert main(["sim", str(bundle)]) == 0   # the simulator's rules too (VTA's GEMM hazard, races)
    assert main(["exec", str(bundle), "-o", str(after)]) == 0
    out = "out" if name == "conv_tile.s" else "y"
    capsys.readouterr()
    assert main(["dump", str(after), out, "--json"]) == 0
    dumped = json.loads(capsys.readouterr().out)
    return Bundle.load(bundle), np.array(dumped["values"], dtype=dumped["dtype"])


def test_gemm_by_hand(tmp_path, capsys):
    b, y = run("gemm.s", tmp_path, capsys)
    x = b.read("x").reshape(-1).astype(np.int64)                     # 8 values: two INP elements
    w = np.concatenate(list(b.read("w")), axis=1).astype(np.int64)   # 4 x 8: element k is W[:, 4k:4k+4]
    want = ((w @ x) >> 4).astype(np.int8)                            # low 8 bits, as OUT keeps
    assert np.array_equal(y.reshape(-1), want)
    assert want.any()


def test_double_buffered_tiles(tmp_path, capsys):
    b, y = run("double_buffer.s", tmp_path, capsys)
    x = b.read("x").reshape(4, 4).astype(np.int64)
    w = b.read("w")[0].astype(np.int64)
    want = ((x @ w.T) >> 3).astype(np.int8)
    assert np.array_equal(y.reshape(4, 4), want)
    assert len(set(map(bytes, want))) == 4   # four different tiles: a mixed-up buffer would show


def test_conv_tile_is_what_the_compiler_writes_and_computes_the_conv(tmp_path, capsys):
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import make_examples
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    text = (EXAMPLES / "conv_tile.s").read_text()
    assert text == make_examples.conv_tile(), "examples/conv_tile.s is stale: run scripts/make_examples.py"
    b, out = run("conv_tile.s", tmp_path, capsys)
    layer = b.meta["layer"]
    x = unpack_activations(b.read("inp"), 1, layer["ic"])
    packed_w = b.read("wgt")                                          # (ob, ib, ky, kx, o, i)
    w = packed_w.transpose(0, 4, 1, 5, 2, 3).reshape(layer["oc"], layer["ic"], 3, 3)
    bias = b.read("bias")[:, 0, :].reshape(-1)
    want = reference.conv2d(x, w, bias, stride=1, pad=1, shift=layer["shift"], relu=True)
    got = unpack_activations(out.reshape(1, -(-layer["oc"] // 4), 4, 4, 1, 4), 1, layer["oc"])  # tiny: BLOCK 4
    assert np.array_equal(got, want)
    assert want.any()


def test_annotations_leave_the_bundle_unchanged():
    annotated = (EXAMPLES / "conv_tile.s").read_text()
    bundle = assemble(annotated)
    assert "waits for c2l" in annotated and "then signals l2c" in annotated
    assert disassemble(bundle, annotate=True).splitlines()[-1] in annotated
    assert assemble(disassemble(bundle)).to_bytes() == bundle.to_bytes()
