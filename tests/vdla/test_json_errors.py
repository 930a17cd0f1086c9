"""``--json`` commands that refuse a model (vdla/cli.py ``_json_error``): ``{"error": ...}`` on
stdout with every unsupported node, besides the one line on stderr and exit status 2."""

import json

import onnx

from tests.compiler.frontend.test_refusal import fcn_and_attention
from tests.vdla.test_cli import run


def test_vdla_run_json_prints_the_error_object(capsys, tmp_path):
    path = tmp_path / "fcn.onnx"
    onnx.save(fcn_and_attention(), str(path))
    code, out, err = run(capsys, "run", path, "--json")
    last = err.rstrip("\n").splitlines()[-1]  # (after the progress lines)
    assert code == 2 and last.startswith(f"vdla: error: {path}: 6 nodes cannot be imported")
    error = json.loads(out)["error"]
    assert error["file"] == str(path) and error["message"] == last[len("vdla: error: "):]
    assert [(r["name"], r["op"], r["pattern"]) for r in error["nodes"]][3:5] == [
        ("head", "MaxPool", "dilated pooling (dilations [2, 2])"),
        ("scores", "MatMul", "attention: MatMul of two computed tensors")]
    code, out, err = run(capsys, "run", tmp_path / "missing.onnx", "--json")
    assert code == 2 and json.loads(out)["error"]["reason"] == "no such file" and "nodes" not in json.loads(out)["error"]
    code, out, err = run(capsys, "run", path)
    assert code == 2 and out == ""  # without --json, nothing on stdout
