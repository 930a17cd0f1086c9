"""The table of the ``vdla`` subcommands that live in ``cmd_*`` modules: each module, the
top-level commands it adds and their one-line help. Standard library only, no project import:
:mod:`vdla.cli` lists every command from this table (``vdla --help``) and imports a module only
when one of its commands is chosen, so that ``vdla --help`` or ``vdla config show`` does not load
the compiler, the simulator and the driver.

A module's ``add_parser(sub)`` adds exactly its commands of this table, with :func:`add` (the
help text lives here only); a test checks that the table and the modules agree.
"""

from __future__ import annotations

# module -> {command: help}, in the order of `vdla --help`
EXTENSIONS: dict[str, dict[str, str]] = {
    "vdla.cmd_sim": {"sim": "run a bundle on the cycle-level simulator"},
    "vdla.cmd_compile": {"compile": "compile a quantized conv2d or dense layer into a bundle"},
    "vdla.cmd_run": {"run": "the offload study: import, quantize, partition and run a network",
                     "model": "write a built-in model (deterministic random weights) as ONNX"},
    "vdla.cmd_hw": {"hw": "the accelerator's RTL: Verilog and synthesis",
                    "rtl": "run a bundle on the RTL (cocotb, Icarus or Verilator)"},
    "vdla.cmd_deploy": {"serve": "run packaged networks for `vdla deploy` (on the board or anywhere)",
                        "deploy": "compile, package and run a network on a `vdla serve` board"},
    "vdla.cmd_board": {"board": "bring-up check of a device (the board after programming it): ID, registers, "
                                 "DMA, a known program's counters"},
    "vdla.cmd_sweep": {"sweep": "co-design sweep: configurations x models on Ray, Pareto fronts"},
    "vdla.cmd_vta": {"import-vta": "read a VTA standalone case directory (onera/standalone-vta) into a bundle",
                     "export-vta": "write a bundle as a VTA standalone case directory (or a flat image)"},
    "vdla.cmd_cache": {"cache": "the disk cache of built models, quantized graphs, schedules, analyses"},
}
# Commands whose process ends without the interpreter's teardown once they have returned
# (vdla.cli.main: atexit handlers run and stdout/stderr are flushed first, then os._exit): their
# outputs are whole files, written and closed before they return, and they start no thread that
# outlives them. Freeing a run's object graph module by module took 0.1-0.2 s of every run.
QUICK_EXIT: frozenset[str] = frozenset({"run", "compile", "sim"})

HELP: dict[str, str] = {name: text for commands in EXTENSIONS.values() for name, text in commands.items()}
MODULE_OF: dict[str, str] = {name: module for module, commands in EXTENSIONS.items() for name in commands}


def add(sub, name: str, **kwargs):
    """``sub.add_parser(name)`` with the table's help for ``name``: what a module's
    ``add_parser`` uses for each of its top-level commands."""
    return sub.add_parser(name, help=HELP[name], **kwargs)


def modules_for(argv: list[str]) -> tuple[str, ...]:
    """The modules that ``vdla ARGV`` needs: that of its command, the first word that is not an
    option (the top-level options, -h and --version, take no value); none for ``vdla --help``, a
    command of :mod:`vdla.cli` itself or an unknown word. (A line this misreads, such as
    ``vdla -- run``, reaches a stub: :mod:`vdla.cli` then parses it again with every module.)"""
    command = next((word for word in argv if not word.startswith("-")), None)
    module = MODULE_OF.get(command)
    return () if module is None else (module,)
