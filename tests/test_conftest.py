"""The slow tier's list (tests/conftest.py) names what exists: every module, and every test
function in it, so a renamed test cannot fall silently into the fast tier."""

from __future__ import annotations

import ast

from tests.conftest import ROOT, SLOW_MODULES, SLOW_TESTS


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
