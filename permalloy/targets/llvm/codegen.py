"""
A small toolkit over llvmlite's IRBuilder for writing lane-polymorphic code.

Every helper takes scalars or vectors alike: inside a vectorized loop a value is
an LLVM vector of the loop's lanes, outside it a scalar, and mixed operands are
made uniform with `match` (scalars are splatted). Loop-carried state lives in
`alloca`s of the function's entry block, which LLVM's O3 pipeline promotes to
registers, so loops are written as plain structured code with `for_range`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from llvmlite import ir

from permalloy.targets.llvm.types import (
    I1,
    I32,
    I64,
    PTR,
    lanes_of,
    scalar_of,
    type_suffix,
    with_lanes,
)


class CodeGen:
    """An IRBuilder positioned in one function, with lane-aware helpers."""

    def __init__(self, module: ir.Module, function: ir.Function, avx512: bool = False):
        self.module = module
        self.function = function
        self.avx512 = avx512  # 512-bit x86 instructions may be used (vscalefps)
        entry = function.append_basic_block("entry")
        self._alloca_builder = ir.IRBuilder(entry)
        body = function.append_basic_block("start")
        self._alloca_builder.branch(body)
        self._alloca_builder.position_at_start(entry)
        self.builder = ir.IRBuilder(body)

    # -- values ------------------------------------------------------------

    def alloca(self, ty: ir.Type, init: ir.Value | None = None, name: str = "", count: int = 0) -> ir.Value:
        """A stack slot (or `count` of them) in the entry block, optionally initialized here."""
        slot = self._alloca_builder.alloca(ty, size=I64(count) if count else None, name=name)
        slot.type = PTR  # an opaque pointer; `read` knows the slot's type
        if init is not None:
            self.builder.store(init, slot)
        return slot

    def read(self, slot: ir.Value) -> ir.Value:
        """The value in a slot made by `alloca`."""
        return self.builder.load(slot, typ=slot.allocated_type)

    def const(self, ty: ir.Type, value, lanes: int = 0) -> ir.Constant:
        """A constant of scalar type `ty`, splatted to `lanes` lanes."""
        if lanes:
            return splat_constant(ir.Constant(ty, value), lanes)
        return ir.Constant(ty, value)

    def like(self, value: ir.Value, constant) -> ir.Constant:
        """A constant with the type (and lanes) of `value`."""
        return self.const(scalar_of(value.type), constant, lanes_of(value))

    def splat(self, value: ir.Value, lanes: int) -> ir.Value:
        """Broadcast a scalar to `lanes` lanes (values already vectors pass)."""
        if not lanes or lanes_of(value):
            return value
        if isinstance(value, ir.Constant) and not isinstance(value.type, ir.VectorType):
            return splat_constant(value, lanes)
        vty = ir.VectorType(value.type, lanes)
        poison = RawConstant(vty, "poison")
        one = self.builder.insert_element(poison, value, I32(0))
        return self.builder.shuffle_vector(one, poison, ir.Constant(ir.VectorType(I32, lanes), None))

    def match(self, *values: ir.Value) -> list[ir.Value]:
        """The values with scalars splatted to the widest lane count among them."""
        lanes = max((lanes_of(v) for v in values), default=0)
        return [self.splat(v, lanes) for v in values]

    def iota(self, lanes: int, ty: ir.Type = I64) -> ir.Constant:
        return ir.Constant(ir.VectorType(ty, lanes), list(range(lanes)))

    # -- calls -------------------------------------------------------------

    def declare(self, name: str, ret: ir.Type, args: Sequence[ir.Type]) -> ir.Function:
        """The function `name` of this module, declared on first use."""
        existing = self.module.globals.get(name)
        if existing is not None:
            return existing
        return ir.Function(self.module, ir.FunctionType(ret, list(args)), name)

    def intrinsic(
        self,
        base: str,
        args: Sequence[ir.Value],
        *,
        ret: ir.Type | None = None,
        overloads: Sequence[ir.Type] | None = None,
        fastmath: Sequence[str] = (),
    ) -> ir.Value:
        """Call `llvm.<base>` overloaded on `overloads` (default: the first argument's type)."""
        types = overloads if overloads is not None else [args[0].type]
        name = "llvm." + base + "".join("." + type_suffix(t) for t in types)
        fn = self.declare(name, ret if ret is not None else args[0].type, [a.type for a in args])
        return self.builder.call(fn, list(args), fastmath=fastmath)

    def call_per_lane(self, name: str, args: Sequence[ir.Value], ret: ir.Type) -> ir.Value:
        """Call the scalar C function `name` once per lane (or once for scalars)."""
        args = self.match(*args)
        fn = self.declare(name, ret, [scalar_of(a.type) for a in args])
        lanes = lanes_of(args[0])
        if not lanes:
            return self.builder.call(fn, list(args))
        result = RawConstant(ir.VectorType(ret, lanes), "poison")
        for lane in range(lanes):
            scalars = [self.builder.extract_element(a, I32(lane)) for a in args]
            value = self.builder.call(fn, scalars)
            result = self.builder.insert_element(result, value, I32(lane))
        return result

    # -- memory ------------------------------------------------------------

    def element_ptr(self, base: ir.Value, elem: ir.Type, offset: ir.Value) -> ir.Value:
        """Address of element `offset` (scalar or vector of i64) from `base`."""
        address = self.builder.gep(base, [offset], source_etype=elem)
        if lanes_of(offset):
            address.type = ir.VectorType(PTR, lanes_of(offset))  # llvmlite types it as the base
        return address

    def load(self, ptr: ir.Value, ty: ir.Type, lanes: int, mask: ir.Value | None) -> ir.Value:
        """Load `lanes` consecutive elements (a scalar when 0), masked lanes giving 0."""
        align = _align(ty)
        if not lanes:
            return self.builder.load(ptr, typ=ty, align=align)
        vty = ir.VectorType(ty, lanes)
        if mask is None:
            return self.builder.load(ptr, typ=vty, align=align)
        return self.where_some_lane(mask, vty, lambda: self._split_masked_load(ptr, ty, vty, mask))

    def _split_masked_load(self, ptr: ir.Value, ty: ir.Type, vty: ir.VectorType, mask: ir.Value) -> ir.Value:
        lanes = vty.count
        piece = self._register_lanes(ty)
        if lanes <= piece or lanes % piece:
            return self._masked_load(ptr, vty, mask)
        # LLVM's x86 backend may load a half of a split masked load whose
        # mask is all false without its mask: split it into registers here.
        parts = [
            self._masked_load(
                self.element_ptr(ptr, ty, I64(start)),
                ir.VectorType(ty, piece),
                self.builder.shuffle_vector(mask, mask, _lane_indices(start, piece)),
            )
            for start in range(0, lanes, piece)
        ]
        while len(parts) > 1:
            pairs = zip(parts[0::2], parts[1::2])
            parts = [self.builder.shuffle_vector(a, b, _lane_indices(0, 2 * lanes_of(a))) for a, b in pairs]
        return parts[0]

    def _register_lanes(self, ty: ir.Type) -> int:
        """Lanes of `ty` in one vector register (256 bits, 512 with AVX-512)."""
        bits = 512 if self.avx512 else 256
        return max(1, bits // _bits(ty))

    def _masked_load(self, ptr: ir.Value, vty: ir.VectorType, mask: ir.Value) -> ir.Value:
        return self.intrinsic(
            "masked.load",
            [ptr, I32(_align(vty.element)), mask, RawConstant(vty, "zeroinitializer")],
            ret=vty,
            overloads=[vty, PTR],
        )

    def store(self, value: ir.Value, ptr: ir.Value, mask: ir.Value | None) -> None:
        align = _align(scalar_of(value.type))
        if mask is None:
            self.builder.store(value, ptr, align=align)
            return
        self.intrinsic(
            "masked.store",
            [value, ptr, I32(align), mask],
            ret=ir.VoidType(),
            overloads=[value.type, PTR],
        )

    def gather(self, ptrs: ir.Value, ty: ir.Type, mask: ir.Value | None) -> ir.Value:
        """Load one element per lane from a vector of pointers, masked lanes
        giving 0; skipped where no lane is active (`where_some_lane`)."""
        lanes = lanes_of(ptrs)
        vty = ir.VectorType(ty, lanes)

        def gathered(active: ir.Value) -> ir.Value:
            zero = RawConstant(vty, "zeroinitializer")
            return self.intrinsic("masked.gather", [ptrs, I32(_align(ty)), active, zero], ret=vty, overloads=[vty, ptrs.type])

        if mask is None:
            return gathered(self.const(I1, 1, lanes))
        return self.where_some_lane(mask, vty, lambda: gathered(mask))

    def where_some_lane(self, mask: ir.Value, vty: ir.VectorType, load: Callable[[], ir.Value]) -> ir.Value:
        """The masked load `load()` run only where some lane of `mask` is
        active, else zeros. x86's masked loads and gathers cost per lane,
        masked or not, and a load masked off for whole rows (a concatenation's
        input, read only at its own channels; a pooled one, through strided
        gathers) would cost at every row of every reader."""
        b = self.builder
        before = b.block
        then = b.append_basic_block("load.then")
        done = b.append_basic_block("load.end")
        b.cbranch(self.any_lane(mask), then, done)
        b.position_at_end(then)
        value = load()
        loaded = b.block
        b.branch(done)
        b.position_at_end(done)
        result = b.phi(vty)
        result.add_incoming(value, loaded)
        result.add_incoming(RawConstant(vty, "zeroinitializer"), before)
        return result

    def scatter(self, value: ir.Value, ptrs: ir.Value, mask: ir.Value | None) -> None:
        if mask is None:
            mask = self.const(I1, 1, lanes_of(ptrs))
        self.intrinsic(
            "masked.scatter",
            [value, ptrs, I32(_align(scalar_of(value.type))), mask],
            ret=ir.VoidType(),
            overloads=[value.type, ptrs.type],
        )

    def any_lane(self, mask: ir.Value) -> ir.Value:
        """An i1 that is true when some lane of `mask` is (the scalar itself)."""
        if not lanes_of(mask):
            return mask
        return self.intrinsic("vector.reduce.or", [mask], ret=I1)

    # -- control flow ------------------------------------------------------

    def for_range(
        self,
        lo: ir.Value,
        hi: ir.Value,
        body: Callable[[ir.Value], None],
        step: int = 1,
        name: str = "i",
    ) -> None:
        """`for (i = lo; i < hi; i += step) body(i)`, i64 counters."""
        counter = self.alloca(I64, lo, name=name)
        b = self.builder
        cond = b.append_basic_block(name + ".cond")
        loop = b.append_basic_block(name + ".body")
        done = b.append_basic_block(name + ".end")
        b.branch(cond)
        b.position_at_end(cond)
        i = self.read(counter)
        b.cbranch(b.icmp_signed("<", i, hi), loop, done)
        b.position_at_end(loop)
        body(i)
        b.store(b.add(i, I64(step)), counter)
        b.branch(cond)
        b.position_at_end(done)

    def if_then(self, cond: ir.Value, body: Callable[[], None], name: str = "if") -> None:
        b = self.builder
        then = b.append_basic_block(name + ".then")
        done = b.append_basic_block(name + ".end")
        b.cbranch(cond, then, done)
        b.position_at_end(then)
        body()
        b.branch(done)
        b.position_at_end(done)


class RawConstant(ir.FormattedConstant):
    """A constant printed as the given text (`poison`, `splat (float 2.0)`), vectors included."""

    def __init__(self, ty: ir.Type, text: str):
        super().__init__(ty, text)
        self.constant = text  # not the per-lane tuple that vector types make of it


def splat_constant(value: ir.Constant, lanes: int) -> ir.Constant:
    """A vector constant with every lane `value`, printed `splat (float 2.0)`."""
    return RawConstant(ir.VectorType(value.type, lanes), f"splat ({value.type} {value.get_reference()})")


def _align(ty: ir.Type) -> int:
    return max(1, _bits(ty) // 8)


def _bits(ty: ir.Type) -> int:
    if isinstance(ty, ir.IntType):
        return ty.width
    return {"half": 16, "bfloat": 16, "float": 32, "double": 64}[str(ty)]


def _lane_indices(start: int, count: int) -> ir.Constant:
    """The shufflevector mask selecting lanes `start` to `start + count - 1`."""
    return ir.Constant(ir.VectorType(I32, count), [start + k for k in range(count)])


def lane_mask(cg: CodeGen, start: ir.Value, end: ir.Value, lanes: int) -> ir.Value:
    """The i1 vector of lanes `start + k < end`, k < lanes."""
    b = cg.builder
    remaining = b.sub(end, start)
    return b.icmp_signed("<", cg.iota(lanes), cg.splat(remaining, lanes))


__all__ = ["CodeGen", "lane_mask", "with_lanes"]
