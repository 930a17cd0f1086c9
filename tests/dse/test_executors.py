"""The local executor's contract (dse.executors): what the sweep's loop relies on, without Ray.
The sweeps on it end to end are in test_sweep.py."""

import pytest

from dse import evaluate
from dse.executors import LocalExecutor, local_session


def test_tasks_run_once_each_in_the_order_submitted_when_waited_for():
    ran = []
    executor = LocalExecutor()
    task = executor.task(lambda n: ran.append(n) or n * 10)
    handles = [task(n) for n in range(3)]
    assert ran == [] and executor.put("model") == "model"
    got = []
    while handles:
        done, = executor.wait(handles, timeout=1.0)
        handles.remove(done)
        got.append(executor.get(done))
    assert ran == [0, 1, 2] and got == [0, 10, 20]


def test_a_finished_task_is_returned_before_another_runs():
    ran = []
    executor = LocalExecutor()
    task = executor.task(ran.append)
    first, second = task(1), task(2)
    assert executor.wait([first, second], timeout=1.0) == [first]
    assert executor.wait([second, first], timeout=1.0) == [first] and ran == [1]  # not taken yet: not run again


def test_a_task_that_raises_gives_its_error_back_and_ctrl_c_is_not_held():
    executor = LocalExecutor()

    def fails():
        raise RuntimeError("the point's bug")

    handle = executor.task(fails)()
    done, = executor.wait([handle], timeout=1.0)
    with pytest.raises(RuntimeError, match="the point's bug") as err:
        executor.get(done)
    assert not executor.died(err.value)

    def interrupted():
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        executor.wait([executor.task(interrupted)()], timeout=1.0)


def test_a_local_session_starts_and_ends_without_the_processs_layer_timings():
    evaluate._TIMINGS.put("layer", {"cycles": 1})
    evaluate._PRICED.add("run")
    with local_session() as executor:
        assert evaluate._TIMINGS.get("layer") is None and not evaluate._PRICED
        assert executor.capacity == 1
        evaluate._TIMINGS.put("layer", {"cycles": 2})
    assert evaluate._TIMINGS.get("layer") is None
