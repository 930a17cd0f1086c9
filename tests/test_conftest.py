"""The slow tier's list (tests/conftest.py) names what exists: every module, and every test
function in it, so a renamed test cannot fall silently into the fast tier."""

from __future__ import annotations

import ast

import pytest

from tests.conftest import REPORT, ROOT, SLOW_MODULES, SLOW_TESTS


def _test_functions(path: str) -> set[str]:
    tree = ast.parse((ROOT / path).read_text())
    return {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


def test_every_slow_module_exists():
    assert all((ROOT / path).is_file() for path in SLOW_MODULES), sorted(p for p in SLOW_MODULES if not (ROOT / p).is_file())


def test_every_slow_test_exists_in_its_module():
    missing = {path: names - _test_functions(path) for path, names in SLOW_TESTS.items()
               if not (ROOT / path).is_file() or names - _test_functions(path)}
    assert not missing, missing
    assert not set(SLOW_TESTS) & SLOW_MODULES, "a listed module's tests are all slow already"



@pytest.mark.slow
def test_the_longest_modules_go_to_the_workers_first():
    """Under --dist loadscope xdist handed out the modules with the most tests first, whatever
    the collection order: tests/conftest.py's FIRST had no effect and the osdi18 synthesis (a
    module of two tests) started 14 minutes into a CI run. With two workers and three modules,
    the one-test module FIRST[0] (filtered to its fast test) must run among the first tests,
    before the hundreds of two larger modules (a pytest session with two workers: slow; the two
    modules are among the suite's cheapest per test, so the session costs its start-up)."""
    import os
    import subprocess
    import sys

    from tests.conftest import FIRST

    env = {k: v for k, v in os.environ.items() if k != REPORT}   # not a session of the suite's record
    for seed in (1,):
        done = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-v", "-p", "no:cacheprovider",
                               f"--randomly-seed={seed}", "tests/hw/test_isa.py", "tests/hw/test_semantics.py", FIRST[0],
                               "-k", "parse_stat or test_isa or test_semantics"],
                              cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        ran = [line.split()[-1] for line in done.stdout.splitlines() if " PASSED " in line]
        first = [k for k, test in enumerate(ran) if test.startswith(FIRST[0])]
        assert len(ran) > 100 and first and first[0] < 10, (seed, first, ran[:12])
