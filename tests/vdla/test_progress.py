"""vdla/progress.py: the long commands' heartbeat lines (stage now, then the stage with the time
elapsed, on their stream only), and the commands that use it."""

import io
import threading

from vdla.progress import Heartbeat, elapsed_text


class Lines(io.StringIO):
    """A stream that signals each line written."""

    def __init__(self):
        super().__init__()
        self.wrote = threading.Event()

    def write(self, text):
        n = super().write(text)
        if text.endswith("\n"):
            self.wrote.set()
        return n


def test_say_prints_at_once_and_the_beat_repeats_the_stage_with_the_time():
    stream = Lines()
    with Heartbeat("vdla hw synth", first=0.0, every=0.01, stream=stream) as beat:
        beat.say("synthesising osdi18")
        while "vdla hw synth: synthesising osdi18 (" not in stream.getvalue():
            stream.wrote.clear()
            assert stream.wrote.wait(30), stream.getvalue()
    lines = stream.getvalue().splitlines()
    assert "synthesising osdi18" in lines
    assert any(line.startswith("vdla hw synth: synthesising osdi18 (") and line.endswith(" s elapsed)")
               for line in lines), lines


def test_stage_is_silent_and_a_short_body_prints_nothing():
    stream = Lines()
    with Heartbeat("vdla sim", first=3600.0, stream=stream) as beat:
        beat.stage("simulating 12 instructions")
    assert stream.getvalue() == ""  # ended before the first beat; the thread is gone
    assert not any(t.name == "vdla sim progress" for t in threading.enumerate())


def test_elapsed_reads_in_minutes_past_one():
    assert elapsed_text(42.9) == "42 s"
    assert elapsed_text(75.2) == "1 min 15 s"
    assert elapsed_text(27 * 60) == "27 min 0 s"


def test_a_synthesis_reports_its_stage_through_the_heartbeat(monkeypatch, capsys):
    """`vdla hw synth` hands estimate_fmax the heartbeat's say: its line reaches stderr, not stdout."""
    from vdla import cli
    from vdla_hw.errors import VdlaError
    from vdla_hw.rtl import fmax

    def fake(config, top, *, keep=None, use_cache=True, progress=None):
        progress("synthesising tiny (vdla_top) with yosys synth_xilinx and timing it")
        raise VdlaError("stop here")

    monkeypatch.setattr(fmax, "estimate_fmax", fake)
    code = cli.main(["hw", "synth", "--config", "tiny", "--json"])
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("synthesising tiny (vdla_top)"), err
    assert code == 2
