"""The CPU-kernel analyses shipped with the project (vdla/cpu_costs.py): made under today's
sources, tools and CPU data, and covering every kernel the main job prices, so a first run on an
empty cache analyses none. When a test here fails, regenerate the file:
.venv/bin/python scripts/precompute_cpu_costs.py"""

import pytest

from compiler.cpu_fallback.cost import analysis, load_cpu
from vdla import cpu_costs
from vdla.network import DEFAULT_CPU


def test_the_shipped_analyses_are_not_stale():
    assert cpu_costs.stale(DEFAULT_CPU) is None


def test_every_shipped_entry_is_a_valid_analysis():
    cpu = load_cpu(DEFAULT_CPU)
    analysis._shipped.pop(cpu.name, None)
    table = analysis.shipped(cpu)
    assert len(table) > 30 and all(a.cpu == cpu.name and a.blocks for a in table.values())


@pytest.mark.slow
def test_the_main_job_analyses_nothing_on_an_empty_cache():
    """Every kernel `vdla run resnet18` (224x224, osdi18) prices is shipped."""
    cpu_model = cpu_costs.recording_model(DEFAULT_CPU)
    specs = cpu_costs.job_specs("resnet18", "osdi18", cpu_model)
    shipped = analysis.shipped(cpu_model.cpu)
    missing = [s.describe() for s in specs if analysis.cache_key(s, cpu_model.cpu) not in shipped]
    assert not missing, f"not shipped (run scripts/precompute_cpu_costs.py): {missing}"
