"""Machine blocks read from LLVM's verbose assembly: IR block names, loop nests, successors and
loop entries, on hand-written ARM and AArch64 listings."""

from compiler.cpu_fallback.cost.blocks import loop_entries, parse_function

ARM = """\t.text
k:                                      @ @k
\t.fnstart
@ %bb.0:                                @ %b0
\tpush\t{r4, lr}
\tmov\tr2, #0
\tb\t.LBB0_2
.LBB0_1:                                @ %b3
                                        @   in Loop: Header=BB0_2 Depth=1
\tadd\tr2, r2, #1
\tcmp\tr2, #4
\tbeq\t.LBB0_4
.LBB0_2:                                @ %b1
                                        @ =>This Loop Header: Depth=1
                                        @     Child Loop BB0_3 Depth 2
\tmov\tr3, #0
.LBB0_3:                                @ %b2
                                        @   Parent Loop BB0_2 Depth=1
                                        @ =>  This Inner Loop Header: Depth=2
\tvld1.8\t{d16, d17}, [r0]!
\tadd\tr3, r3, #1
\tcmp\tr3, #8                         @ a comment
\tbne\t.LBB0_3
\tb\t.LBB0_1
.LCPI0_0:
\t.long\t42
.LBB0_4:                                @ %b4
\tpop\t{r4, pc}
.Lfunc_end0:
"""


def test_arm_listing_gives_blocks_loops_and_successors():
    blocks = parse_function(ARM, "k", "armv7a-unknown-linux-gnueabihf")
    assert [(b.number, b.ir_block) for b in blocks] == [(0, "b0"), (1, "b3"), (2, "b1"), (3, "b2"), (4, "b4")]
    by = {b.number: b for b in blocks}
    assert by[3].instructions == ["vld1.8\t{d16, d17}, [r0]!", "add\tr3, r3, #1", "cmp\tr3, #8", "bne\t.LBB0_3",
                                  "b\t.LBB0_1"]
    assert by[3].loops == [3, 2] and by[3].is_header and by[2].loops == [2] and by[1].loops == [2]
    assert by[0].successors == {2} and by[0].ends
    assert by[1].successors == {4, 2} and not by[1].ends  # conditional exit, falls through to the header
    assert by[2].successors == {3}  # falls through
    assert by[3].successors == {3, 1} and by[3].ends
    assert by[4].ends and by[4].successors == set()
    # Outer loop entered once, inner loop once per outer iteration.
    counts = {0: 1, 1: 4, 2: 4, 3: 32, 4: 1}
    assert loop_entries(blocks, counts) == {2: 1, 3: 4}


def test_aarch64_listing():
    listing = """k:                                      // @k
// %bb.0:                               // %b0
\tmov\tw8, wzr
.LBB0_1:                                // %b1
                                        // =>This Inner Loop Header: Depth=1
\tadd\tw8, w8, #1
\tcmp\tw8, #16
\tb.ne\t.LBB0_1
// %bb.2:                               // %b2
\tret
.Lfunc_end0:
"""
    blocks = parse_function(listing, "k", "aarch64-unknown-linux-gnu")
    assert [(b.number, b.ir_block, b.loops) for b in blocks] == [(0, "b0", []), (1, "b1", [1]), (2, "b2", [])]
    assert blocks[1].successors == {1, 2} and blocks[2].ends
    assert loop_entries(blocks, {0: 1, 1: 16, 2: 1}) == {1: 1}
