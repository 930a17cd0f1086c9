"""The ``vdla`` command: a thin layer over the packages.

Each subcommand lives in a ``cmd_*`` function registered in :func:`build_parser` (or in a
module of :data:`vdla.commands.EXTENSIONS` through its ``add_parser(sub)``). The contract every command gets
from this module and :mod:`vdla.argtypes`, and that new commands keep by using them:

* **One line, exit status 2, for every user error.** A command raises
  ``vdla_hw.errors.VdlaError`` (or a subclass) with a message that names what and where;
  :func:`main` prints ``vdla: error: MESSAGE``. Usage errors (argparse) are one line too
  (``vdla.argtypes.ArgumentParser``), as are a file system error (``OSError``: disk full,
  permission) and running out of memory. Anything else is a bug: one line ``vdla: internal
  error``, exit status 1 (``VDLA_DEBUG=1`` shows the traceback).
* **Arguments are checked while parsing, before any work**: ranges with
  ``argtypes.int_range``/``float_range``/``port``/``seed`` (never a bare ``int``/``float``),
  files the command writes with ``type=argtypes.output_file`` and folders with
  ``type=argtypes.output_dir`` (a test walks every command and holds it to this).
* **A closed pipe ends quietly** (``vdla sim big.npz --json | head -1``): exit status 141
  (128 + SIGPIPE, as a killed ``cat`` gives), nothing on stderr.
* **Ctrl-C ends every command the same way**, from the first import on: ``vdla: interrupted``
  and exit status 130 (128 + SIGINT), no traceback (see :mod:`vdla.interrupts`).
* **Outputs are written where the user said, whole** (``--output F`` writes ``F``), through
  :class:`vdla.outputs.Outputs`: an interrupted or failed command leaves the old files.
* **A command of :data:`vdla.commands.QUICK_EXIT` ends its process without the interpreter's
  teardown** (``vdla run``, ``compile``, ``sim``): once it has returned, stdout and stderr are
  flushed, the atexit handlers run and ``os._exit`` ends the process, which saves freeing a
  run's object graphs one by one (0.1-0.2 s). Such a command writes its files whole before it
  returns and leaves no thread running (with one, the ordinary exit is taken).
* **numpy's BLAS runs on one thread in a ``vdla`` process** (:func:`_one_blas_thread`, before
  numpy loads) unless the user's environment names a thread count: OpenBLAS's idle threads
  spin, which doubled the CPU cost of a small ``vdla sim`` (0.21 against 0.11 CPU s) and gave
  nothing back (``compiler.frontend.blas``: the numpy models already run on one thread; work
  that can use the second core runs beside the main one).
* **``--json`` is strict JSON** (:func:`_print_json`: a NaN or an infinity is ``null``), and
  error messages have their control characters escaped (they may quote a file or the network).
  A command that refuses a model under ``--json`` (``run``, ``deploy``, ``sweep``: a
  ``compiler.frontend.ModelError``) also prints ``{"error": {...}}`` on stdout, with every
  unsupported node listed (:func:`_json_error`); the one line on stderr and status 2 stay.
* **An error line is capped**: at most :data:`ERROR_LIMIT` characters follow ``vdla: error: ``
  (a message may quote a node name or a file's text of any size); a longer message is cut and
  ends with ``... [N more characters cut]`` (:func:`_capped`).

Only the standard library is imported at module level: everything else loads inside
:func:`main`'s handlers, so an interrupt or an error while importing is reported like any other.
**Start-up imports only what the chosen command uses**: the other commands of
:data:`vdla.commands.EXTENSIONS` are listed from that table (name and help, stub parsers) and
their modules are not imported, so ``vdla --help`` and ``vdla config show`` stay well under
half a second (``python -X importtime -m vdla --help`` shows what loads; a test holds them to
importing no command module).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Iterable
import os
import signal
import sys
from pathlib import Path

from vdla import commands, interrupts
from vdla.argtypes import ArgumentParser, int_range, output_file, quiet_broken_pipe

EXIT_USER_ERROR = 2
EXIT_INTERNAL_ERROR = 1
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE
EXIT_INTERRUPTED = interrupts.EXIT_INTERRUPTED
ERROR_LIMIT = 4096  # characters of an error message on its line, the cut marker included
_CUT_MARKER_ROOM = 48  # " ... [N more characters cut]" for any N below 10**20


def _print_json(data) -> None:
    """``data`` as strict JSON on stdout (every ``--json`` of vdla/ goes through here)."""
    from vdla_hw.files import json_text

    print(json_text(data, indent=2))


def cmd_config_show(args) -> int:
    from vdla_hw.config import load_config
    from vdla_hw.files import printable

    config = load_config(args.config)
    info = config.describe()
    if args.json:
        _print_json(info)
        return 0
    # the name and the sources may come from the file (its name, its "name" key): escaped
    print(f"configuration {printable(info['name'])}  fingerprint {info['fingerprint']}  ISA v{info['isa_version']}")
    for key, value in info["params"].items():
        print(f"  {key:<24} {value!s:<10} {printable(info['sources'][key])}")
    print("derived:")
    for key, value in info["derived"].items():
        print(f"  {key:<24} {value}")
    return 0


def cmd_config_draw(args) -> int:
    from vdla.architecture import draw
    from vdla_hw.config import load_config

    config = load_config(args.config)
    draw(config, args.output)
    print(f"wrote {args.output}: the accelerator of {config.name} ({config.fingerprint})", file=sys.stderr)
    return 0


def cmd_regmap(args) -> int:
    from vdla_hw import regmap

    print(regmap.markdown())
    return 0


def _read_input(name: str, what: str, max_bytes: int) -> bytes:
    """The bytes of file ``name``, or of stdin for ``-`` (at most ``max_bytes``)."""
    from vdla_hw.errors import VdlaError
    from vdla_hw.files import read_capped

    if name != "-":
        return read_capped(Path(name), what, max_bytes)
    data = sys.stdin.buffer.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise VdlaError(f"<stdin>: the {what} is larger than the {max_bytes}-byte limit")
    return data


def cmd_asm(args) -> int:
    from vdla.outputs import write_file
    from vdla_hw.asm import assemble
    from vdla_hw.errors import VdlaError
    from vdla_hw.limits import MAX_DRAM_BYTES

    source = "<stdin>" if args.file == "-" else args.file
    try:  # a whole DRAM image as .bytes rows is 2.5 text bytes per image byte
        text = _read_input(args.file, "assembly file", 3 * MAX_DRAM_BYTES).decode()
    except UnicodeDecodeError as err:
        raise VdlaError(f"{source}: the assembly file is not UTF-8 text (byte {err.start})") from None
    bundle = assemble(text, config=args.config, source=source)
    write_file(args.output, bundle.save)
    print(f"wrote {args.output}: {bundle.insn_count} instructions, {bundle.dram.size}-byte image, "
          f"config {bundle.config.name} ({bundle.config.fingerprint})", file=sys.stderr)
    return 0


def cmd_disasm(args) -> int:
    from vdla_hw.disasm import disassemble
    from vdla_hw.bundle import Bundle
    from vdla_hw.limits import MAX_DRAM_BYTES

    if args.file == "-":
        data = _read_input("-", "bundle", 2 * MAX_DRAM_BYTES)  # an image that does not compress, and its keys
        bundle = Bundle.from_bytes(data, "<stdin>", config=args.config)
    else:
        bundle = Bundle.load(args.file, config=args.config)
    sys.stdout.write(disassemble(bundle, annotate=args.annotate))
    return 0


def cmd_dump(args) -> int:
    """Print (or write) the values of one symbol of a bundle: after ``vdla exec -o``/``vdla sim
    -o``, what a program left in DRAM."""
    import numpy as np

    from vdla.outputs import write_file
    from vdla_hw.bundle import Bundle

    bundle = Bundle.load(args.file, config=args.config)
    values = bundle.read(args.symbol)
    sym = bundle.symbols[args.symbol]
    if args.npy:
        write_file(args.npy, lambda f: np.save(f, values))
        print(f"wrote {args.npy}: {args.symbol}, {sym.mem} {values.dtype} {list(values.shape)}", file=sys.stderr)
    elif args.json:
        _print_json({"symbol": args.symbol, "mem": sym.mem, "index": sym.index, "count": sym.count,
                     "dtype": str(values.dtype), "shape": list(values.shape), "values": values.tolist()})
    else:
        print(f"{args.symbol}: {sym.mem} elements {sym.index}..{sym.index + sym.count - 1}, "
              f"{values.dtype} {'x'.join(map(str, values.shape)) or 'scalar'}")
        with np.printoptions(threshold=args.limit, linewidth=100):
            print(values)
    return 0


def cmd_exec(args) -> int:
    import numpy as np

    from vdla.cmd_sim import warn_uninit
    from vdla_hw.bundle import Bundle
    from vdla_hw.sram_state import execute

    bundle = Bundle.load(args.file, config=args.config)
    result, first = execute(bundle, uninit=args.uninit, max_cycles=args.max_cycles, max_uops=args.max_uops)
    if args.output:
        bundle.with_dram(result.dram).save(args.output)
    report = {"model": "reference semantics", "config": bundle.config.fingerprint,
              "instructions": bundle.insn_count, "counters": result.counters.as_dict(),
              "tokens_left": result.tokens_left,
              "dram_sha256": __import__("hashlib").sha256(np.ascontiguousarray(result.dram)).hexdigest()}
    warn_uninit(first)
    if args.uninit != "off":
        report["uninit"] = None if first is None else str(first)
    if args.json:
        _print_json(report)
    else:
        c = report["counters"]
        print(f"executed {bundle.insn_count} instructions ({bundle.config.name}, reference semantics)")
        print(f"  loaded bytes: {c['load_bytes']}  stored bytes: {c['store_bytes']}")
        print(f"  GEMM uops: {c['gemm_uops']}  ALU uops: {c['alu_uops']}")
        left = {q: n for q, n in result.tokens_left.items() if n}
        print(f"  tokens left at FINISH: {left or 'none'}")
        for name in bundle.symbols:
            if bundle.symbols[name].mem == "out":
                print(f"  {name} = {bundle.read(name, result.dram).reshape(-1)[:16].tolist()}"
                      f"{' ...' if bundle.symbols[name].count * bundle.config.batch * bundle.config.block_out > 16 else ''}")
        if args.output:
            print(f"  final image written to {args.output}")
    return 0


def version_text() -> str:
    """``vdla --version``: the installed package's version, the ISA and the board protocol's."""
    from importlib import metadata

    from driver.protocol import PROTOCOL_VERSION
    from vdla_hw.config import ISA_VERSION

    try:
        version = metadata.version("vdla")
    except metadata.PackageNotFoundError:
        version = "unknown (not installed; run from a source tree)"
    return f"vdla {version} (ISA v{ISA_VERSION}, board protocol v{PROTOCOL_VERSION})"


class _Version(argparse.Action):
    """``--version``: prints :func:`version_text` (computed only when asked) and exits 0."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_text())
        parser.exit(0)


def build_parser(modules: Iterable[str] | None = None) -> ArgumentParser:
    """The ``vdla`` parser. ``modules`` (of :data:`vdla.commands.EXTENSIONS`) add their real
    subcommands; every other command of the table is a stub with its help that parses nothing
    (:func:`_main` re-parses a line that reaches one). None: every module (tests, docs)."""
    from vdla_hw.limits import DEFAULT_MAX_CYCLES, REFERENCE_MAX_UOPS, REFERENCE_UOPS_PER_S

    parser = ArgumentParser(prog="vdla", description="VDLA co-design simulator")
    parser.add_argument("--version", action=_Version, help="print the version (package, ISA, board protocol) and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    config = sub.add_parser("config", help="show a configuration")
    config_sub = config.add_subparsers(dest="config_command", required=True, metavar="ACTION")
    show = config_sub.add_parser("show", help="parameters, their sources and derived sizes")
    show.add_argument("config", nargs="?", default=None, help="preset name or JSON file (default osdi18)")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.set_defaults(func=cmd_config_show)
    draw = config_sub.add_parser("draw", help="picture of the accelerator: modules, queues, SRAMs, memory port")
    draw.add_argument("config", nargs="?", default=None, help="preset name or JSON file (default osdi18)")
    draw.add_argument("-o", "--output", type=output_file, required=True, help="picture to write (.svg, .png or .pdf)")
    draw.set_defaults(func=cmd_config_draw)

    regmap = sub.add_parser("regmap", help="print the control register map (Markdown)")
    regmap.set_defaults(func=cmd_regmap)

    asm = sub.add_parser("asm", help="assemble a text program into a bundle")
    asm.add_argument("file", help="assembly file (- reads stdin)")
    asm.add_argument("-o", "--output", type=output_file, required=True, help="bundle file to write (.npz)")
    asm.add_argument("--config", default=None, help="preset or JSON file, unless the file has .config")
    asm.set_defaults(func=cmd_asm)

    disasm = sub.add_parser("disasm", help="print a bundle as assembly that vdla asm turns back into it")
    disasm.add_argument("file", help="bundle file (- reads stdin)")
    disasm.add_argument("--config", default=None, help="require this configuration")
    disasm.add_argument("--annotate", action="store_true",
                        help="say in each instruction's comment what it moves or computes and which tokens "
                        "it waits for and signals (the text still assembles to the same bundle)")
    disasm.set_defaults(func=cmd_disasm)

    dump = sub.add_parser("dump", help="print the values of a bundle's symbol (e.g. after exec -o or sim -o)")
    dump.add_argument("file", help="bundle file")
    dump.add_argument("symbol", help="the symbol's name (vdla disasm lists them)")
    dump.add_argument("--config", default=None, help="require this configuration")
    dump.add_argument("--json", action="store_true", help="machine-readable output, every value")
    dump.add_argument("--npy", type=output_file, help="write the values as a .npy file instead of printing them")
    dump.add_argument("--limit", type=int_range(1), default=1000,
                      help="print at most about this many values before eliding the middle (default 1000)")
    dump.set_defaults(func=cmd_dump)

    exe = sub.add_parser("exec", help="run a bundle on the reference semantics (no timing)")
    exe.add_argument("file")
    exe.add_argument("-o", "--output", type=output_file, help="write the final image as a bundle (.npz, key 'dram')")
    exe.add_argument("--config", default=None, help="require this configuration")
    exe.add_argument("--json", action="store_true", help="machine-readable output")
    exe.add_argument("--max-cycles", type=int_range(1), default=DEFAULT_MAX_CYCLES,
                     help="refuse a program whose serial work (every instruction's cost under the timing "
                     f"contract, added up) passes this (default {DEFAULT_MAX_CYCLES:,})")
    exe.add_argument("--max-uops", type=int_range(1), default=REFERENCE_MAX_UOPS,
                     help="refuse a program that needs more interpreter steps (micro-ops, plus one per instruction "
                     f"and per DRAM row moved) than this (default {REFERENCE_MAX_UOPS:,}: about "
                     f"{round(REFERENCE_MAX_UOPS / REFERENCE_UOPS_PER_S / 60)} min at {REFERENCE_UOPS_PER_S:,} per second)")
    exe.add_argument("--uninit", choices=("off", "warn", "error"), default="off",
                     help="report a read of SRAM that no instruction of this run wrote (as vdla sim --uninit): "
                     "'warn' prints the first on stderr, 'error' stops there with exit status 2 (default: off)")
    exe.set_defaults(func=cmd_exec)
    modules = tuple(commands.EXTENSIONS) if modules is None else tuple(modules)
    for module, names in commands.EXTENSIONS.items():
        if module in modules:
            importlib.import_module(module).add_parser(sub)
        else:
            for name in names:
                stub = commands.add(sub, name, add_help=False)
                stub.add_argument("_stub_words", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
                stub.set_defaults(func=None)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``vdla`` command line ``argv``; returns the exit status (see the module docstring).
    ``argv`` None: this process is the ``vdla`` command (``sys.argv``), so once the command has
    ended a further Ctrl-C is ignored (it would interrupt only the interpreter's exit)."""
    own_process = argv is None
    if own_process:
        _one_blas_thread(os.environ)
    try:
        with interrupts.watched():
            code = _main(argv)
            interrupts.check()  # an interrupt a finaliser swallowed still ends the command as one
    except KeyboardInterrupt:
        return interrupts.report(ignore_more=own_process)
    except Exception:  # a Ctrl-C that an import turned into an ImportError (numpy's C extension)
        if interrupts.signalled():
            return interrupts.report(ignore_more=own_process)
        raise
    if own_process:
        interrupts.ignore()
        if _ended in commands.QUICK_EXIT:
            _quick_exit(code)
    return code


# The variables a BLAS reads its thread count from (OpenBLAS: the first three, in that order; MKL, BLIS)
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                         "BLIS_NUM_THREADS")


def _one_blas_thread(environ) -> None:
    """Give numpy's BLAS one thread in this process and the processes it starts, unless
    ``environ`` already names a count (the user's choice stands). Effective only before numpy is
    imported (the BLAS reads it when it loads), which is why :func:`main` calls it first."""
    if not any(environ.get(name) for name in BLAS_THREAD_VARIABLES):
        environ["OPENBLAS_NUM_THREADS"] = environ["MKL_NUM_THREADS"] = environ["BLIS_NUM_THREADS"] = "1"


_ended: str | None = None  # the command word _main parsed (None: none parsed)


def _quick_exit(code: int) -> None:
    """End this process now with ``code``, without the interpreter's teardown (modules and their
    objects freed one by one, which a run's graphs make slow): stdout and stderr are flushed and
    the atexit handlers run (temporary folders, logging) first, as in an ordinary exit. Returns
    (the ordinary exit follows) when a non-daemon thread is alive (an exit would join it) or
    flushing stdout fails (a closed pipe: the ordinary exit reports it as it always did)."""
    import atexit
    import threading

    main_thread = threading.main_thread()
    if any(t is not main_thread and t.is_alive() and not t.daemon for t in threading.enumerate()):
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, OSError, ValueError):
        return
    atexit._run_exitfuncs()  # CPython: runs and clears them (what Py_Finalize would run)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, OSError, ValueError):
        pass
    os._exit(code)


def _main(argv: list[str] | None) -> int:
    from vdla_hw.errors import VdlaError

    global _ended
    words = sys.argv[1:] if argv is None else argv
    args = build_parser(commands.modules_for(words)).parse_args(words)
    if args.func is None:  # a stub: the command word was not where modules_for looked
        args = build_parser().parse_args(words)
    _ended = args.command
    try:
        code = args.func(args)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        quiet_broken_pipe()
        return EXIT_BROKEN_PIPE
    except VdlaError as err:
        _json_error(args, err)
        return _error(str(err), EXIT_USER_ERROR)
    except OSError as err:  # the file system said no (disk full, permission, ...)
        where = f"{err.filename}: " if err.filename else ""
        return _error(f"{where}{err.strerror or err}", EXIT_USER_ERROR)
    except MemoryError:
        return _error("out of memory (the inputs are too large for this machine)", EXIT_USER_ERROR)
    except Exception as err:  # noqa: BLE001 - a bug: one line, the traceback on request
        if interrupts.signalled():  # a Ctrl-C turned into another error on its way (an import)
            raise KeyboardInterrupt from None
        if os.environ.get("VDLA_DEBUG"):
            raise
        return _error(f"{type(err).__name__}: {_capped(str(err), ERROR_LIMIT - 200)} (a bug: please report it with the command line; "
                      "VDLA_DEBUG=1 shows the traceback)", EXIT_INTERNAL_ERROR, prefix="vdla: internal error: ")


def _json_error(args, err) -> None:
    """Under ``--json``, a model the command refuses (``ModelError``: every unsupported node, the
    missing file, ...) is also ``{"error": ...}`` on stdout (``ModelError.as_dict``)."""
    graph = sys.modules.get("compiler.frontend.graph")  # not loaded: the error cannot be a ModelError
    if getattr(args, "json", False) and graph is not None and isinstance(err, graph.ModelError):
        try:
            _print_json({"error": err.as_dict()})
            sys.stdout.flush()
        except (BrokenPipeError, OSError):
            pass


def _capped(message: str, limit: int = ERROR_LIMIT) -> str:
    """``message`` as one printable line (whitespace runs joined, control characters escaped) of
    at most ``limit`` characters: a longer one keeps its start and ends with
    ``... [N more characters cut]``, N counted in the escaped text."""
    from vdla_hw.files import printable

    text = printable(" ".join(message.split()))
    if len(text) <= limit:
        return text
    keep = max(0, limit - _CUT_MARKER_ROOM)
    return f"{text[:keep]} ... [{len(text) - keep} more characters cut]"


def _error(message: str, code: int, prefix: str = "vdla: error: ") -> int:
    """Print ``prefix + message`` as one line on stderr (whitespace runs joined, control
    characters escaped: a message may quote a file name or text from a file or the network),
    the message capped at :data:`ERROR_LIMIT` characters (:func:`_capped`)."""
    try:
        print(prefix + _capped(message), file=sys.stderr)
    except (BrokenPipeError, OSError):
        pass
    return code


if __name__ == "__main__":
    sys.exit(main())
