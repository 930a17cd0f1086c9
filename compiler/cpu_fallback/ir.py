"""Small helpers for writing kernels as LLVM IR with ``llvmlite.ir``.

Conventions every kernel follows (they are what lets LLVM vectorise the loops):

- All index arithmetic is ``i32``; a kernel's spec checks that every buffer has fewer than
  2**31 elements, so increments carry ``nsw``. The same IR therefore serves the 64-bit host and
  the 32-bit Cortex-A9.
- Loops are counted ``for`` loops with an ``i32`` induction variable, unit step in the innermost
  loop over a contiguous (or constant-stride) axis, and bounds known at code-generation time
  whenever the shape allows, so the vectoriser sees a known trip count.
- Pointer arguments are ``noalias`` (callers pass distinct numpy buffers) and inputs are
  ``readonly``; scalar accumulators live in entry-block allocas that SROA turns into registers.
"""

from contextlib import contextmanager

from llvmlite import ir

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
F32 = ir.FloatType()
PTR = ir.PointerType()

# numpy dtype name -> LLVM element type, for buffers.
ELEMENT_TYPES = {"int8": I8, "int16": I16, "int32": I32, "float32": F32}


def const(value, ty=I32):
    """An LLVM constant of type ``ty`` (default i32)."""
    return ir.Constant(ty, value)


def as_value(value):
    """Python ints become i32 constants; LLVM values pass through."""
    return const(value) if isinstance(value, int) else value


def entry_alloca(builder, ty, name, count=None):
    """Allocate ``ty`` (or ``count`` of them) in the entry block so SROA can promote it."""
    fn = builder.function
    with builder.goto_block(fn.entry_basic_block):
        if fn.entry_basic_block.instructions:
            builder.position_before(fn.entry_basic_block.instructions[0])
        size = None if count is None else const(count)
        slot = builder.alloca(ty, size=size, name=name)
    return slot


LOOP_ID_MARKER = "vdla.loop.id"


def _no_unroll(builder):
    """Loop metadata asking LLVM not to unroll (``codegen.build_ir`` makes it a loop ID)."""
    module = builder.module
    count = getattr(module, "_vdla_loops", 0)
    module._vdla_loops = count + 1
    disable = module.add_metadata([ir.MetaDataString(module, "llvm.loop.unroll.disable")])
    return module.add_metadata([ir.MetaDataString(module, LOOP_ID_MARKER),
                                ir.MetaDataString(module, str(count)), disable])


@contextmanager
def loop(builder, start, stop, name, step=1, unroll=True):
    """Emit ``for i in range(start, stop, step)`` (i32, step > 0); yield ``i`` inside the body.

    ``start`` and ``stop`` are ints or i32 values. Code emitted inside the ``with`` block is the
    body; on exit the builder is positioned after the loop. ``unroll=False`` keeps LLVM from
    unrolling it (a body that is already a register block would spill if repeated).
    """
    start, stop = as_value(start), as_value(stop)
    pre = builder.block
    header = builder.append_basic_block(f"{name}.head")
    body = builder.append_basic_block(f"{name}.body")
    done = builder.append_basic_block(f"{name}.done")
    builder.branch(header)
    builder.position_at_end(header)
    index = builder.phi(I32, name=name)
    index.add_incoming(start, pre)
    builder.cbranch(builder.icmp_signed("<", index, stop), body, done)
    builder.position_at_end(body)
    yield index
    index.add_incoming(builder.add(index, const(step), flags=["nsw"]), builder.block)
    back = builder.branch(header)
    if not unroll:
        back.set_metadata("llvm.loop", _no_unroll(builder))
    builder.position_at_end(done)


@contextmanager
def when(builder, condition):
    """Emit ``if condition:``; the ``with`` body is the then-branch."""
    with builder.if_then(condition):
        yield


def in_range(builder, value, lo, hi):
    """i1: ``lo <= value < hi`` (signed)."""
    return builder.and_(builder.icmp_signed(">=", value, as_value(lo)),
                        builder.icmp_signed("<", value, as_value(hi)))


def element_ptr(builder, base, index, ty):
    """Address of element ``index`` of a buffer of ``ty`` elements starting at ``base``."""
    return builder.gep(base, [as_value(index)], inbounds=True, source_etype=ty)


def load(builder, base, index, ty):
    """Load element ``index`` of a buffer of ``ty``."""
    return builder.load(element_ptr(builder, base, index, ty), typ=ty)


def store(builder, value, base, index, ty):
    """Store ``value`` into element ``index`` of a buffer of ``ty``."""
    builder.store(value, element_ptr(builder, base, index, ty))


def madd(builder, *terms):
    """Affine index: ``terms`` are (value, int factor) pairs or plain values/ints, summed (nsw)."""
    total = None
    for term in terms:
        if isinstance(term, tuple):
            value, factor = term
            value = as_value(value)
            if factor == 0:
                continue
            if factor != 1:
                value = builder.mul(value, const(factor), flags=["nsw"])
        else:
            value = as_value(term)
        total = value if total is None else builder.add(total, value, flags=["nsw"])
    return const(0) if total is None else total


def smax(builder, a, b):
    return builder.select(builder.icmp_signed(">", a, b), a, b)


def smin(builder, a, b):
    return builder.select(builder.icmp_signed("<", a, b), a, b)


def requantize(builder, acc, shift, relu=False, lo=None, hi=127):
    """int32 -> int8: ``clip(acc >> shift, lo, hi)``, arithmetic shift; ``lo`` defaults to 0 with
    ``relu``, else -128. ``shift`` is an int or an i32 value (a per-channel shift).

    The caller has already added the bias to ``acc`` (int32, wrapping).
    """
    if not isinstance(shift, int) or shift:
        acc = builder.ashr(acc, as_value(shift))
    acc = smax(builder, acc, const((0 if relu else -128) if lo is None else lo))
    acc = smin(builder, acc, const(hi))
    return builder.trunc(acc, I8)


# Explicit vectors (for register-blocked kernels). Every vector memory access states the
# element's alignment: LLVM would otherwise assume the whole vector's, which buffers do not have.

def vector(ty, lanes):
    return ir.VectorType(ty, lanes)


def splat_const(value, ty, lanes):
    """The constant vector ``<lanes x ty>`` with every lane ``value``."""
    return ir.Constant(vector(ty, lanes), [ir.Constant(ty, value)] * lanes)


def splat(builder, value, lanes):
    """``value`` (a scalar) in every lane of a ``lanes``-wide vector."""
    one = builder.insert_element(ir.Constant(vector(value.type, lanes), None), value, const(0))
    return builder.shuffle_vector(one, one, ir.Constant(vector(I32, lanes), [const(0)] * lanes))


def lanes(builder, value, start, count):
    """Lanes ``start .. start+count-1`` of vector ``value`` as a ``count``-wide vector."""
    mask = ir.Constant(vector(I32, count), [const(start + i) for i in range(count)])
    return builder.shuffle_vector(value, value, mask)


def lane_splat(builder, value, lane, count):
    """Lane ``lane`` of vector ``value`` in every lane of a ``count``-wide vector."""
    mask = ir.Constant(vector(I32, count), [const(lane)] * count)
    return builder.shuffle_vector(value, value, mask)


def concat(builder, parts):
    """Equal-width vectors ``parts`` (two, or any power of two) joined into one vector."""
    while len(parts) > 1:
        width = parts[0].type.count
        mask = ir.Constant(vector(I32, 2 * width), [const(i) for i in range(2 * width)])
        parts = [builder.shuffle_vector(a, c, mask) for a, c in zip(parts[::2], parts[1::2])]
    return parts[0]


def element_align(ty):
    """Bytes of one element of type ``ty`` (integer or float): the alignment of its accesses."""
    return 4 if isinstance(ty, ir.FloatType) else ty.width // 8


def load_vector(builder, base, index, ty, count):
    """``count`` consecutive ``ty`` elements from element ``index`` of a buffer, as a vector."""
    return builder.load(element_ptr(builder, base, index, ty), typ=vector(ty, count),
                        align=element_align(ty))


def store_vector(builder, value, base, index):
    """Store vector ``value`` at element ``index`` of a buffer of its element type."""
    ty = value.type.element
    builder.store(value, element_ptr(builder, base, index, ty), align=element_align(ty))
