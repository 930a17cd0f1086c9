"""benchmarks/onnx_int8.py on sequence-first models (torch's ``batch_first=False`` layers and
``nn.LSTM``/``nn.GRU``: the input's first axis is the sequence, not a batch): each test input is
fed whole to both int8 networks, and an output onnxruntime leaves in float (an LSTM's) is said so
instead of dividing by its zero error."""

import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from tests.compiler.frontend.exporter_graphs import token_mlp_like
from tests.compiler.frontend.recurrent_graphs import recurrent

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow  # runs the benchmark script (onnxruntime's quantizer) once


def test_sequence_first_models_are_measured_one_whole_input_at_a_time(tmp_path):
    onnx.save(token_mlp_like(shape=(24, 1, 16)), str(tmp_path / "tokens_seq_first.onnx"))
    onnx.save(recurrent("LSTM", seq=6, batch=1, outputs=("Y",)), str(tmp_path / "lstm_seq_first.onnx"))
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "onnx_int8.py"), "--models", str(tmp_path),
                           "--calibration", "2", "--tests", "2"], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines()
            if line.split() and line.split()[0].endswith("seq_first")}
    assert sorted(rows) == ["lstm_seq_first", "tokens_seq_first"]
    # columns: model, input, |float-ort|, logit RMS, vdla int8, ort int8, ratio, ...
    tokens, lstm = rows["tokens_seq_first"], rows["lstm_seq_first"]
    assert float(tokens[2]) < 1e-4 and 0 < float(tokens[4]) and 0 < float(tokens[5]) and float(tokens[6]) < 2
    assert float(lstm[2]) < 1e-4 and 0 < float(lstm[4]) < 0.5 * float(lstm[3])  # int8 of a tiny, barely calibrated LSTM
    assert float(lstm[5]) == 0 and lstm[6] == "inf"
    assert "onnxruntime's quantize_static left every op computing that output in float" in done.stdout
