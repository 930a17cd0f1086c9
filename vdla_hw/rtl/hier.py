"""Hierarchical Verilog: one module per major block of the core, for per-block utilisation and
timing reports (``vdla hw verilog --hierarchical``; issue 30). The flat conversion
(:mod:`vdla_hw.rtl.convert`) is untouched; this one elaborates the same design and cuts it into
the parts of :data:`PARTS`.

MyHDL flattens what it converts and cannot take lists or dicts of interfaces as module ports, so
each part is converted on its own through a generated wrapper block whose arguments are the part's
leaf signals (named by their path in the part's first block, e.g. ``cmd_start``; a name taken by
another signal gets the block's name in front). A part's ports are the leaf signals it shares with
another part or with the top's ports; the rest stay inside it. The top module (the parts'
instances and the wires between them) is written here from the same signal lists: a wire takes
its name from the top function's locals (``ctl_load_cmd_start``), is driven by the one part whose
converted module declares it ``output``, and a wire no part drives is the constant of its initial
value (what MyHDL writes for an undriven signal in the flat module). Each block is re-made with
MyHDL's instance counts of the flat elaboration (:func:`calls_before`), so the signals inside a
part have the flat core's names (``fetch0_bcnt``).

The FPGA top ``vdla_axi_top`` is the hierarchical core (module ``vdla_top``, the same ports as the
flat core's) and its own AXI3 adapter ``vdla_axi3`` (the top's ``always_comb`` generators). Both
tops keep the flat module's ports, in order, with the same directions and widths
(tests/rtl/test_hier.py). Call :func:`hierarchical_verilog` in a process started with
``PYTHONHASHSEED=0`` (:func:`vdla_hw.rtl.convert.to_verilog` does), like the flat conversion.
"""

from __future__ import annotations

import importlib.util
import inspect
import re
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from myhdl import always_comb, block
from myhdl._always_comb import _AlwaysComb
from myhdl._block import _Block
from myhdl._Signal import _Signal

from vdla_hw.errors import VdlaError
from vdla_hw.rtl.params import RtlParams

MODULE_PREFIX = "vdla_"


def _parts():
    """Part name -> the core's blocks (``vdla_top``'s sub-blocks) it holds, in the top's order.
    Every block of ``vdla_top`` must be in exactly one part (checked when a design is cut)."""
    from vdla_hw.rtl import top
    from vdla_hw.rtl.compute import compute
    from vdla_hw.rtl.control import control
    from vdla_hw.rtl.core_queues import module_ctls, queues
    from vdla_hw.rtl.core_status import counter_incs, error_merge, retire_trace
    from vdla_hw.rtl.dma import dma_read
    from vdla_hw.rtl.fetch import fetch
    from vdla_hw.rtl.memport import memport
    from vdla_hw.rtl.prims import wire
    from vdla_hw.rtl.sram import srams
    from vdla_hw.rtl.store import store

    return {
        "control": (control, top._core_reset, top._axi_constants),   # AXI-lite registers, core reset, AXI IDs
        "queues": (queues, module_ctls),         # command queues, token FIFOs, dependency control
        "memport": (memport,),                   # the AXI master and its arbiter
        "srams": (srams,),
        "fetch": (fetch,),
        "load": (dma_read, wire),                # wire: load's start strobe (the top's only wire block)
        "compute": (compute,),
        "store": (store,),
        "status": (retire_trace, error_merge, counter_incs),   # retire trace, ERROR merge, counters
    }


GLUE = "axi3"     # the FPGA top's own generators (its AXI3 adapter)


@dataclass
class Module:
    """One module of the hierarchical Verilog: its name, its ports (port name, signal) in order,
    their directions (port name -> "input"/"output") and its text."""
    name: str
    ports: list = field(default_factory=list)
    directions: dict = field(default_factory=dict)
    text: str = ""


def leaves(obj, path: str, out: dict, seen: set) -> None:
    """Add every signal reachable from ``obj`` to ``out`` (id -> (path, signal)), first path wins:
    signals, lists, tuples, dicts and the RTL's interface objects (vdla_hw.rtl classes)."""
    if isinstance(obj, _Signal):
        out.setdefault(id(obj), (path, obj))
        return
    if id(obj) in seen or isinstance(obj, (RtlParams, _Block, str, bytes, int, float, bool)) or obj is None:
        return
    seen.add(id(obj))
    if isinstance(obj, (list, tuple)):
        for i, x in enumerate(obj):
            leaves(x, f"{path}_{i}", out, seen)
    elif isinstance(obj, dict):
        for k, x in obj.items():
            leaves(x, f"{path}_{k}", out, seen)
    elif type(obj).__module__.startswith("vdla_hw.rtl") and hasattr(obj, "__dict__"):
        for k, x in vars(obj).items():
            leaves(x, f"{path}_{k}", out, seen)


def block_leaves(blk: _Block) -> dict:
    """id -> (path, signal) of every signal in ``blk``'s arguments, named by parameter path."""
    out, seen = {}, set()
    names = list(inspect.signature(blk.func).parameters)
    for name, arg in zip(names, blk.args):
        leaves(arg, name, out, seen)
    for name, arg in blk.kwargs.items():
        leaves(arg, name, out, seen)
    return out


def port_signals(blk: _Block) -> list:
    """(name, signal) of ``blk``'s arguments that are signals, in parameter order: a top's ports."""
    values = dict(zip(inspect.signature(blk.func).parameters, blk.args))
    values.update(blk.kwargs)
    return [(n, v) for n, v in values.items() if isinstance(v, _Signal)]


def local_names(blk: _Block) -> dict:
    """id -> name of every signal reachable from the locals of ``blk``'s function (its parameters
    first: the ports keep their names), for the wires of the top written here."""
    frame_locals = blk.subs[-1].callinfo.symdict if blk.subs else {}   # the last call sees every local
    out, seen = {}, set()
    code = blk.func.__code__
    for name in code.co_varnames + code.co_cellvars:
        if name in frame_locals:
            leaves(frame_locals[name], name, out, seen)
    return {k: path for k, (path, _) in out.items()}


def _unique(name: str, sig, taken: dict) -> str:
    """``name`` for ``sig``, or ``name_1``, ``name_2``... if ``taken`` (name -> signal) gives it to another."""
    n, base = 0, name
    while name in taken and taken[name] is not sig:
        n += 1
        name = f"{base}_{n}"
    taken[name] = sig
    return name


_PORT = re.compile(r"^(input|output|inout)\s+(?:signed\s+)?(?:\[(\d+):0\]\s+)?(\w+);", re.M)


def _count_calls(blk: _Block, counts: dict) -> None:
    """Add ``blk`` and every block under it to ``counts`` (block function -> calls), in the order
    MyHDL elaborated them (a block is counted before the blocks it calls)."""
    counts[blk.func] = counts.get(blk.func, 0) + 1
    for sub in blk.subs:
        if isinstance(sub, _Block):
            _count_calls(sub, counts)


def calls_before(blocks: list) -> list[dict]:
    """For each of ``blocks`` (a top's sub-blocks, in order), the calls of every block function
    made before it in the flat elaboration: MyHDL names an instance by its function and that count
    (``dma_read1``: the second ``dma_read``), so a block re-made with these counts gets the flat
    module's names, nested blocks included."""
    out, counts = [], {}
    for blk in blocks:
        out.append(dict(counts))
        _count_calls(blk, counts)
    return out


def _prime(counts: dict) -> None:
    """Set MyHDL's per-function call counts to ``counts`` (0 for the others) and forget the names it
    handed out, so the next block is named as in the flat elaboration (see :func:`calls_before`)."""
    import myhdl._block
    import myhdl._simulator

    myhdl._block._name_set.clear()
    for deco in myhdl._simulator._blocks:
        if hasattr(deco, "func"):
            deco.calls = counts.get(deco.func, 0)


def _convert_wrapper(module: str, source: str, namespace: dict, args: list) -> str:
    """Convert the block ``module`` defined by ``source`` (a generated wrapper) with the globals
    ``namespace``, called with the signals ``args``; returns its Verilog without date/file lines."""
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = Path(tmp, f"{module}_wrapper.py")
        path.write_text(source)
        spec = importlib.util.spec_from_file_location(f"_vdla_hier_{module}", path)
        mod = importlib.util.module_from_spec(spec)
        mod.__dict__.update(namespace)
        spec.loader.exec_module(mod)
        for sig in args:
            sig._clear()
        inst = getattr(mod, module)(*args)
        inst.convert(hdl="Verilog", path=tmp, name=module, testbench=False, timescale="1ns/1ps")
        text = Path(tmp, module + ".v").read_text()
    return "\n".join(line for line in text.splitlines() if not line.startswith(("// Date:", "// File:")))


def _finish(mod: Module) -> Module:
    found = {name: d for d, _, name in _PORT.findall(mod.text)}
    missing = [name for name, _ in mod.ports if name not in found]
    if missing:
        raise VdlaError(f"hierarchical Verilog: module {mod.name} lost ports {missing[:5]} in conversion (a bug)")
    mod.directions = {name: found[name] for name, _ in mod.ports}
    return mod


def convert_blocks(module: str, blocks: list, nets: dict) -> Module:
    """The module ``module`` holding ``blocks`` [(decorator, elaborated _Block, calls before it)],
    re-made from their decorators and arguments inside a wrapper, each named as in the flat module
    (:func:`calls_before`); its ports are its leaf signals named in ``nets`` (id -> the top's name
    for it), in the order the blocks' arguments reach them."""
    ports, seen = [], set()
    for _, blk, _ in blocks:
        for key, (_, sig) in block_leaves(blk).items():
            if key in nets and key not in seen:
                seen.add(key)
                ports.append((nets[key], sig))
    namespace, body = {"block": block, "_prime": _prime}, []
    for i, (deco, blk, before) in enumerate(blocks):
        namespace[f"_deco{i}"], namespace[f"_before{i}"] = deco, before
        namespace[f"_args{i}"], namespace[f"_kwargs{i}"] = blk.args, blk.kwargs
        # the calls stay in the wrapper's own body: MyHDL takes a block's context from its caller's frame
        body += [f"    _prime(_before{i})\n", f"    b{i} = _deco{i}(*_args{i}, **_kwargs{i})\n"]
    source = (f"@block\ndef {module}({', '.join(name for name, _ in ports)}):\n" + "".join(body)
              + f"    return [{', '.join(f'b{i}' for i in range(len(blocks)))}]\n")
    text = _convert_wrapper(module, source, namespace, [sig for _, sig in ports])
    return _finish(Module(module, ports, text=text))


def convert_glue(module: str, gens: list, shared: set) -> Module:
    """The module ``module`` holding a top's own ``always_comb`` generators ``gens``, re-made from
    their functions inside a wrapper whose locals carry the names the functions use; ports: the
    signals whose id is in ``shared``, the others (its constants) stay inside."""
    for g in gens:
        if not isinstance(g, _AlwaysComb):
            raise VdlaError(f"hierarchical Verilog: generator {g.name} is not always_comb; only those are "
                            "supported in a top's own logic")
    ports, inner, namespace = [], {}, {"block": block, "always_comb": always_comb}
    for g in gens:
        code = g.funcobj.__code__
        for name in code.co_names + code.co_freevars:
            if name not in g.symdict:
                continue
            value = g.symdict[name]
            if isinstance(value, _Signal):
                if id(value) in shared:
                    if all(s is not value for _, s in ports):
                        ports.append((name, value))
                else:
                    inner[name] = value
            else:
                namespace[name] = value
    for i, g in enumerate(gens):
        namespace[f"_gen{i}"] = g.funcobj
    namespace["_inner"] = inner
    body = "".join(f"    {name} = _inner[{name!r}]\n" for name in inner)
    source = (f"@block\ndef {module}({', '.join(name for name, _ in ports)}):\n{body}"
              f"    return [{', '.join(f'always_comb(_gen{i})' for i in range(len(gens)))}]\n")
    text = _convert_wrapper(module, source, namespace, [sig for _, sig in ports])
    return _finish(Module(module, ports, text=text))


def _const(sig) -> str:
    width = len(sig)
    return f"{width}'d{int(sig._init) & ((1 << width) - 1)}"


def _range(width: int) -> str:
    return f"[{width - 1}:0] " if width > 1 else ""


def write_top(name: str, top: _Block, instances: list) -> Module:
    """The structural module ``name`` with the ports of ``top`` (its parameters' signals, in order)
    and ``instances`` [(instance name, Module)] connected by wires named from ``top``'s locals."""
    port_sigs = port_signals(top)
    port_ids = {id(s): n for n, s in port_sigs}
    net = _net_names(top, [(f"{inst}_{pname}", sig) for inst, mod in instances for pname, sig in mod.ports])
    wires, drivers = {}, {}
    for inst, mod in instances:
        for pname, sig in mod.ports:
            if id(sig) not in port_ids and id(sig) not in wires:
                wires[id(sig)] = (net[id(sig)], sig)
            if mod.directions[pname] == "output":
                if id(sig) in drivers:
                    raise VdlaError(f"hierarchical Verilog: {pname} of {inst} and {drivers[id(sig)]} both drive "
                                    "one signal (a bug)")
                drivers[id(sig)] = inst
    decls = [f"{'output' if id(s) in drivers else 'input'} {_range(len(s))}{n};" for n, s in port_sigs]
    lines = [f"module {name} (", "    " + ",\n    ".join(n for n, _ in port_sigs), ");", "", *decls, ""]
    lines += [f"wire {_range(len(s))}{n};" for n, s in wires.values()]
    lines += [f"assign {n} = {_const(s)};" for k, (n, s) in wires.items() if k not in drivers]
    for inst, mod in instances:
        conns = ",\n    ".join(f".{p}({net[id(s)]})" for p, s in mod.ports)
        lines += ["", f"{mod.name} {inst} (", f"    {conns}", ");"]
    lines += ["", "endmodule"]
    directions = {n: ("output" if id(s) in drivers else "input") for n, s in port_sigs}
    return Module(name, port_sigs, directions, "`timescale 1ns/1ps\n\n" + "\n".join(lines) + "\n")


def _match(blocks: list) -> dict:
    """Part name -> [(decorator, block, calls before it)] of the core's blocks in it; every block in
    exactly one part."""
    parts = _parts()
    by_func = {deco.func: (part, deco) for part, decos in parts.items() for deco in decos}
    out = {part: [] for part in parts}
    for blk, before in zip(blocks, calls_before(blocks)):
        part, deco = by_func.get(blk.func, (None, None))
        if part is None:
            raise VdlaError(f"hierarchical Verilog: vdla_top's block {blk.func.__name__} is in no part of "
                            "vdla_hw.rtl.hier (add it to one)")
        out[part].append((deco, blk, before))
    return {part: blks for part, blks in out.items() if blks}


def _ids(sigs) -> set:
    return {id(s) for s in sigs}


def _net_names(top: _Block, shared: list) -> dict:
    """id -> wire name of each signal in ``shared`` [(fallback name, signal)]: the top's port name,
    else its path among the top function's locals, else the fallback; unique."""
    taken = dict(port_signals(top))
    out = {id(v): n for n, v in taken.items()}
    local = local_names(top)
    for fallback, sig in shared:
        if id(sig) not in out:
            out[id(sig)] = _unique(local.get(id(sig), fallback), sig, taken)
    return out


def core_modules(core: _Block) -> list[Module]:
    """The part modules of the core block ``core`` (vdla_top) and, last, its structural top."""
    if any(not isinstance(s, _Block) for s in core.subs):
        raise VdlaError("hierarchical Verilog: vdla_top has logic outside its blocks (put it in a block)")
    parts = _match(core.subs)
    leaf = {part: {k: v for _, b, _ in blks for k, v in block_leaves(b).items()} for part, blks in parts.items()}
    top_ids = _ids(v for _, v in port_signals(core))
    shared = []
    for part in parts:
        others = set().union(*(ids.keys() for p, ids in leaf.items() if p != part))
        shared += [(f"{part}_{path}", sig) for k, (path, sig) in leaf[part].items() if k in others or k in top_ids]
    nets = _net_names(core, shared)
    mods = []
    for part, blks in parts.items():
        mine = {k: nets[k] for k in leaf[part] if k in nets}
        mods.append((part, convert_blocks(MODULE_PREFIX + part, blks, mine)))
    return [m for _, m in mods] + [write_top("vdla_top", core, mods)]


def hierarchical_verilog(inst: _Block, top: str) -> str:
    """The hierarchical Verilog text of the elaborated ``inst`` (module ``top``: ``vdla_top`` or
    ``vdla_axi_top``), every module one after the other, the top last."""
    if top == "vdla_top":
        mods = core_modules(inst)
    elif top == "vdla_axi_top":
        cores = [s for s in inst.subs if isinstance(s, _Block)]
        gens = [s for s in inst.subs if not isinstance(s, _Block)]
        if len(cores) != 1:
            raise VdlaError("hierarchical Verilog: vdla_axi_top must hold exactly one block, the core")
        mods = core_modules(cores[0])
        core_top = mods[-1]
        shared = _ids(v for _, v in port_signals(inst)) | _ids(s for _, s in core_top.ports)
        glue = convert_glue(MODULE_PREFIX + GLUE, gens, shared)
        mods += [glue, write_top(top, inst, [("core", core_top), (GLUE, glue)])]
    else:
        raise VdlaError(f"hierarchical Verilog is for vdla_top and vdla_axi_top, not {top}")
    # one file holds every module, so its name matches only the top's (Verilator's DECLFILENAME)
    return "/* verilator lint_off DECLFILENAME */\n" + "\n\n".join(m.text.strip("\n") for m in mods)
