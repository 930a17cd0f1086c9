"""compiler.accel's pipeline: the ordered lists CHECKS and PASSES are what compile_layer runs, in
order, each pass a function of accel named as listed; docs/compiler.md lists the same names."""

import re
from pathlib import Path

from compiler import accel
from compiler.layers import Conv2D

LAYER = Conv2D(h=4, w=4, ic=4, oc=4, k=3, pad=1, shift=3)
DOC = Path(__file__).resolve().parents[2] / "docs" / "compiler.md"


def pass_names():
    return [run.__name__ for run in accel.CHECKS + accel.PASSES]


def test_every_pass_is_the_accel_function_of_its_name():
    assert all(getattr(accel, run.__name__) is run for run in accel.CHECKS + accel.PASSES)
    assert len(set(pass_names())) == len(pass_names())


def test_compile_layer_runs_the_listed_passes_in_order(monkeypatch):
    plain = accel.compile_layer(LAYER, "tiny", vthreads=2, store=False).to_bytes()
    names, called = pass_names(), []

    def recorded(run):
        def wrapper(state):
            called.append(run.__name__)
            return run(state)
        return wrapper

    monkeypatch.setattr(accel, "CHECKS", tuple(map(recorded, accel.CHECKS)))
    monkeypatch.setattr(accel, "PASSES", tuple(map(recorded, accel.PASSES)))
    bundle = accel.compile_layer(LAYER, "tiny", vthreads=2, store=False)
    assert called == names
    assert bundle.to_bytes() == plain


def test_docs_list_the_passes_in_order():
    text = DOC.read_text()
    section = text[text.index("## Pipeline"):text.index("## Tiling")]
    assert re.findall(r"^\d+\. `(\w+)`", section, flags=re.M) == pass_names()
