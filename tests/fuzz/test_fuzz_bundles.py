"""Fuzzing bundles: random instructions spliced into valid programs, mutated bundle keys and
corrupted bundle files. The loader, the reference semantics and the simulator each end in a
clean error or a result, and where both models finish they leave the same image."""

import io
import zipfile

import numpy as np
from hypothesis import event, given, strategies as st

from tests.fuzz.harness import FUZZ, outcome
from tests.hw.strategies import insns
from vdla_hw import isa
from vdla_hw.bundle import Bundle
from vdla_hw.config import load_config
from vdla_hw.semantics import execute
from vdla_sim import simulate
from vdla_sim.progen import random_program

TINY = load_config("tiny")
MAX_CYCLES = 100_000


def run_both(bundle: Bundle) -> None:
    """Reference semantics and simulator: clean errors or the same final image."""
    ref = outcome(execute, bundle, max_cycles=MAX_CYCLES)
    sim = outcome(simulate, bundle, max_cycles=MAX_CYCLES)
    event(f"reference {ref[0]}, simulator {sim[0]}")
    if ref[0] == "ok" and sim[0] == "ok":
        assert np.array_equal(ref[1].dram, sim[1].dram), "simulator and reference semantics disagree"


@FUZZ
@given(seed=st.integers(0, 30), at=st.integers(0, 200), extra=st.lists(insns(TINY, canonical=False), min_size=1,
                                                                       max_size=4))
def test_random_instructions_in_a_valid_program(seed, at, extra):
    base = random_program(seed, "tiny")
    stream = base.insns()
    at = min(at, len(stream) - 1)
    program = stream[:at] + extra + stream[at:]
    words = np.frombuffer(isa.encode_program(program, TINY), dtype=np.uint8)
    dram = np.concatenate([base.dram[:base.insn_offset], words])
    bundle = Bundle(dram=dram, insn_offset=base.insn_offset, insn_count=len(program), config=TINY,
                    symbols=base.symbols, meta=base.meta)
    run_both(bundle)


@FUZZ
@given(seed=st.integers(0, 30), flips=st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)),
                                               min_size=1, max_size=12))
def test_flipped_bytes_in_the_instruction_stream(seed, flips):
    """Raw bytes: unknown opcodes and memory types, fields at the ends of their widths."""
    base = random_program(seed, "tiny")
    dram = base.dram.copy()
    span = base.insn_count * TINY.insn_bytes
    for pos, value in flips:
        dram[base.insn_offset + pos % span] = value
    result = outcome(Bundle, dram=dram, insn_offset=base.insn_offset, insn_count=base.insn_count, config=TINY,
                     symbols=base.symbols, meta=base.meta)
    if result[0] == "ok":
        run_both(result[1])


WEIRD = st.one_of(
    st.integers(-(1 << 70), 1 << 70).map(np.array),
    st.text(max_size=30).map(np.array),
    st.lists(st.integers(-5, 300), max_size=40).map(lambda v: np.array(v, dtype=np.int64)),
    st.lists(st.integers(0, 255), max_size=40).map(lambda v: np.array(v, dtype=np.uint8)),
    st.just(np.zeros((2, 3), dtype=np.uint8)),
    st.just(np.array(1.5)),
    st.sampled_from(['{"preset": "tiny"}', "tiny", "/etc/hostname", '{"preset": "tiny", "LOG_BLOCK": 9}', "[]",
                     '{"a": {"mem": "inp", "index": -1, "count": 2, "shape": [2, 1, 4]}}', '{"x": 1}',
                     '{"a": {"mem": "zz", "index": 0, "count": 1, "shape": [1]}}', "{", "null"]).map(np.array),
)


@FUZZ
@given(seed=st.integers(0, 10), changes=st.dictionaries(
    st.sampled_from(["format", "version", "dram", "insn_offset", "insn_count", "config", "fingerprint", "symbols",
                     "meta", "extra"]), st.one_of(st.none(), WEIRD), min_size=1, max_size=3))
def test_mutated_bundle_keys(tmp_path_factory, seed, changes):
    """A key deleted (None) or replaced by an array of another type, shape or content."""
    base = random_program(seed, "tiny")
    with np.load(io.BytesIO(base.to_bytes())) as npz:
        fields = {k: npz[k] for k in npz.files}
    for key, value in changes.items():
        if value is None:
            fields.pop(key, None)
        else:
            fields[key] = value
    path = tmp_path_factory.mktemp("b") / "b.npz"
    np.savez(path, **fields)
    result = outcome(Bundle.load, path)
    if result[0] == "ok":
        run_both(result[1])


@FUZZ
@given(seed=st.integers(0, 10), cut=st.integers(0, 1 << 16), noise=st.binary(max_size=64),
       where=st.integers(0, 1 << 16))
def test_corrupted_bundle_files(tmp_path_factory, seed, cut, noise, where):
    """Truncated, overwritten and foreign files given as bundles; and a zip that claims a huge
    member is refused from its directory, before decompressing."""
    raw = bytearray(random_program(seed, "tiny").to_bytes())
    pos = where % len(raw)
    raw[pos:pos + len(noise)] = noise
    path = tmp_path_factory.mktemp("c") / "c.npz"
    path.write_bytes(bytes(raw[: max(1, len(raw) - cut % len(raw))]))
    result = outcome(Bundle.load, path)
    if result[0] == "ok":
        run_both(result[1])


def test_a_zip_bomb_is_refused_before_decompressing(tmp_path):
    base = random_program(0, "tiny")
    with np.load(io.BytesIO(base.to_bytes())) as npz:
        fields = {k: npz[k] for k in npz.files}
    fields["dram"] = np.zeros(200 << 20, dtype=np.uint8)  # 200 MiB of zeros: a 200 kB file
    path = tmp_path / "bomb.npz"
    np.savez_compressed(path, **fields)
    kind, message = outcome(Bundle.load, path, memory=16 << 20)
    assert kind == "error" and "more than the 128 MiB limit" in message
    with zipfile.ZipFile(path) as archive:
        assert path.stat().st_size < 1 << 20 < archive.getinfo("dram.npy").file_size


def test_an_array_header_that_lies_about_its_size_is_refused(tmp_path):
    """numpy allocates what a .npy header announces before it reads: 2**40 bytes here, in a
    bundle file of a few kilobytes."""
    fields = dict(np.load(io.BytesIO(random_program(0, "tiny").to_bytes())))
    path = tmp_path / "liar.npz"
    with zipfile.ZipFile(path, "w") as archive:
        for key, value in fields.items():
            member = io.BytesIO()
            if key == "dram":
                np.lib.format.write_array_header_1_0(member, {"descr": "|u1", "fortran_order": False,
                                                              "shape": (1 << 40,)})
                member.write(value.tobytes())
            else:
                np.save(member, value)
            archive.writestr(f"{key}.npy", member.getvalue())
    kind, message = outcome(Bundle.load, path, memory=16 << 20)
    assert kind == "error" and "dram.npy: its header announces 1099511627776 bytes of data" in message, message
