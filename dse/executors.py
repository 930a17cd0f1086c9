"""Where a sweep's tasks run: on Ray, or one at a time in the sweep's own process.

The sweep's loop (:func:`dse.runner._drive`, and :class:`dse.synth_runs.SynthRuns`) uses an
executor through six names, the same for both:

- ``capacity``: how many tasks may be in flight;
- ``put(value)``: a handle on an object every task of the sweep reads (a quantized model);
- ``task(fn)``: a function that submits ``fn(*args)`` and returns a handle on its result;
- ``wait(handles, timeout)``: some of ``handles`` that have finished (none after ``timeout``
  seconds), each returned once it is finished and until :meth:`get` took it;
- ``get(handle)``: the task's result, or the exception it raised;
- ``died(err)``: True when ``err`` (raised by ``get``) means that no task can run any more (the
  sweep stops, :class:`dse.runner.RayDiedError`), False when it lost only that task's point.

:class:`RayExecutor` is Ray (:func:`dse.runner.ray_session` starts or joins it): each task a Ray
task with one CPU and ``max_retries=0``, at most ``--workers`` in flight. :class:`LocalExecutor`
(``vdla sweep --executor local``) has no Ray at all: each task runs in the sweep's process, one
at a time in the order submitted, when the loop waits for it; a task that raises loses only its
point, as on Ray. It starts in no time, where Ray's start-up costs seconds of CPU, so it suits
small sweeps on one machine; there is no parallelism and no worker to lose.
"""

from __future__ import annotations

import contextlib

EXECUTORS = ("ray", "local")


class RayExecutor:
    def __init__(self, ray, workers: int | None, address: str | None):
        self.ray, self.address = ray, address
        self.capacity = workers or max(1, int(ray.cluster_resources().get("CPU", 1)))

    def put(self, value):
        return self.ray.put(value)

    def task(self, fn):
        return self.ray.remote(num_cpus=1, max_retries=0)(fn).remote

    def wait(self, handles: list, timeout: float) -> list:
        ready, _ = self.ray.wait(handles, num_returns=1, timeout=timeout)
        return ready

    def get(self, handle):
        return self.ray.get(handle)

    def died(self, err: Exception) -> bool:
        """The local raylet always; any node of the embedded Ray, which has one."""
        from ray.exceptions import LocalRayletDiedError, NodeDiedError

        return isinstance(err, LocalRayletDiedError) or (isinstance(err, NodeDiedError) and not self.address)


class _Call:
    """A task of :class:`LocalExecutor`: run when first waited for."""

    def __init__(self, fn, args: tuple):
        self.fn, self.args = fn, args
        self.done, self.value, self.error = False, None, None

    def run(self) -> None:
        try:
            self.value = self.fn(*self.args)
        except Exception as err:  # the task's failure, given back by get; a KeyboardInterrupt ends the sweep
            self.error = err
        self.done, self.fn, self.args = True, None, None


class LocalExecutor:
    capacity = 1

    def put(self, value):
        return value

    def task(self, fn):
        return lambda *args: _Call(fn, args)

    def wait(self, handles: list, timeout: float) -> list:
        """A finished handle, or the first of ``handles`` run now (``timeout`` does not apply:
        the task runs to its end)."""
        call = next((h for h in handles if h.done), handles[0])
        if not call.done:
            call.run()
        return [call]

    def get(self, handle: _Call):
        if handle.error is not None:
            raise handle.error
        return handle.value

    def died(self, err: Exception) -> bool:
        return False


@contextlib.contextmanager
def local_session():
    """The local executor for one sweep. The points run in this process, whose memo of layer
    timings (:mod:`dse.evaluate`) is emptied before and after, so that a sweep starts from its
    own ``DIR/cache``, reading (and repairing) its entries, as a new Ray instance's workers do."""
    from dse.evaluate import forget_memos

    forget_memos()
    try:
        yield LocalExecutor()
    finally:
        forget_memos()
