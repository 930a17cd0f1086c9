"""The import direction of ARCHITECTURE.md, checked on the real import graph of the project.

Every ``.py`` file of the project packages is parsed (``ast``; nothing is imported); every
``import`` and ``from ... import`` counts, wherever it is: at module level, inside functions
(lazy imports), under ``if TYPE_CHECKING:``. Relative imports are resolved, and ``from a import b``
is an edge to the module ``a.b`` when there is one, else to ``a``. The graph's nodes are modules
(``pkg/__init__.py`` is ``pkg``); importing ``a.b`` also runs ``a/__init__.py``, which is not
drawn as an edge (a package's ``__init__`` importing its own submodules is not a cycle).
A module named in a string constant (``"driver.rtl_device:RtlDevice"`` in
``driver.device.BACKENDS``, the CLI's command table: what ``importlib.import_module`` loads) is a
*named* edge: checked for direction like an import, left out of the cycle check (a registry of
backends loaded on demand names the modules that import it back, on purpose).

Checked:

- **Direction**: ``vdla_hw`` (spec) <- ``vdla_sim``, ``compiler``, ``driver`` <- ``dse`` <-
  ``vdla`` <- ``experiments`` (:data:`LAYERS`): a module imports its own group or a lower
  layer; nothing imports ``experiments``. ``vdla_hw.rtl`` (RTL and its testbench) depends on the
  spec only, and ``bitstreams`` (FPGA recipes) sits beside the RTL. Within a layer, only the
  :data:`REFINEMENTS` (each one used by at least one import, so none is stale).
- **Lazy RTL**: the driver reaches ``vdla_hw.rtl`` only through its RTL backend modules
  (:data:`RTL_BACKEND`), which nothing else of the driver imports at module level: importing
  the driver (or its sim backend) never loads MyHDL or the RTL.
- **No cycles** between modules, counting the lazy imports too.
- **The spec** (:data:`SPEC`: every module of ``vdla_hw`` outside ``rtl``) imports only spec
  modules, the standard library and numpy, never MyHDL; its base modules (:data:`SPEC_BASE`:
  ``isa`` the leaf of the ISA, ``config`` above it, ``regmap``, ``timing`` ...) import at most
  what the table allows.

Every check is a function of the graph returning its problems, each naming the edge (file and
line) or the cycle, so the tests at the end can inject forbidden imports into a copy of the
graph and see each check fail.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parents[1]
PACKAGES = ("vdla_hw", "vdla_sim", "compiler", "driver", "dse", "vdla", "experiments", "bitstreams")

# Groups of modules by layer: a module may import its own group and every group of a lower layer.
LAYERS = (
    ("vdla_hw",),                                                    # the spec
    ("vdla_hw.rtl", "vdla_sim", "compiler", "driver", "bitstreams"),  # each built on the spec
    ("dse",),
    ("vdla",),
    ("experiments",),
)
# Imports between groups of one layer (ARCHITECTURE.md); each must still be in use.
REFINEMENTS = {
    ("driver", "vdla_sim"): "the sim backend runs the simulator",
    ("driver", "vdla_hw.rtl"): "the rtl backend, lazily (RTL_BACKEND)",
    ("bitstreams", "vdla_hw.rtl"): "a bitstream is built from the RTL's Verilog",
}
# The driver's RTL backend: the only driver modules that may reach vdla_hw.rtl, loaded on demand.
RTL_BACKEND = ("driver.rtl_device", "driver.rtl_run", "driver.rtl_compiled", "driver.rtl_bench",
               "driver.rtl_bench_device")

# The spec: what the accelerator is, in plain Python and numpy. Every module of vdla_hw outside
# rtl/ (a new one must be added here, deliberately).
SPEC = {
    "vdla_hw": "lazy re-exports of the names below",
    "vdla_hw.errors": "the project's error classes",
    "vdla_hw.limits": "documented bounds on memory and work",
    "vdla_hw.presets": "named configurations with their sources",
    "vdla_hw.files": "reading untrusted files",
    "vdla_hw.alu": "the ALU operations: one table (opcode, mnemonic, semantics, RTL select)",
    "vdla_hw.isa": "the instruction set: one field table per kind",
    "vdla_hw.config": "the configuration and every size derived from it",
    "vdla_hw.regmap": "the register map",
    "vdla_hw.membus": "the memory part of the timing contract",
    "vdla_hw.timing": "the timing contract",
    "vdla_hw.npyfile": "bounded .npy/.npz reading",
    "vdla_hw.bundle": "the program bundle and its builder",
    "vdla_hw.program": "program-level rules every model shares",
    "vdla_hw.work": "the work a program asks, counted before it runs",
    "vdla_hw.semantics": "the reference semantics",
    "vdla_hw.sram_state": "SRAM state between programs",
    "vdla_hw.asm": "the assembler",
    "vdla_hw.disasm": "the disassembler",
    "vdla_hw.annotate": "what an instruction does, in words (vdla disasm --annotate)",
    "vdla_hw.vta_format": "VTA's standalone case format",
    "vdla_hw.cache": "the content-keyed disk cache",
}
SPEC_THIRD_PARTY = {"numpy"}
# The base of the spec: module -> the spec modules it may import (nothing of program, bundle,
# semantics ...). config builds on isa (its constructor checks that every instruction layout
# fits its 128 bits), so isa is the leaf and reads a configuration through a Protocol.
SPEC_BASE = {
    "vdla_hw.errors": set(),
    "vdla_hw.limits": set(),
    "vdla_hw.presets": set(),
    "vdla_hw.files": {"vdla_hw.errors"},
    "vdla_hw.alu": set(),
    "vdla_hw.isa": {"vdla_hw.alu", "vdla_hw.errors"},
    "vdla_hw.config": {"vdla_hw.isa", "vdla_hw.errors", "vdla_hw.files", "vdla_hw.presets"},
    "vdla_hw.regmap": {"vdla_hw.isa"},
    "vdla_hw.membus": {"vdla_hw.config"},
}


@dataclass(frozen=True)
class Edge:
    source: str    # importing module
    target: str    # imported project module, or the top-level name of an outside package
    line: int
    lazy: bool     # inside a function or under ``if TYPE_CHECKING:``: not run when the module loads
    project: bool  # target is a project module
    named: bool = False  # a string naming the module (loaded by importlib), not an import statement

    def __str__(self):
        how = "names" if self.named else "lazily imports" if self.lazy else "imports"
        return f"{self.source} ({module_path(self.source)}:{self.line}) {how} {self.target}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def sources() -> dict[str, tuple[str, bool]]:
    """module -> (source text, is a package ``__init__``)."""
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            out[module_name(path)] = (path.read_text(), path.name == "__init__.py")
    return out


SOURCES = sources()


def module_path(name: str) -> str:
    if name not in SOURCES:
        return "?"
    return name.replace(".", "/") + ("/__init__.py" if SOURCES[name][1] else ".py")


NAMED = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)+(:[A-Za-z_]\w*)?")


def _resolve(name: str, modules) -> str | None:
    """The longest prefix of the dotted ``name`` that is a project module."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _lazy_lines(tree: ast.Module) -> set[int]:
    """Lines of the import statements inside functions or ``if TYPE_CHECKING:`` blocks."""
    lines = set()

    def visit(node, lazy: bool):
        for child in ast.iter_child_nodes(node):
            inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                visit(ast.Module(body=child.body, type_ignores=[]), True)
                visit(ast.Module(body=child.orelse, type_ignores=[]), lazy)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)) and inner:
                lines.add(child.lineno)
            visit(child, inner)

    visit(tree, False)
    return lines


def module_edges(name: str, text: str, is_package: bool, modules) -> list[Edge]:
    tree = ast.parse(text, filename=module_path(name))
    lazy = _lazy_lines(tree)
    package = name if is_package else name.rpartition(".")[0]
    edges = []

    def add(target: str, node):
        found = _resolve(target, modules)
        if found is not None and found != name:
            edges.append(Edge(name, found, node.lineno, node.lineno in lazy, True))
        elif found is None and target.split(".")[0] not in PACKAGES:
            edges.append(Edge(name, target.split(".")[0], node.lineno, node.lineno in lazy, False))

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module
            for alias in node.names:
                full = f"{origin}.{alias.name}"
                add(full if full in modules else origin, node)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and NAMED.fullmatch(node.value):
            found = _resolve(node.value.split(":")[0], modules)
            if found is not None and "." in found and found != name:  # "vdla.json" is a file, not vdla
                edges.append(Edge(name, found, node.lineno, True, True, True))
    return list(dict.fromkeys(edges))  # one edge per statement and target


def build_graph(texts: dict[str, tuple[str, bool]]) -> dict[str, list[Edge]]:
    return {name: module_edges(name, text, pkg, texts) for name, (text, pkg) in texts.items()}


GRAPH = build_graph(SOURCES)


def group(module: str) -> str:
    if module == "vdla_hw.rtl" or module.startswith("vdla_hw.rtl."):
        return "vdla_hw.rtl"
    return module.split(".")[0]


LAYER = {g: k for k, layer in enumerate(LAYERS) for g in layer}


def project_edges(graph):
    return [e for edges in graph.values() for e in edges if e.project]


def direction_problems(graph) -> list[str]:
    bad = []
    for e in project_edges(graph):
        src, dst = group(e.source), group(e.target)
        if src != dst and LAYER[dst] >= LAYER[src] and (src, dst) not in REFINEMENTS:
            bad.append(f"{e} ({src} may not import {dst})")
    return bad


def stale_refinements(graph) -> list[str]:
    used = {(group(e.source), group(e.target)) for e in project_edges(graph)}
    return [f"REFINEMENTS allows {src} -> {dst} ({why}) but no module imports it"
            for (src, dst), why in REFINEMENTS.items() if (src, dst) not in used]


def eager_closure(graph, start: str) -> dict[str, Edge | None]:
    """Modules loaded by importing ``start`` (module-level imports only) -> the edge that first reached it."""
    seen, todo = {start: None}, [start]
    while todo:
        for e in graph.get(todo.pop(), ()):
            if e.project and not e.lazy and e.target not in seen:
                seen[e.target] = e
                todo.append(e.target)
    return seen


def _path_to(reached: dict, module: str) -> str:
    chain = []
    while reached[module] is not None:
        chain.append(str(reached[module]))
        module = reached[module].source
    return "; ".join(reversed(chain))


def lazy_rtl_problems(graph) -> list[str]:
    bad = [f"{e} (only the RTL backend {', '.join(RTL_BACKEND)} may)" for e in project_edges(graph)
           if group(e.source) == "driver" and group(e.target) == "vdla_hw.rtl" and e.source not in RTL_BACKEND]
    for module in graph:
        if group(module) != "driver" or module in RTL_BACKEND:
            continue
        reached = eager_closure(graph, module)
        for target in reached:
            if group(target) == "vdla_hw.rtl" or target in RTL_BACKEND:
                bad.append(f"importing {module} loads {target}: {_path_to(reached, target)}")
    return bad


def cycles(graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    succ = {m: sorted({e.target for e in edges if e.project and not e.named}) for m, edges in graph.items()}
    index, low, stack, on_stack, found, counter = {}, {}, [], set(), [], 0
    for root in sorted(succ):
        if root in index:
            continue
        work = [(root, iter(succ[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(succ.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def shortest_cycle(graph, start: str, inside: set[str]) -> list[str]:
    """The shortest import chain from ``start`` back to itself within ``inside`` (breadth first)."""
    back, todo = {}, [start]
    while todo:
        module = todo.pop(0)
        for e in graph[module]:
            if e.project and not e.named and e.target in inside and e.target not in back:
                back[e.target] = module
                if e.target == start:
                    chain = [start]
                    while chain[-1] != start or len(chain) == 1:
                        chain.append(back[chain[-1]])
                    return chain[::-1]
                todo.append(e.target)
    return []


def cycle_problems(graph) -> list[str]:
    bad = []
    for component in cycles(graph):
        inside = set(component)
        edges = [str(e) for m in component for e in graph[m] if e.project and not e.named and e.target in inside]
        bad.append(f"import cycle {' -> '.join(shortest_cycle(graph, component[0], inside))} "
                   f"(the modules {', '.join(component)}; their edges:)\n    " + "\n    ".join(edges))
    return bad


def spec_problems(graph) -> list[str]:
    bad = []
    for module in graph:
        if group(module) == "vdla_hw" and module not in SPEC:
            bad.append(f"{module_path(module)} is a spec module not listed in SPEC (add it, with what it is)")
    for module in SPEC:
        for e in graph.get(module, ()):
            if e.project and e.target not in SPEC:
                bad.append(f"{e} (the spec imports only spec modules)")
            elif not e.project and e.target not in SPEC_THIRD_PARTY and e.target not in sys.stdlib_module_names:
                bad.append(f"{e} (the spec imports only the standard library and {', '.join(SPEC_THIRD_PARTY)})")
    for module, allowed in SPEC_BASE.items():
        for e in graph.get(module, ()):
            if e.project and e.target not in allowed:
                bad.append(f"{e} (a base spec module: {module} may import only {sorted(allowed) or 'nothing'})")
    return bad


# --- the tests ----------------------------------------------------------------------------------

def test_the_graph_is_the_project():
    assert len(GRAPH) > 150 and {"vdla_hw.isa", "driver.device", "vdla.cli", "dse.runner"} <= set(GRAPH)
    # function-level and relative imports are seen, and resolved to modules
    assert any(e.lazy and e.target == "driver.rtl_compiled" for e in GRAPH["driver.rtl_run"])
    assert not any(e.lazy for e in GRAPH["vdla_hw.config"] if e.target == "vdla_hw.isa")
    assert any(e.named and e.target == "driver.rtl_device" for e in GRAPH["driver.device"])  # BACKENDS


def test_packages_import_only_downstream():
    bad = direction_problems(GRAPH)
    assert not bad, "imports against ARCHITECTURE.md's direction:\n" + "\n".join(bad)


def test_refinements_are_in_use():
    bad = stale_refinements(GRAPH)
    assert not bad, "\n".join(bad)


def test_rtl_only_used_lazily_by_driver():
    bad = lazy_rtl_problems(GRAPH)
    assert not bad, "\n".join(bad)


def test_no_import_cycles():
    bad = cycle_problems(GRAPH)
    assert not bad, "\n".join(bad)


def test_spec_imports_only_the_spec_and_never_myhdl():
    bad = spec_problems(GRAPH)
    assert not bad, "\n".join(bad)


def injected(module: str, code: str) -> dict[str, list[Edge]]:
    """The graph with ``code`` appended to ``module``'s source (the files are not touched)."""
    text, is_package = SOURCES[module]
    graph = dict(GRAPH)
    graph[module] = module_edges(module, text + "\n" + code + "\n", is_package, SOURCES)
    return graph


INJECTIONS = [  # (module, code, the check that must fail, a word of its message)
    ("vdla_hw.isa", "import vdla", direction_problems, "vdla_hw may not import vdla"),
    ("vdla_hw.isa", "import vdla", spec_problems, "only spec modules"),
    ("vdla_sim.engine", "def later():\n    from dse import runner", direction_problems, "lazily imports dse.runner"),
    ("driver.session", "import experiments", direction_problems, "driver may not import experiments"),
    ("compiler.accel", "from driver import device", direction_problems, "compiler may not import driver"),
    ("driver.device", "BACKENDS['x'] = 'dse.runner:Model'", direction_problems, "names dse.runner"),
    ("vdla_hw.config", "from vdla_hw import bundle", spec_problems, "may import only"),
    ("vdla_hw.timing", "import myhdl", spec_problems, "imports myhdl"),
    ("driver.device", "from driver import rtl_device", lazy_rtl_problems, "loads driver.rtl_device"),
    ("driver.registers", "from vdla_hw.rtl import params", lazy_rtl_problems, "only the RTL backend"),
    ("vdla_hw.isa", "if TYPE_CHECKING:\n    from vdla_hw.config import Config", cycle_problems,
     "vdla_hw.config -> vdla_hw.isa -> vdla_hw.config"),
    ("compiler.quantize.scales", "def f():\n    from compiler.quantize import calibrate", cycle_problems,
     "scales -> compiler.quantize.calibrate"),
]


def test_each_check_fails_on_an_injected_import():
    for module, code, check, word in INJECTIONS:
        bad = check(injected(module, code))
        assert any(word in problem for problem in bad), (module, code, check.__name__, bad)
    assert not any(check(GRAPH) for _, _, check, _ in INJECTIONS)


def test_a_stale_refinement_is_reported():
    graph = {m: [e for e in edges if group(e.target) != "vdla_sim" or group(m) != "driver"]
             for m, edges in GRAPH.items()}
    assert stale_refinements(graph) == ["REFINEMENTS allows driver -> vdla_sim (the sim backend runs the "
                                        "simulator) but no module imports it"]
