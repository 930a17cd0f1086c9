"""experiments/study.py: the comparison rows, the options table and the parameter provenance."""

import pytest

from compiler.network import PartitionOptions
from experiments import study
from experiments.study import Option
from vdla_hw.config import load_config


def test_the_error_is_ours_over_the_papers_minus_one_and_the_band_decides_within():
    row = study.compare("bar", 1.1, 1.0, "s", 0.2)
    assert row["error"] == pytest.approx(0.1) and row["within"] == "yes"
    row = study.compare("bar", 0.7, 1.0, "s", 0.2)
    assert row["error"] == pytest.approx(-0.3) and row["within"] == "NO"
    assert study.misses([row]) == [row]


def test_a_bar_without_band_or_paper_value_is_never_judged():
    assert study.compare("bar", 2.0, 1.0, "s", None)["within"] == ""
    row = study.compare("bar", 2.0, None, "s", 0.2)
    assert row["error"] is None and row["within"] == ""


def test_options_this_build_lacks_are_named_not_applied():
    kwargs, rows = study.run_kwargs([Option("config", "tiny", "a"), Option("add_on_vdla", True, "b"),
                                     Option("no_such_option", 3, "c")])
    assert kwargs["config"] == "tiny"
    assert kwargs["options"] == PartitionOptions(add_on_vdla=True)
    assert "no_such_option" not in kwargs
    assert [r["applied"] for r in rows] == ["run_network", "PartitionOptions", "not in this build"]
    assert [r["source"] for r in rows] == ["a", "b", "c"]


def test_every_configuration_parameter_is_listed_with_its_source_and_figure_citations_flagged():
    config = load_config("osdi18")
    cpu = {"name": "cpu", "params": {"a": {"value": 1, "source": "a datasheet"},
                                     "b": {"value": 2, "source": "read off Fig. 21"}}}
    rows = study.parameters(config, cpu, None, r"fig\.?\s*21")
    listed = {r["parameter"] for r in rows if r["component"].startswith("configuration")}
    assert listed == set(config.params)
    flagged = {r["parameter"]: r["cites_compared_figure"] for r in rows if r["component"].startswith("CPU")}
    assert flagged == {"params.a": "", "params.b": "yes"}


def test_nested_groups_of_a_cpu_model_are_listed_each_with_its_own_source():
    cpu = {"name": "cpu", "baseline": {"name": "fp32", "source": "a schedule", "params": {
        "tile": {"value": [1, 2, 8], "source": "timed by the model"}}}}
    rows = {r["parameter"]: r for r in study.parameters(load_config("tiny"), cpu)}
    assert rows["baseline"]["value"] == {"name": "fp32"} and rows["baseline"]["source"] == "a schedule"
    assert rows["baseline.params.tile"]["value"] == [1, 2, 8]
    assert rows["baseline.params.tile"]["source"] == "timed by the model"


def test_the_verdict_names_the_bars_that_miss():
    rows = [study.compare("good", 1.0, 1.0, "s", 0.2), study.compare("bad", 2.0, 1.0, "s", 0.2)]
    text = study.verdict(rows, setting_ok=True)
    assert "1 of 2" in text and "bad" in text and "good" not in text
    assert "not a comparison" in study.verdict(rows, setting_ok=False)


def test_docs_name_every_option_of_every_study_with_its_value():
    from pathlib import Path

    from experiments import tvm_fig10, tvm_fig21, vta_fig8

    text = (Path(__file__).resolve().parents[2] / "docs" / "reproduction.md").read_text()
    for module in (tvm_fig21, tvm_fig10, vta_fig8):
        section = text.split(f"(`{module.NAME}`)\n", 1)[1].split("\n### ", 1)[0]  # its "### ..." section
        for option in module.OPTIONS:
            assert f"| `{option.name}` | `{option.value}` |" in section, (module.NAME, option)
