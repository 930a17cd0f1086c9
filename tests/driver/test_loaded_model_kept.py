"""Issue 45, finding 12: `vdla serve` kept the loaded model only for a byte-identical package.
Its key hashed the manifest, which lists the input's SHA-256, so every new input reloaded every
weight, micro-op and instruction (11.6 MB for ResNet-18 at 32). The key is now the model alone
(``driver.session.model_digest``): a second run of the same package with a new input loads 0
bytes, and its outputs are a fresh server's for that input."""

import json

import numpy as np
import onnx
import pytest

from compiler.network.package import LAYERS, npy_bytes
from compiler.network.partition import PartitionOptions
from driver.package import check, seal
from driver.protocol import request
from driver.session import model_digest
from tests.compiler.frontend.test_several_outputs import fpn_model
from tests.driver.serving import KEY, serving
from vdla.deploy import OUTPUTS_BLOB, build_package
from vdla.network import prepare

CONFIG = "tiny"
STATIC = ("weights", "uops", "insns")


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A small network with convolutions and a dense layer on the accelerator (weights to load),
    two outputs, its package (input A) and two test inputs besides."""
    path = tmp_path_factory.mktemp("model") / "fpn.onnx"
    onnx.save(fpn_model(outputs=["c2", "logits"], logits=True), str(path))
    p = prepare(str(path), config=CONFIG, options=PartitionOptions(stem_on_vdla=True, fc_on_vdla=True))
    assert sum(v.target == "vdla" for v in p.placements.values()) >= 3
    files = build_package(p, model="fpn", arm_library=False, progress=lambda m: None)
    return files, p.tests[1:2], p.tests[2:3]


def with_input(files: dict[str, bytes], x: np.ndarray) -> dict[str, bytes]:
    """The same package with another input (sealed again: its manifest lists the new input's hash)."""
    manifest = json.loads(files["manifest.json"])
    fields = {k: v for k, v in manifest.items() if k not in ("format", "version", "files")}
    inner = {n: d for n, d in files.items() if n != "manifest.json"}
    return seal({**inner, "input.npy": npy_bytes(x)}, **fields)


def run(address, files):
    result, blobs, _ = request(address, {"op": "run"}, files, key=KEY, timeout_s=120)
    return result, {name: data for name, data in blobs.items() if name != LAYERS}  # layers.json holds wall times


def test_a_new_input_loads_no_weights_and_answers_like_a_fresh_server(model):
    files, x_b, x_c = model
    package_b, package_c = with_input(files, x_b), with_input(files, x_c)
    assert package_b["manifest.json"] != files["manifest.json"]  # what the old key hashed
    with serving(CONFIG) as (_, address):
        first, out_a = run(address, files)
        second, out_b = run(address, package_b)
        third, out_c = run(address, package_c)
        again, out_a2 = run(address, files)
    assert first["bytes_moved"]["load"]["weights"] > 0 and all(first["bytes_moved"]["load"][k] > 0 for k in STATIC)
    for later in (second, third, again):  # nothing loaded: weights, micro-ops and programs stayed resident
        assert later["bytes_moved"]["load"] == dict.fromkeys(first["bytes_moved"]["load"], 0)
        assert later["bytes_moved"]["per_inference"] == first["bytes_moved"]["per_inference"]
    assert out_a2 == out_a and again["output_sha256"] == first["output_sha256"]
    assert out_b != out_a and set(out_b) == {OUTPUTS_BLOB}  # the two outputs
    for package, (result, out) in ((package_b, (second, out_b)), (package_c, (third, out_c))):
        with serving(CONFIG) as (_, fresh):
            theirs, fresh_out = run(fresh, package)
        assert out == fresh_out and result["output_sha256"] == theirs["output_sha256"]
        assert theirs["bytes_moved"]["load"] == first["bytes_moved"]["load"]  # a fresh server loads it all


def test_the_model_digest_is_the_model_not_the_input(model):
    files, x_b, _ = model
    package_b = with_input(files, x_b)
    fingerprint = json.loads(files["manifest.json"])["fingerprint"]
    manifest, manifest_b = check(files, fingerprint), check(package_b, fingerprint)
    assert model_digest(files, manifest) == model_digest(package_b, manifest_b)
    bundle = next(n for n in files if n.startswith("bundles/"))
    other_weights = {**files, bundle: files[bundle][:-1] + bytes([files[bundle][-1] ^ 1])}
    assert model_digest(other_weights, manifest) != model_digest(files, manifest)
    assert model_digest(files, {**manifest, "fingerprint": "another"}) != model_digest(files, manifest)
