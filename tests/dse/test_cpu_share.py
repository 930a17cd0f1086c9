"""dse.cpu_share: a sweep's workers split the CPU-kernel analyses of their first points instead of
each making all of them; a kernel another live worker has claimed is waited for, not analysed
again; a claim whose process is gone does not hold anyone up."""

import os
import socket
import subprocess
import sys
import threading
import time

import compiler.cpu_fallback as cf
from compiler.cpu_fallback.cost import CpuModel
from compiler.cpu_fallback.cost import analysis
from dse import cpu_share


def fresh_model():
    analysis._memo.clear()
    return CpuModel("cortex-a9", workers=0)


def claim_path(folder, spec, model):
    return folder / f"{analysis.cache_key(spec, model.cpu)[:32]}.claim"


def test_unclaimed_kernels_are_analysed_here_and_cached(cache_folder, tmp_path):
    model = fresh_model()
    spec = cf.AddSpec(size=40, shift=1)
    kernels = model.analysed_specs(spec)
    assert not any(analysis.is_cached(k, model.cpu) for k in kernels)
    counts = cpu_share.analyse_shared([spec], model, tmp_path / "claims")
    assert counts == {"analysed": len(kernels), "waited": 0}
    assert all(analysis.is_cached(k, model.cpu) for k in kernels)
    assert not list((tmp_path / "claims").iterdir())  # claims are released
    assert cpu_share.analyse_shared([spec], model, tmp_path / "claims") == {"analysed": 0, "waited": 0}


def test_a_kernel_claimed_by_a_live_worker_is_waited_for(cache_folder, tmp_path):
    model = fresh_model()
    spec = cf.AddSpec(size=44, shift=2)
    (kernel,) = model.analysed_specs(spec)
    folder = tmp_path / "claims"
    folder.mkdir()
    path = claim_path(folder, kernel, model)
    path.write_text(f"{socket.gethostname()} {os.getpid()}")   # "another worker" (alive: this process)

    def other_worker():
        time.sleep(0.3)
        analysis.analyse(kernel, model.cpu)
        path.unlink()

    thread = threading.Thread(target=other_worker)
    thread.start()
    counts = cpu_share.analyse_shared([spec], model, folder)
    thread.join()
    assert counts == {"analysed": 0, "waited": 1}
    assert analysis.is_cached(kernel, model.cpu)


def test_a_claim_of_a_process_that_is_gone_holds_nobody_up(cache_folder, tmp_path):
    model = fresh_model()
    spec = cf.AddSpec(size=48, shift=3)
    (kernel,) = model.analysed_specs(spec)
    folder = tmp_path / "claims"
    folder.mkdir()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    claim_path(folder, kernel, model).write_text(f"{socket.gethostname()} {int(gone.stdout)}")
    start = time.monotonic()
    counts = cpu_share.analyse_shared([spec], model, folder)
    assert counts == {"analysed": 0, "waited": 1} and time.monotonic() - start < cpu_share.WAIT_S / 10
    assert not analysis.is_cached(kernel, model.cpu)  # left to the run, which analyses it as before


def test_no_claims_folder_does_nothing(cache_folder):
    model = fresh_model()
    spec = cf.AddSpec(size=52, shift=1)
    assert cpu_share.analyse_shared([spec], model, None) == {"analysed": 0, "waited": 0}
    assert not any(analysis.is_cached(k, model.cpu) for k in model.analysed_specs(spec))
