"""The Cortex-A9 shared library: ABI, CPU, self-containedness, manifest, NEON code."""

import json
import re
import subprocess

import pytest

import compiler.cpu_fallback as cf
from compiler.cpu_fallback import arm, resnet18
from compiler.cpu_fallback.arm import arm_assembly, require_tool

from .arm_cases import arm_specs


def _readelf(*args):
    readelf = require_tool("arm-linux-gnueabihf-readelf", "binutils-arm-linux-gnueabihf")
    return subprocess.run([readelf, *args], capture_output=True, text=True, check=True).stdout


def test_arm_library_is_hard_float_cortex_a9_neon(arm_build):
    _, library, _ = arm_build
    header = _readelf("-h", str(library))
    assert "ELF32" in header and "ARM" in header and "DYN (Shared object file)" in header
    attributes = _readelf("-A", str(library))
    assert 'Tag_CPU_name: "cortex-a9"' in attributes
    assert "Tag_Advanced_SIMD_arch: NEONv1" in attributes
    assert "Tag_ABI_VFP_args: VFP registers" in attributes  # hard-float calling convention


def test_arm_library_needs_no_other_library(arm_build):
    _, library, _ = arm_build
    assert "NEEDED" not in _readelf("-d", str(library))
    undefined = [line for line in _readelf("--dyn-syms", "-W", str(library)).splitlines()
                 if " UND " in line and line.split()[-1] != "UND"]
    assert undefined == []


def test_arm_library_exports_every_spec_with_manifest(arm_build):
    _, library, _ = arm_build
    symbols = _readelf("--dyn-syms", "-W", str(library))
    manifest = json.loads(library.with_suffix(".json").read_text())
    assert manifest["cpu"] == "cortex-a9" and manifest["triple"].startswith("armv7a")
    for spec in arm_specs():
        assert spec.symbol in symbols
        assert manifest["kernels"][spec.symbol]["family"] == spec.family


@pytest.mark.parametrize("spec", [
    cf.Conv2dSpec(n=1, c=3, h=224, w=224, oc=64, kh=7, kw=7, stride=2, pad=3, shift=8),
    cf.MaxPool2dSpec(n=1, c=64, h=112, w=112, kh=3, kw=3, stride=2, pad=1),
    cf.AddSpec(size=200704, shift=1, relu=True),
    cf.DenseSpec(n=1, k=512, m=1000, out_dtype="int32"),
], ids=lambda s: s.family)
def test_arm_hot_loops_use_neon(spec):
    """The Cortex-A9 code of the hot kernels uses NEON (q-register) arithmetic."""
    asm = arm_assembly([spec])
    neon = [line for line in asm.splitlines()
            if line.strip().startswith(("vmla", "vmax", "vadd", "vsra", "vmlal", "vmul", "vshr"))]
    assert neon, f"{spec.family}: no NEON arithmetic in the ARM code"


@pytest.mark.parametrize("name", ["conv1", "layer1.0.conv1", "layer3.0.downsample", "layer4.0.conv2"])
def test_arm_conv_multiplies_int16_by_weight_lanes_without_spills(name):
    """The conv's reduction is vmlal.s16 with the weight taken from a lane (4 int16 x int16 ->
    int32 MACs per instruction, accumulators in registers), no int32 multiply, no broadcast,
    and nothing spilled to the stack."""
    rows = {r["name"]: r for r in resnet18.layer_table()}
    asm = arm_assembly([resnet18.conv_spec(rows[name])])
    assert len(re.findall(r"vmlal\.s16\s+q\d+, d\d+, d\d+\[[0-3]\]", asm)) >= 8
    assert "vmla.i32" not in asm and "vmul.i32" not in asm and "vdup" not in asm
    assert "Spill" not in asm and "Reload" not in asm


def test_arm_missing_linker_fails_loudly(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(cf.ToolchainError, match="apt-get install -y lld"):
        arm.build_arm_library([cf.ReluSpec(size=4)], tmp_path / "lib.so")
