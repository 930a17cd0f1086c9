"""compiler.frontend.blas: numpy's OpenBLAS on one thread for a block, the count restored after."""

import threading

import numpy as np
import pytest

from compiler.frontend import blas, float_ref


def openblas() -> bool:
    return "openblas" in str(np.show_config(mode="dicts")["Build Dependencies"]["blas"]).lower()


def test_numpy_s_openblas_is_found():
    if not openblas():
        pytest.skip("numpy is not built with OpenBLAS here: one_thread does nothing, by design")
    assert blas.threads() is not None


def test_one_thread_inside_and_the_count_restored_after():
    before = blas.threads()
    if before is None:
        pytest.skip("no OpenBLAS to reach (one_thread is a no-op)")
    with blas.one_thread():
        assert blas.threads() == 1
        with blas.one_thread():  # nested: still one, and the inner block does not restore
            assert blas.threads() == 1
        assert blas.threads() == 1
    assert blas.threads() == before


def test_a_failing_block_restores_the_count():
    before = blas.threads()
    with pytest.raises(ZeroDivisionError), blas.one_thread():
        1 / 0
    assert blas.threads() == before


def test_the_float_model_runs_on_one_thread():
    if blas.threads() is None:
        pytest.skip("no OpenBLAS to reach (one_thread is a no-op)")
    seen = []
    real = float_ref._taps_product

    def spy(*args, **kwargs):
        seen.append(blas.threads())
        return real(*args, **kwargs)

    x = np.random.default_rng(0).standard_normal((1, 4, 8, 8)).astype(np.float32)
    w = np.random.default_rng(1).standard_normal((4, 4, 3, 3)).astype(np.float32)
    float_ref._taps_product = spy
    try:
        float_ref.conv2d(x, w, np.zeros(4, np.float32), 1, 1)
        float_ref.conv_taps(np.rint(x * 8), np.rint(w * 8), 1, 1)
    finally:
        float_ref._taps_product = real
    assert seen == [1, 1]


def test_threads_share_the_setting():
    if blas.threads() is None:
        pytest.skip("no OpenBLAS to reach (one_thread is a no-op)")
    before, inside = blas.threads(), []
    entered, leave = threading.Event(), threading.Event()

    def other():
        with blas.one_thread():
            entered.set()
            leave.wait(10)

    t = threading.Thread(target=other)
    t.start()
    entered.wait(10)
    with blas.one_thread():
        inside.append(blas.threads())
    inside.append(blas.threads())  # the other thread's block still runs: one thread
    leave.set()
    t.join(10)
    assert inside == [1, 1] and blas.threads() == before
