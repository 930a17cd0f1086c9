"""The import direction of ARCHITECTURE.md: vdla_hw (spec) <- vdla_sim, compiler, driver <- dse <-
vdla <- experiments; driver may use vdla_sim and vdla_hw.rtl; nothing imports experiments; the spec
modules of vdla_hw never import MyHDL.

Two refinements: the compiler may run the simulator (its schedule search and studies), and
``vdla_hw.rtl`` (RTL and its cocotb testbench, not the spec modules) may use ``vdla_sim``: the
testbench serves the RTL's memory port from the simulator's memory model instead of a second one."""

import ast
from pathlib import Path

ROOT = Path(__file__).parents[1]
PACKAGES = ("vdla_hw", "vdla_sim", "compiler", "driver", "dse", "vdla", "experiments", "bitstreams")
ALLOWED = {
    "vdla_hw": {"vdla_hw"},
    "vdla_sim": {"vdla_hw", "vdla_sim"},
    "compiler": {"vdla_hw", "compiler", "vdla_sim"},
    "driver": {"vdla_hw", "driver", "vdla_sim"},
    "bitstreams": {"vdla_hw", "bitstreams"},
    "dse": {"vdla_hw", "vdla_sim", "compiler", "driver", "dse"},
    "vdla": {"vdla_hw", "vdla_sim", "compiler", "driver", "dse", "vdla", "bitstreams"},
    "experiments": {"vdla_hw", "vdla_sim", "compiler", "driver", "dse", "vdla", "experiments"},
}


def imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def allowed(path: Path, package: str) -> set[str]:
    if path.is_relative_to(ROOT / "vdla_hw" / "rtl"):
        return {"vdla_hw", "vdla_sim"}
    return ALLOWED[package]


def test_packages_import_only_downstream():
    bad = []
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for name in imports_of(path):
                top = name.split(".")[0]
                if top in PACKAGES and top not in allowed(path, package):
                    bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not bad, "\n".join(bad)


def test_spec_modules_never_import_myhdl():
    for path in (ROOT / "vdla_hw").glob("*.py"):
        assert not any(n.split(".")[0] == "myhdl" for n in imports_of(path)), path


def test_rtl_only_used_lazily_by_driver():
    for package in ("vdla_sim", "compiler"):
        for path in (ROOT / package).rglob("*.py"):
            assert not any(n.startswith("vdla_hw.rtl") for n in imports_of(path)), path
