"""A two-level cache simulator written in LLVM IR, linked into the profiled kernel.

``void @vdla.touch(i64 addr, i64 bytes, i1 store)`` records one access: every cache line in
``[addr, addr + bytes)`` is looked up in L1, and on a miss in L2. Both levels are
set-associative with least-recently-used replacement (a move-to-front list of tags per set),
allocate on loads and stores, and start empty. ``@vdla.stats`` counts line accesses, L1 misses,
L2 misses and the L2 misses of stores (lines a write-allocating core reads before writing).
Geometry (line, sets, ways) comes from the CPU data. Real L1 replacement is pseudo-random on the
Cortex-A9 (TRM 7.1); LRU is the usual stand-in.
"""

from __future__ import annotations

from llvmlite import ir

I1, I64 = ir.IntType(1), ir.IntType(64)
STATS = ("accesses", "l1_misses", "l2_misses", "l2_store_misses")


def _bump(b, stats, index):
    slot = b.gep(stats, [ir.Constant(I64, 0), ir.Constant(I64, index)], inbounds=True)
    b.store(b.add(b.load(slot), ir.Constant(I64, 1)), slot)


def _lookup(module, name, sets, ways):
    """``i1 @name(i64 tag)``: true on a hit; the tag becomes the set's most recent either way."""
    array = ir.ArrayType(I64, sets * ways)
    tags = ir.GlobalVariable(module, array, f"{name}.tags")
    tags.initializer = ir.Constant(array, None)
    tags.linkage = "internal"
    fn = ir.Function(module, ir.FunctionType(I1, [I64]), name)
    fn.linkage = "internal"
    tag = fn.args[0]
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    base = b.mul(b.and_(tag, ir.Constant(I64, sets - 1)), ir.Constant(I64, ways))
    found, position = ir.Constant(I1, 0), ir.Constant(I64, ways - 1)
    for way in range(ways):
        slot = b.gep(tags, [ir.Constant(I64, 0), b.add(base, ir.Constant(I64, way))], inbounds=True)
        hit = b.and_(b.icmp_unsigned("==", b.load(slot), tag), b.not_(found))
        position = b.select(hit, ir.Constant(I64, way), position)
        found = b.or_(found, hit)
    # Move-to-front: entries [0, position) shift down one way, the tag goes to way 0.
    head, body, done = (fn.append_basic_block(n) for n in ("shift.head", "shift.body", "shift.done"))
    entry = b.block
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64)
    i.add_incoming(position, entry)
    b.cbranch(b.icmp_unsigned(">", i, ir.Constant(I64, 0)), body, done)
    b.position_at_end(body)
    lower = b.gep(tags, [ir.Constant(I64, 0), b.add(base, b.sub(i, ir.Constant(I64, 1)))], inbounds=True)
    upper = b.gep(tags, [ir.Constant(I64, 0), b.add(base, i)], inbounds=True)
    b.store(b.load(lower), upper)
    i.add_incoming(b.sub(i, ir.Constant(I64, 1)), body)
    b.branch(head)
    b.position_at_end(done)
    b.store(tag, b.gep(tags, [ir.Constant(I64, 0), base], inbounds=True))
    b.ret(found)
    return fn


def simulator_ir(cpu) -> str:
    """IR text of ``@vdla.touch`` and ``@vdla.stats`` for ``cpu``'s L1 data cache and L2."""
    module = ir.Module(name="vdla_cachesim")
    line = cpu.line_bytes
    log_line = line.bit_length() - 1
    l1 = _lookup(module, "vdla.l1", cpu.l1d_bytes // (line * cpu.l1d_ways), cpu.l1d_ways)
    l2 = _lookup(module, "vdla.l2", cpu.l2_bytes // (line * cpu.l2_ways), cpu.l2_ways)
    stats = ir.GlobalVariable(module, ir.ArrayType(I64, len(STATS)), "vdla.stats")
    stats.initializer = ir.Constant(ir.ArrayType(I64, len(STATS)), None)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64, I64, I1]), "vdla.touch")
    addr, nbytes, store = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    first = b.lshr(addr, ir.Constant(I64, log_line))
    last = b.lshr(b.add(addr, b.sub(nbytes, ir.Constant(I64, 1))), ir.Constant(I64, log_line))
    entry = b.block
    head, body, miss1, miss2, store_miss, step, done = (
        fn.append_basic_block(n) for n in ("head", "body", "miss1", "miss2", "store_miss", "step", "done"))
    b.branch(head)
    b.position_at_end(head)
    current = b.phi(I64)
    current.add_incoming(first, entry)
    b.cbranch(b.icmp_unsigned("<=", current, last), body, done)
    b.position_at_end(body)
    _bump(b, stats, 0)
    tag = b.add(current, ir.Constant(I64, 1))  # 0 marks an empty way
    b.cbranch(b.call(l1, [tag]), step, miss1)
    b.position_at_end(miss1)
    _bump(b, stats, 1)
    b.cbranch(b.call(l2, [tag]), step, miss2)
    b.position_at_end(miss2)
    _bump(b, stats, 2)
    b.cbranch(store, store_miss, step)
    b.position_at_end(store_miss)
    _bump(b, stats, 3)
    b.branch(step)
    b.position_at_end(step)
    current.add_incoming(b.add(current, ir.Constant(I64, 1)), step)
    b.branch(head)
    b.position_at_end(done)
    b.ret_void()
    return str(module)
