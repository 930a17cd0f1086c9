"""`vdla compile` then `vdla sim --output y.npy`: the layer's tensor against plain numpy."""

import numpy as np
import pytest

from compiler.quantize import reference as quant_ref
from vdla.cli import main


@pytest.mark.parametrize("preset", ["tiny", "osdi18"])
def test_compile_then_sim_output_tensor_vs_numpy_conv(tmp_path, capsys, preset):
    rng = np.random.default_rng(4)
    x = rng.integers(-128, 128, (1, 5, 7, 6), dtype=np.int8)
    w = rng.integers(-128, 128, (9, 5, 3, 3), dtype=np.int8)
    b = rng.integers(-3000, 3000, (9,), dtype=np.int32)
    for name, arr in (("x", x), ("w", w), ("b", b)):
        np.save(tmp_path / f"{name}.npy", arr)
    layer = tmp_path / "layer.npz"
    assert main(["compile", "conv2d", "--h", "7", "--w", "6", "--ic", "5", "--oc", "9", "--k", "3", "--stride", "2",
                 "--pad", "1", "--shift", "9", "--relu", "--config", preset, "--input", str(tmp_path / "x.npy"),
                 "--weight", str(tmp_path / "w.npy"), "--bias", str(tmp_path / "b.npy"), "-o", str(layer)]) == 0
    out, image = tmp_path / "y.npy", tmp_path / "final.npz"
    assert main(["sim", str(layer), "--output", str(out), "-o", str(image)]) == 0
    want = quant_ref.conv2d(x, w, b, stride=2, pad=1, shift=9, relu=True)
    np.testing.assert_array_equal(np.load(out), want)
    assert image.exists()
    capsys.readouterr()


def test_output_of_a_bundle_that_is_not_a_layer_is_a_clear_error(tmp_path, capsys):
    from pathlib import Path

    example = Path(__file__).parents[2] / "examples" / "vector_add.s"
    bundle = tmp_path / "p.npz"
    main(["asm", str(example), "-o", str(bundle)])
    assert main(["sim", str(bundle), "--output", str(tmp_path / "y.npy")]) == 2
    assert "not produced by the layer compiler" in capsys.readouterr().err
