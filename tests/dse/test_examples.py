"""The example design spaces the README and docs/dse.md run (`vdla sweep examples/...`): valid
spaces of the sizes the docs state, every grid point a configuration or the configuration's own
one-line error (which the sweep reports for that point). (The sweep itself
is tested on small spaces in test_sweep.py; the full examples take minutes.)"""

from pathlib import Path

from dse.space import Point, load_space, point_config
from vdla_hw.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]


def test_the_grid_example_has_144_points():
    space = load_space(ROOT / "examples/sweep_resnet18.json")
    grid = space.grid()
    assert space.search.method == "grid" and len(grid) == 144 and space.models == ("resnet18",)
    valid = 0
    for values in grid:
        try:
            point_config(space.base, Point.of(values, "resnet18"))
            valid += 1
        except ConfigError as err:
            assert "\n" not in str(err)
    assert valid > len(grid) // 2


def test_the_nsga2_example_is_a_60_trial_search():
    space = load_space(ROOT / "examples/sweep_nsga2.json")
    assert space.search.method == "nsga2" and space.search.trials == 60


def test_the_encoder_example_sweeps_three_arrays_each_with_a_valid_point():
    """examples/sweep_encoder.json (experiments/transformer_study.py, docs/onnx.md): LOG_BLOCK 3, 4, 5
    x two weight, input and accumulator buffers; every array size has configurations that exist."""
    space = load_space(ROOT / "examples/sweep_encoder.json")
    grid = space.grid()
    assert space.search.method == "grid" and len(grid) == 24 and space.models == ("encoder_block.onnx",)
    valid = set()
    for values in grid:
        try:
            point_config(space.base, Point.of(values, "encoder_block.onnx"))
            valid.add(values["LOG_BLOCK"])
        except ConfigError as err:
            assert "\n" not in str(err)
    assert valid == {3, 4, 5}
