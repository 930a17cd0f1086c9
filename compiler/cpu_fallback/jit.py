"""Host execution: kernels compiled in-process with llvmlite's MCJIT, cached by spec and on disk.

``HostJit`` owns one MCJIT engine for the host CPU (its name and features, so AVX2/AVX-512 get
used) and a cache ``spec -> CompiledKernel``; a spec is its shape and parameters, so the cache
is "by shape". Nothing happens at import time: LLVM's native target is initialised by the
first ``HostJit``. ``host_jit()`` returns a process-wide instance, created on first use.

Machine code on disk: the relocatable object MCJIT makes of a kernel's module is kept in
:mod:`vdla_hw.cache` (kind ``cpu-kernel``), keyed by :func:`object_key_parts`: the kernel's IR
text before optimisation, the llvmlite and LLVM versions, the target triple, CPU name and
features, and the sources of this module and of ``codegen`` (the optimisation pipeline and its
level). A later process loads that object into its engine (``add_object_file``) instead of
optimising and generating code again, so the code it runs is the same bytes a fresh compile
makes. A damaged entry fails the cache's seal and is compiled again. ``cache=False`` compiles
every kernel (``optimised_ir``/``assembly`` always do).
"""

import hashlib
import threading
import time
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm

from vdla_hw.cache import cached as disk_cached

from .call import CompiledKernel
from .codegen import build_ir, optimise

CACHE_KIND = "cpu-kernel"
OPT_LEVEL = 3      # the target machine's code generation level (the pipeline's is codegen's)
_sources = None


def host_target_machine():
    """TargetMachine for this machine's CPU, suitable for MCJIT."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
        opt=OPT_LEVEL, jit=True)


def code_digest() -> str:
    """sha256 of this module and ``codegen`` (how IR becomes an object): the disk cache's
    narrow code key, so an unrelated edit of the project keeps the compiled kernels."""
    global _sources
    if _sources is None:
        here = Path(__file__).resolve().parent
        digest = hashlib.sha256(b"compiler.cpu_fallback host objects 1\0")
        for name in ("jit.py", "codegen.py"):
            digest.update(name.encode() + b"\0" + (here / name).read_bytes() + b"\0")
        _sources = digest.hexdigest()
    return _sources


def object_key_parts(ir_text: str, machine) -> tuple:
    """Everything besides :func:`code_digest` that decides the object code of ``ir_text``."""
    return (ir_text, llvmlite.__version__, list(llvm.llvm_version_info), machine.triple,
            llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten(), OPT_LEVEL)


class HostJit:
    """Compile kernel specs for the host and cache the results by spec (thread-safe) and, with
    ``cache`` (default), their object code on disk."""

    def __init__(self, *, cache: bool = True):
        self._lock = threading.Lock()
        self._cache = {}
        self._disk = cache
        self._machine = host_target_machine()
        self._engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), self._machine)
        self._engine.finalize_object()  # the empty first module, before any object is watched
        self._compiled = []  # object bytes MCJIT hands to the cache while finalising
        self._engine.set_object_cache(notify_func=lambda module, data: self._compiled.append(bytes(data)))
        self._objects = []   # the ObjectFileRefs loaded from the disk cache (owned by the engine)

    @property
    def target_machine(self):
        return self._machine

    def __len__(self):
        return len(self._cache)

    def __contains__(self, spec):
        return spec in self._cache

    def _compile(self, ir_text: str) -> bytes:
        """Optimise ``ir_text``, let MCJIT generate and load its code; the object's bytes."""
        self._compiled.clear()
        self._engine.add_module(optimise(ir_text, self._machine))
        self._engine.finalize_object()
        if len(self._compiled) != 1:
            raise RuntimeError(f"host JIT: expected one object from MCJIT, got {len(self._compiled)}")
        return self._compiled.pop()

    def kernel(self, spec):
        """The compiled kernel for ``spec``, compiling it (or loading its code) on first request."""
        with self._lock:
            cached = self._cache.get(spec)
            if cached is not None:
                return cached
            start = time.perf_counter()
            ir_text = build_ir([spec])
            if self._disk:
                compiled = []
                data = disk_cached(CACHE_KIND, object_key_parts(ir_text, self._machine),
                                   lambda: compiled.append(self._compile(ir_text)) or compiled[0],
                                   code=code_digest())
                if not compiled:  # from the disk: load it (a fresh compile is loaded already)
                    obj = llvm.ObjectFileRef.from_data(data)
                    self._engine.add_object_file(obj)
                    self._objects.append(obj)
                    self._engine.finalize_object()
            else:
                self._compile(ir_text)
            address = self._engine.get_function_address(spec.symbol)
            if not address:
                raise RuntimeError(f"host JIT: symbol {spec.symbol} not found after loading its code")
            elapsed = time.perf_counter() - start
            compiled = CompiledKernel(spec, address, compile_seconds=elapsed, keepalive=self)
            self._cache[spec] = compiled
            return compiled

    def optimised_ir(self, spec):
        """Optimised host IR of ``spec`` as text (to inspect vectorisation)."""
        return str(optimise(build_ir([spec]), self._machine))

    def assembly(self, spec):
        """Host assembly of ``spec``."""
        return self._machine.emit_assembly(optimise(build_ir([spec]), self._machine))


_default = None
_default_lock = threading.Lock()


def host_jit():
    """The process-wide ``HostJit``, created on first call."""
    global _default
    with _default_lock:
        if _default is None:
            _default = HostJit()
        return _default
