"""Einsum that is a batched matrix product, rewritten to Transpose + MatMul + Transpose (issue 28).

torchvision's MaxViT writes attention's two products as ``einsum("bghid,bghjd->bghij", q, k)``
and ``einsum("bghij,bghjd->bghid", p, v)``. An equation of two operands with explicit output,
no ellipsis and each letter once per operand, whose letters are: any number of batch letters
(in both operands and the output), exactly one contracted letter (in both operands, not the
output), one row letter (first operand and output) and one column letter (second operand and
output), is the MatMul of the first operand transposed to (batch..., row, contracted) and the
second to (batch..., contracted, column) (batch letters in the output's order), the product
(batch..., row, column) transposed to the output's order; identity transposes are left out.
The MatMul takes the Einsum's name, so the importer's refusals (batch axes that broadcast, a
constant operand that is not a matrix) name it. Any other Einsum is left as it is (and refused by
the importer as an unsupported op).
"""

from __future__ import annotations


def operands(equation: str) -> tuple[str, str, str] | None:
    """(first, second, output) letters of an ``equation`` of the supported form, else None."""
    text = equation.replace(" ", "")
    if "->" not in text or "." in text:
        return None
    inputs, out = text.split("->")
    parts = inputs.split(",")
    if len(parts) != 2 or not all(p.isalpha() for p in parts + [out]):
        return None
    a, b = parts
    if any(len(set(p)) != len(p) for p in (a, b, out)):
        return None
    batch = [c for c in out if c in a and c in b]
    contracted = [c for c in a if c in b and c not in out]
    rows = [c for c in a if c in out and c not in b]
    cols = [c for c in b if c in out and c not in a]
    if len(contracted) != 1 or len(rows) != 1 or len(cols) != 1 or \
            len(batch) + 2 != len(out) or len(batch) + 2 != len(a) or len(batch) + 2 != len(b):
        return None  # a letter summed within one operand, or several row/column/contracted letters
    return a, b, out


def as_matmul(node, taken: set) -> list | None:
    """The nodes replacing Einsum ``node`` (its outputs kept), or None if it is not of the form
    above. ``taken``: every value name in use; the names made up here are added to it."""
    from onnx import helper

    equation = next((a.s.decode() for a in node.attribute if a.name == "equation"), "")
    found = operands(equation) if len(node.input) == 2 else None
    if found is None:
        return None
    a, b, out = found
    batch = [c for c in out if c in a and c in b]
    k = next(c for c in a if c in b and c not in out)
    row, col = next(c for c in a if c in out and c not in b), next(c for c in b if c in out and c not in a)
    name, nodes = node.name or node.output[0], []

    def fresh(base: str) -> str:
        candidate, i = base, 0
        while candidate in taken:
            i += 1
            candidate = f"{base}_{i}"
        taken.add(candidate)
        return candidate

    def transposed(value: str, letters: str, order: list[str], what: str) -> str:
        perm = [letters.index(c) for c in order]
        if perm == list(range(len(perm))):
            return value
        moved = fresh(f"{value}.{what}")
        nodes.append(helper.make_node("Transpose", [value], [moved], name=f"{name}.{what}", perm=perm))
        return moved

    left = transposed(node.input[0], a, batch + [row, k], "rows")
    right = transposed(node.input[1], b, batch + [k, col], "cols")
    product_letters = batch + [row, col]
    perm = [product_letters.index(c) for c in out]
    if perm == list(range(len(perm))):
        nodes.append(helper.make_node("MatMul", [left, right], [node.output[0]], name=name))
    else:
        product = fresh(f"{node.output[0]}.product")
        nodes.append(helper.make_node("MatMul", [left, right], [product], name=name))
        nodes.append(helper.make_node("Transpose", [product], [node.output[0]], name=f"{name}.out", perm=perm))
    return nodes


def rewrite(nodes: list, taken: set) -> list:
    """``nodes`` (onnx NodeProtos, topological) with every Einsum of the form above replaced."""
    result = []
    for node in nodes:
        replaced = as_matmul(node, taken) if node.op_type == "Einsum" and node.domain in ("", "ai.onnx") else None
        result.extend(replaced if replaced is not None else [node])
    return result
