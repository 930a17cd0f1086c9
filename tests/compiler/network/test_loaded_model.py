"""The executor on a loaded model (driver/session.py): a second inference writes no bundle again
(no weight, micro-op or instruction bytes), gives the output of a fresh run and of the quantized
reference, and is charged the same host work; the server's run path keeps the model loaded
between runs of the same package."""

import hashlib

import numpy as np
import pytest

from compiler.cpu_fallback.cost import CpuModel
from compiler.network import partition
from compiler.network.executor import Executor, execute
from compiler.network.report import summarise
from compiler.quantize import reference
from driver import open_device
from tests.compiler.network.test_network import quantized_resnet
from compiler.frontend.inputs import synthetic_images
from vdla.network import board_runtime

STATIC = ("weights", "uops", "insns")


@pytest.fixture(scope="module")
def resnet18_32():
    return quantized_resnet(18, 32)


def sha(a) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def test_second_inference_moves_no_weights_and_gives_the_same_output(resnet18_32):
    q = resnet18_32
    x = synthetic_images(1, 32, 5)
    device = open_device("sim", "osdi18")
    placements = partition(q, device.config)
    executor = Executor(q, placements, device, cpu_model=CpuModel(), runtime=board_runtime(device.config))
    first, second = executor.run(x), executor.run(x)
    fresh = execute(q, x, placements, open_device("sim", "osdi18"))
    assert sha(first.output) == sha(second.output) == sha(fresh.output) == sha(reference.forward(q, x))
    load, per_run = first.bytes_moved["load"], first.bytes_moved["per_inference"]
    assert load["weights"] > 10 * per_run["activations_in"] > 0 and load["uops"] > 0 and load["insns"] > 0
    assert all(per_run[k] == 0 for k in STATIC)
    assert all(v == 0 for v in second.bytes_moved["load"].values())  # nothing loaded again
    assert second.bytes_moved["per_inference"] == per_run
    for a, b in zip(first.records, second.records):  # the same host work per inference
        assert a.host_parts == pytest.approx(b.host_parts)
    totals = summarise(second.records)
    assert totals["bytes_moved"] == second.bytes_moved
    # copy: exactly the moved bytes at the memcpy rate
    rate = CpuModel().cpu.memcpy_bytes_per_s
    moved = per_run["activations_in"] + per_run["activations_out"]
    assert totals["host_parts"]["copy"] == pytest.approx(moved / rate)


def test_chained_offloads_say_why_their_input_crosses_the_cpu(resnet18_32):
    q = resnet18_32
    device = open_device("sim", "osdi18")
    result = execute(q, synthetic_images(1, 32, 5), partition(q, device.config), device)
    paths = {r.name: r.extra.get("input_path", "") for r in result.records}
    assert "padded with -128" in paths["layer1.0.conv2"]  # conv1 stores unpadded, conv2 pads with its zero point
    assert paths["layer1.0.conv1"] == ""  # its input comes from the CPU (a residual add)


def test_server_run_path_keeps_the_package_loaded():
    from vdla.deploy import build_package, run_package
    from vdla.network import prepare

    p = prepare("resnet18", resolution=32)
    files = build_package(p, model="resnet18", arm_library=False, progress=lambda m: None)
    device = open_device("sim", p.config)
    try:
        first, out1 = run_package(files, device)
        second, out2 = run_package(files, device)
    finally:
        device.close()
    assert first["output_sha256"] == second["output_sha256"] and out1["output.npy"] == out2["output.npy"]
    assert first["output_sha256"] == sha(reference.forward(p.q, p.tests[:1]))
    assert first["bytes_moved"]["load"]["weights"] > 0
    assert all(v == 0 for v in second["bytes_moved"]["load"].values())
    assert all(second["bytes_moved"]["per_inference"][k] == 0 for k in STATIC)
