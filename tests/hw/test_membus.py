"""The bus model of the timing contract (vdla_hw.membus): bursts cover each row's beats exactly,
never cross 4 kB and never exceed MEM_MAX_BURST; the closed forms of read_cycles/write_cycles
equal the burst-by-burst recurrences on generated transactions and parameters."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vdla_hw import membus
from vdla_hw.config import load_config


def _config(**params):
    text = ", ".join(f'"{k}": {v}' for k, v in params.items())
    return load_config('{"preset": "tiny"' + (", " + text if text else "") + "}")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 20_000), min_size=1, max_size=6), st.integers(1, 9000),
       st.sampled_from([4, 8, 16]), st.sampled_from([1, 2, 16, 64]))
def test_bursts_cover_rows_without_crossing_4k(starts, nbytes, bpb, maxb):
    c = _config(MEM_BYTES_PER_BEAT=bpb, MEM_MAX_BURST=maxb)
    lengths = membus.burst_lengths(c, starts, nbytes)
    assert lengths.min() >= 1 and lengths.max() <= maxb
    k = 0
    for start in starts:  # walk the bursts of each row from its first beat
        beat, last = start // bpb, (start + nbytes - 1) // bpb
        while beat <= last:
            n = int(lengths[k])
            assert (beat * bpb) // 4096 == ((beat + n) * bpb - 1) // 4096, "burst crosses 4 kB"
            # a burst ends at the row end, a 4 kB boundary or after MEM_MAX_BURST beats
            assert beat + n - 1 == last or ((beat + n) * bpb) % 4096 == 0 or n == maxb
            beat += n
            k += 1
        assert beat == last + 1
    assert k == lengths.size


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 16), min_size=1, max_size=40), st.integers(1, 40), st.integers(0, 40),
       st.integers(1, 10), st.integers(1, 10), st.integers(0, 3), st.sampled_from([0.0, 3.5, 8.0]))
def test_closed_forms_equal_the_recurrences(lengths, lat, wlat, k_read, k_write, gap, cap):
    c = _config(MEM_LATENCY=lat, MEM_WRITE_LATENCY=wlat, MEM_READ_OUTSTANDING=k_read,
                MEM_WRITE_OUTSTANDING=k_write, MEM_BURST_GAP=gap, DDR_BYTES_PER_CYCLE_CAP=cap)
    a, f, e = membus.read_timeline(c, lengths)
    assert membus.read_cycles(c, lengths) == e[-1] + 1
    assert np.all(np.diff(a) >= 1) and np.all(f >= a + lat)
    a, s, w, b = membus.write_timeline(c, lengths)
    assert membus.write_cycles(c, lengths) == b[-1] + 1
    assert np.all(s >= a) and np.all(b == w + wlat)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 16), min_size=1, max_size=40), st.data(), st.integers(1, 40), st.integers(0, 40),
       st.integers(1, 10), st.integers(1, 10), st.integers(0, 3), st.sampled_from([0.0, 3.5, 8.0]))
def test_rows_one_at_a_time_equal_their_recurrence(lengths, data, lat, wlat, k_read, k_write, gap, cap):
    """MEM_ROW_SERIAL: the closed form (each row alone, one cycle saved per row) equals the
    burst-by-burst recurrence in which a row's first address waits for the previous completion."""
    cuts = sorted(data.draw(st.sets(st.integers(1, len(lengths) - 1), max_size=len(lengths) - 1))) \
        if len(lengths) > 1 else []
    row_bursts = np.diff([0, *cuts, len(lengths)])
    c = _config(MEM_LATENCY=lat, MEM_WRITE_LATENCY=wlat, MEM_READ_OUTSTANDING=k_read, MEM_ROW_SERIAL=1,
                MEM_WRITE_OUTSTANDING=k_write, MEM_BURST_GAP=gap, DDR_BYTES_PER_CYCLE_CAP=cap)
    a, f, e = membus.read_timeline(c, lengths, row_bursts)
    assert membus.read_cycles(c, lengths, row_bursts) == e[-1] + 1
    firsts = np.cumsum(row_bursts)[:-1]
    assert np.all(a[firsts] >= e[firsts - 1] + 1), "a row was addressed before the previous one completed"
    a, s, w, b = membus.write_timeline(c, lengths, row_bursts)
    assert membus.write_cycles(c, lengths, row_bursts) == b[-1] + 1
    assert np.all(a[firsts] >= b[firsts - 1] + 1)
    # streaming rows is never slower; with one row, or rows streamed, nothing changes
    streamed = _config(MEM_LATENCY=lat, MEM_WRITE_LATENCY=wlat, MEM_READ_OUTSTANDING=k_read,
                       MEM_WRITE_OUTSTANDING=k_write, MEM_BURST_GAP=gap, DDR_BYTES_PER_CYCLE_CAP=cap)
    assert membus.read_cycles(streamed, lengths, row_bursts) == membus.read_cycles(streamed, lengths)
    assert membus.read_cycles(streamed, lengths) <= membus.read_cycles(c, lengths, row_bursts)
    assert membus.read_cycles(c, lengths, [len(lengths)]) == membus.read_cycles(streamed, lengths)


def test_rows_one_at_a_time_pay_the_latency_per_row():
    # 8 rows of 2 full bursts at latency 32: streamed, the latency is paid once; one row at a
    # time, once per row (row r + 1 addressed the cycle after row r's last beat)
    c, serial = _config(MEM_LATENCY=32), _config(MEM_LATENCY=32, MEM_ROW_SERIAL=1)
    lengths, rows = membus.burst_plan(c, np.arange(8) * 1024, 16 * c.MEM_BYTES_PER_BEAT * 2)
    assert rows.tolist() == [2] * 8 and lengths.tolist() == [16] * 16
    assert membus.read_cycles(c, lengths, rows) == 1 + 32 + 16 * 16
    assert membus.read_cycles(serial, lengths, rows) == 8 * (1 + 32 + 32) - 7
    assert membus.rows_cost(serial, False, 0, 1024, 8, 16 * c.MEM_BYTES_PER_BEAT * 2) == (8 * 65 - 7, 256)


def test_full_rate_needs_latency_over_burst_plus_one():
    c = load_config("vta-pynq")
    assert membus.full_rate_outstanding(c) == 3 <= c.MEM_READ_OUTSTANDING
    lengths = [16] * 64
    assert membus.read_cycles(c, lengths) == 1 + c.MEM_LATENCY + 16 * 64
    one = _config(MEM_LATENCY=32, MEM_READ_OUTSTANDING=1)
    # one at a time: every burst waits for the previous last beat, then pays the latency
    assert membus.read_cycles(one, lengths) == 1 + 64 * (32 + 16)


def test_a_ddr_cap_of_a_beat_per_cycle_or_more_changes_no_cycle():
    # the presets' cap (PYNQ-Z1 DDR3 at 100 MHz) is above the 8-byte beat: it must not move a cycle
    lengths = [16, 16, 3, 16]
    free = _config()
    for cap in (8.0, 15.75, 100.0):
        capped = _config(DDR_BYTES_PER_CYCLE_CAP=cap)
        assert not membus.cap_binds(capped)
        assert membus.read_cycles(capped, lengths) == membus.read_cycles(free, lengths)
        assert membus.write_cycles(capped, lengths) == membus.write_cycles(free, lengths)
    slow = _config(DDR_BYTES_PER_CYCLE_CAP=4.0)
    assert membus.cap_binds(slow) and not membus.cap_binds(free)
    assert membus.read_cycles(slow, lengths) > membus.read_cycles(free, lengths)


def test_the_rtl_bench_runs_a_cap_that_does_not_bind_and_refuses_one_that_does():
    import pytest

    from driver.rtl_run import MemoryOptions
    from vdla_hw.errors import VdlaError
    assert MemoryOptions().resolve(load_config("osdi18"))["latency"] == load_config("osdi18").MEM_LATENCY
    with pytest.raises(VdlaError, match="DDR_BYTES_PER_CYCLE_CAP"):
        MemoryOptions().resolve(_config(DDR_BYTES_PER_CYCLE_CAP=4.0))
