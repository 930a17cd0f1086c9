"""SPACE.json parsing: grids, ranges, knobs, one-line errors naming the key; invalid points carry
the configuration's own message."""

import json

import pytest

from dse.space import Point, SpaceError, load_space, parse_space, point_config
from vdla_hw.errors import ConfigError


def test_grid_of_lists_ranges_and_knobs():
    space = parse_space({"base": {"preset": "vta-pynq", "MEM_LATENCY": 40},
                         "parameters": {"LOG_BLOCK": [3, 4], "LOG_ACC_BUFF_SIZE": {"low": 15, "high": 17},
                                        "CLOCK_MHZ": {"low": 100, "high": 200, "step": 50},
                                        "vthreads": ["search", 1]}})
    grid = space.grid()
    assert len(grid) == 2 * 3 * 3 * 2
    assert grid[0] == {"LOG_BLOCK": 3, "LOG_ACC_BUFF_SIZE": 15, "CLOCK_MHZ": 100.0, "vthreads": "search"}
    config = point_config(space.base, Point.of(grid[-1], "resnet18"))
    assert (config.LOG_BLOCK, config.CLOCK_MHZ, config.MEM_LATENCY, config.LOG_WGT_BUFF_SIZE) == (4, 200.0, 40, 18)
    assert Point.of(grid[-1], "resnet18").knob == {"vthreads": 1, "stem_on_vdla": False, "add_on_vdla": False,
                                                   "fc_on_vdla": False}


@pytest.mark.parametrize("data, words", [
    ({"parameters": {"LOG_BLUCK": [3]}}, ["parameters.LOG_BLUCK", "unknown parameter"]),
    ({"parameters": {"LOG_BLOCK": []}}, ["parameters.LOG_BLOCK", "empty"]),
    ({"parameters": {"LOG_BLOCK": [3.5]}}, ["parameters.LOG_BLOCK", "not an integer"]),
    ({"parameters": {"CLOCK_MHZ": {"low": 100, "high": 200}}}, ["parameters.CLOCK_MHZ", "step"]),
    ({"parameters": {"CLOCK_MHZ": {"low": 300, "high": 200, "step": 1}}}, ["low 300", "above high"]),
    ({"parameters": {"vthreads": [0]}}, ["parameters.vthreads", "not one of"]),
    ({"parameters": {"add_on_vdla": [1]}}, ["parameters.add_on_vdla"]),
    ({"parameters": {"LOG_BLOCK": [3]}, "base": "osdi19"}, ["base.preset", "unknown preset"]),
    ({"parameters": {"LOG_BLOCK": [3]}, "base": {"CLOCK_MHZ": 5000}}, ["base", "CLOCK_MHZ"]),
    ({"parameters": {"LOG_BLOCK": [3]}, "search": {"method": "random"}}, ["search.method"]),
    ({"parameters": {"LOG_BLOCK": [3]}, "search": {"method": "nsga2"}}, ["search.trials"]),
    ({"parameters": {"LOG_BLOCK": [3]}, "search": {"method": "nsga2", "trials": 5, "objectives": ["latency_s"]}},
     ["search.objectives"]),
    ({"parameters": {"LOG_BLOCK": [3]}, "colour": 1}, ["unknown keys", "colour"]),
    ({"parameters": {f"LOG_{k}_BUFF_SIZE": {"low": 1, "high": 24} for k in ("UOP", "INP", "WGT", "ACC")}},
     ["more than", "nsga2"]),
])
def test_bad_spaces_are_one_line_errors_naming_the_key(data, words):
    with pytest.raises(SpaceError) as err:
        parse_space(data, "space.json")
    message = str(err.value)
    assert "\n" not in message and message.startswith("space.json: ")
    assert all(w in message for w in words), message


def test_unreadable_files(tmp_path):
    with pytest.raises(SpaceError, match="cannot read"):
        load_space(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(SpaceError, match="not valid JSON"):
        load_space(bad)
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"parameters": {"LOG_BLOCK": [4]}}))
    assert load_space(good).models == ("resnet18",)


def test_an_invalid_combination_raises_the_configurations_own_error():
    space = parse_space({"parameters": {"LOG_BLOCK": [3], "LOG_ACC_BUFF_SIZE": [17]}})
    with pytest.raises(ConfigError, match="micro-op needs 33 bits"):
        point_config(space.base, Point.of(space.grid()[0], "resnet18"))


def test_the_grid_source_gives_one_point_per_cycle_configuration_first():
    """dse.runner.GridSource: the points that compile (one per configuration but the clock) come
    first, in grid order, then the clock variants that reuse their programs; every point once."""
    from dse.runner import GridSource, Model

    space = parse_space({"parameters": {"LOG_BLOCK": [3, 4], "LOG_ACC_BUFF_SIZE": [16, 17],
                                        "CLOCK_MHZ": [100, 150, 200]}})
    source = GridSource(space, [Model("m", None, "hash")])
    order = []
    while (item := source.next(set())) is not None:
        params = dict(item.point.params)
        order.append((params["LOG_BLOCK"], params["LOG_ACC_BUFF_SIZE"], params["CLOCK_MHZ"]))
    grid = [(b, a, c) for b in (3, 4) for a in (16, 17) for c in (100, 150, 200)]
    assert sorted(order) == sorted(grid) and source.total == 12
    assert order[:4] == [(3, 16, 100), (3, 17, 100), (4, 16, 100), (4, 17, 100)]
    assert order[4:] == [p for p in grid if p[2] != 100]


def test_knob_values_are_the_dimensions_or_the_default():
    from dse.space import knob_values

    space = parse_space({"parameters": {"LOG_BLOCK": [3], "fc_on_vdla": [False, True]}})
    assert knob_values(space, "fc_on_vdla") == {False, True}
    assert knob_values(space, "add_on_vdla") == {False}
