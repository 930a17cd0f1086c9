"""Host execution: kernels compiled in-process with llvmlite's MCJIT, cached by spec.

``HostJit`` owns one MCJIT engine for the host CPU (its name and features, so AVX2/AVX-512 get
used) and a cache ``spec -> CompiledKernel``; a spec is its shape and parameters, so the cache
is "by shape". Nothing happens at import time: LLVM's native target is initialised by the
first ``HostJit``. ``host_jit()`` returns a process-wide instance, created on first use.
"""

import threading
import time

import llvmlite.binding as llvm

from .call import CompiledKernel
from .codegen import build_ir, optimise


def host_target_machine():
    """TargetMachine for this machine's CPU, suitable for MCJIT."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
        opt=3, jit=True)


class HostJit:
    """Compile kernel specs for the host and cache the results by spec (thread-safe)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._cache = {}
        self._machine = host_target_machine()
        self._engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), self._machine)

    @property
    def target_machine(self):
        return self._machine

    def __len__(self):
        return len(self._cache)

    def __contains__(self, spec):
        return spec in self._cache

    def kernel(self, spec):
        """The compiled kernel for ``spec``, compiling it on first request."""
        with self._lock:
            cached = self._cache.get(spec)
            if cached is not None:
                return cached
            start = time.perf_counter()
            module = optimise(build_ir([spec]), self._machine)
            self._engine.add_module(module)
            self._engine.finalize_object()
            address = self._engine.get_function_address(spec.symbol)
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
