"""
Vectorizable f32 transcendentals as straight-line LLVM code.

Each function takes an f32 scalar or vector and computes with range reduction
and a polynomial, in the style of Cephes and SLEEF: no branches and no calls,
so a vectorized loop stays vectorized. The polynomials are least-squares
near-minimax fits (relative error of the fit below 1e-8 on the reduced range);
results are within a few ulp of the correctly rounded value, and special values
follow C99: exp(inf) = inf, exp(-inf) = 0, log(0) = -inf, log(x < 0) = nan,
tanh(+-inf) = +-1, erf(+-inf) = +-1, nan in gives nan out.

    exp(x)   = 2^n (1 + expm1_r(r)),    x = n ln2 + r, |r| <= ln2 / 2
    log(x)   = e ln2 + log1p_r(m - 1),  x = 2^e m, m in [sqrt(1/2), sqrt(2))
    tanh(x)  = x + x^3 P(x^2) for |x| < 0.625, else sign(x) t / (t + 2) with t = expm1(2|x|)
    erf(x)   = x P(x^2) for |x| < 1, else sign(x) (1 - exp(-x^2) Q(1/|x| - 0.625))
"""

from __future__ import annotations

from collections.abc import Sequence

from llvmlite import ir

from permalloy.targets.llvm.codegen import CodeGen, RawConstant
from permalloy.targets.llvm.types import F32, I32, lanes_of, with_lanes

LN2_HI = 0.693359375  # few significant bits: n * LN2_HI is exact
LN2_LO = -2.12194440e-4
LOG2E = 1.4426950408889634
LOG10E = 0.4342944819032518

# expm1(r) = r + r^2 / 2 + r^3 P(r), |r| <= ln2 / 2
EXPM1_P = (0.16666667, 0.041666556, 0.0083333012, 0.0013926178, 0.00019899200)
# log1p(f) = f - f^2 / 2 + f^3 P(f), f in [sqrt(1/2) - 1, sqrt(2) - 1]
LOG1P_P = (
    0.33333331, -0.24999981, 0.20000689, -0.16669144, 0.14251141,
    -0.12396839, 0.11634953, -0.11659075, 0.073306791,
)  # fmt: skip
# tanh(x) = x + x^3 P(x^2), |x| <= 0.625
TANH_P = (-0.33333334, 0.13333306, -0.053959575, 0.021771139, -0.0083503798, 0.0022992911)
# erf(x) = x P(x^2), |x| <= 1
ERF_P = (
    1.1283791, -0.37612626, 0.11283601, -0.026854467, 0.0051895725,
    -0.00080211408, 7.8900499e-05,
)  # fmt: skip
# erfc(x) exp(x^2) = Q(1/x - 0.625), 1 <= x <= 4
ERFC_Q = (
    0.30595297, 0.38228348, -0.17239054, 0.043797646, 0.023152564,
    -0.047765639, 0.045866147, -0.018874481, -0.011380907,
)  # fmt: skip


class F32Math:
    """The polynomial kernels, emitting into one CodeGen."""

    def __init__(self, cg: CodeGen):
        self.cg = cg
        self.b = cg.builder

    # -- helpers -----------------------------------------------------------

    def c(self, x: ir.Value, value: float) -> ir.Value:
        return self.cg.like(x, value)

    def fma(self, a: ir.Value, b: ir.Value, c: ir.Value) -> ir.Value:
        """a * b + c, fused where the host has FMA."""
        return self.cg.intrinsic("fmuladd", [a, b, c])

    def poly(self, x: ir.Value, coefficients: Sequence[float]) -> ir.Value:
        """Horner's scheme: sum coefficients[i] * x^i."""
        acc = self.c(x, coefficients[-1])
        for coefficient in reversed(coefficients[:-1]):
            acc = self.fma(acc, x, self.c(x, coefficient))
        return acc

    def select_lt(self, x: ir.Value, bound: float, then: ir.Value, other: ir.Value) -> ir.Value:
        return self.b.select(self.b.fcmp_ordered("<", x, self.c(x, bound)), then, other)

    def clamp(self, x: ir.Value, lo: float, hi: float) -> ir.Value:
        """x limited to [lo, hi]; nan becomes lo (callers restore nan)."""
        x = self.cg.intrinsic("maxnum", [x, self.c(x, lo)])
        return self.cg.intrinsic("minnum", [x, self.c(x, hi)])

    def keep_nan(self, x: ir.Value, result: ir.Value) -> ir.Value:
        return self.b.select(self.b.fcmp_unordered("uno", x, x), x, result)

    def ints(self, x: ir.Value) -> ir.Type:
        return with_lanes(I32, lanes_of(x))

    def pow2(self, n: ir.Value) -> ir.Value:
        """2^n for an integer n (i32) in [-126, 127], built from its exponent bits."""
        b = self.b
        bits = b.shl(b.add(n, self.c(n, 127)), self.c(n, 23))
        return b.bitcast(bits, with_lanes(F32, lanes_of(n)))

    def scale(self, y: ir.Value, n: ir.Value) -> ir.Value:
        """y * 2^n for an integral f32 n in [-252, 254], overflowing to inf, underflowing through subnormals."""
        b = self.b
        lanes = lanes_of(y)
        if self.cg.avx512 and lanes and lanes % 16 == 0:
            return self._scalef(y, n)
        k = b.fptosi(n, self.ints(y))
        half = b.ashr(k, self.c(k, 1))
        return b.fmul(b.fmul(y, self.pow2(half)), self.pow2(b.sub(k, half)))

    def _scalef(self, y: ir.Value, n: ir.Value) -> ir.Value:
        """`scale` with AVX-512's vscalefps, 16 lanes at a time."""
        b, lanes = self.b, lanes_of(y)
        piece = ir.VectorType(F32, 16)
        parts = []
        for start in range(0, lanes, 16):
            indices = ir.Constant(ir.VectorType(I32, 16), list(range(start, start + 16)))
            sub_y = b.shuffle_vector(y, y, indices) if lanes > 16 else y
            sub_n = b.shuffle_vector(n, n, indices) if lanes > 16 else n
            fn = self.cg.declare("llvm.x86.avx512.mask.scalef.ps.512", piece, [piece, piece, piece, ir.IntType(16), I32])
            parts.append(b.call(fn, [sub_y, sub_n, RawConstant(piece, "zeroinitializer"), ir.Constant(ir.IntType(16), -1), I32(4)]))
        while len(parts) > 1:
            joined = []
            for a, c in zip(parts[::2], parts[1::2]):
                width = a.type.count * 2
                joined.append(b.shuffle_vector(a, c, ir.Constant(ir.VectorType(I32, width), list(range(width)))))
            parts = joined
        return parts[0]

    def reduce_ln2(self, x: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(n, r) with x = n ln2 + r, |r| <= ln2 / 2; n an integral f32."""
        n = self.cg.intrinsic("roundeven", [self.b.fmul(x, self.c(x, LOG2E))])
        minus_n = self.b.fneg(n)
        r = self.fma(minus_n, self.c(x, LN2_HI), x)
        r = self.fma(minus_n, self.c(x, LN2_LO), r)
        return n, r

    def expm1_core(self, r: ir.Value) -> ir.Value:
        """expm1(r) for |r| <= ln2 / 2."""
        b = self.b
        p = self.fma(self.poly(r, EXPM1_P), r, self.c(r, 0.5))
        return self.fma(b.fmul(r, r), p, r)

    # -- functions ---------------------------------------------------------

    def exp(self, x: ir.Value) -> ir.Value:
        xc = self.clamp(x, -104.0, 89.0)
        n, r = self.reduce_ln2(xc)
        y = self.b.fadd(self.expm1_core(r), self.c(x, 1.0))
        return self.keep_nan(x, self.scale(y, n))

    def exp2(self, x: ir.Value) -> ir.Value:
        b = self.b
        xc = self.clamp(x, -151.0, 129.0)
        n = self.cg.intrinsic("roundeven", [xc])
        r = b.fmul(b.fsub(xc, n), self.c(x, 0.6931471805599453))
        y = b.fadd(self.expm1_core(r), self.c(x, 1.0))
        return self.keep_nan(x, self.scale(y, n))

    def expm1(self, x: ir.Value) -> ir.Value:
        b = self.b
        xc = self.clamp(x, -88.0, 89.0)
        n, r = self.reduce_ln2(xc)
        e = self.expm1_core(r)
        # Small n: 2^n e + (2^n - 1), exact in its last step; large n: 2^n (1 + e) - 1.
        k = b.fptosi(n, self.ints(x))
        small_k = self.cg.intrinsic("smax", [self.cg.intrinsic("smin", [k, self.c(k, 24)]), self.c(k, -24)])
        t = self.pow2(small_k)
        near = self.fma(t, e, b.fsub(t, self.c(x, 1.0)))
        far = b.fsub(self.scale(b.fadd(e, self.c(x, 1.0)), n), self.c(x, 1.0))
        is_near = b.icmp_signed("==", k, small_k)
        # expm1 keeps its argument's sign, that of a zero too (e is +0 for -0)
        result = self.cg.intrinsic("copysign", [b.select(is_near, near, far), x])
        return self.keep_nan(x, result)

    def _log_parts(self, x: ir.Value) -> tuple[ir.Value, ir.Value]:
        """(e, log1p(f)) with x = 2^e (1 + f), e as f32; for finite x > 0."""
        b = self.b
        tiny = b.fcmp_ordered("<", x, self.c(x, 1.1754943508222875e-38))
        x = b.select(tiny, b.fmul(x, self.c(x, 8388608.0)), x)
        bits = b.bitcast(x, self.ints(x))
        exponent = b.sub(b.lshr(bits, self.c(bits, 23)), self.c(bits, 127))
        exponent = b.select(tiny, b.sub(exponent, self.c(bits, 23)), exponent)
        mantissa_bits = b.or_(b.and_(bits, self.c(bits, 0x007FFFFF)), self.c(bits, 0x3F800000))
        m = b.bitcast(mantissa_bits, x.type)
        big = b.fcmp_ordered(">", m, self.c(x, 1.4142135623730951))
        m = b.select(big, b.fmul(m, self.c(x, 0.5)), m)
        exponent = b.add(exponent, b.zext(big, exponent.type))
        f = b.fsub(m, self.c(x, 1.0))
        f2 = b.fmul(f, f)
        y = b.fmul(b.fmul(f2, f), self.poly(f, LOG1P_P))
        y = self.fma(self.c(x, -0.5), f2, y)
        return b.sitofp(exponent, x.type), b.fadd(f, y)

    def _log_special(self, x: ir.Value, result: ir.Value) -> ir.Value:
        """log's value at 0 (-inf), inf (inf), negatives and nan (nan)."""
        b = self.b
        result = b.select(b.fcmp_ordered("==", x, self.c(x, 0.0)), self.c(x, float("-inf")), result)
        result = b.select(b.fcmp_ordered("==", x, self.c(x, float("inf"))), x, result)
        return b.select(b.fcmp_unordered("<", x, self.c(x, 0.0)), self.c(x, float("nan")), result)

    def log(self, x: ir.Value) -> ir.Value:
        e, y = self._log_parts(x)
        y = self.fma(e, self.c(x, LN2_LO), y)
        return self._log_special(x, self.fma(e, self.c(x, LN2_HI), y))

    def log2(self, x: ir.Value) -> ir.Value:
        e, y = self._log_parts(x)
        return self._log_special(x, self.fma(y, self.c(x, LOG2E), e))

    def log10(self, x: ir.Value) -> ir.Value:
        return self.b.fmul(self.log(x), self.c(x, LOG10E))

    def log1p(self, x: ir.Value) -> ir.Value:
        """log1p(x) = x log(u) / (u - 1) with u = 1 + x (exact quotient trick)."""
        b = self.b
        u = b.fadd(x, self.c(x, 1.0))
        d = b.fsub(u, self.c(x, 1.0))
        result = b.fmul(self.log(u), b.fdiv(x, d))
        result = b.select(b.fcmp_ordered("==", d, self.c(x, 0.0)), x, result)
        return b.select(b.fcmp_ordered("==", x, self.c(x, float("inf"))), x, result)

    def tanh(self, x: ir.Value) -> ir.Value:
        b = self.b
        a = self.cg.intrinsic("fabs", [x])
        x2 = b.fmul(x, x)
        small = self.fma(b.fmul(x2, x), self.poly(x2, TANH_P), x)
        limited = b.select(b.fcmp_ordered(">", a, self.c(x, 9.0)), self.c(x, 9.0), a)
        t = self.expm1(b.fadd(limited, limited))
        large = b.fdiv(t, b.fadd(t, self.c(x, 2.0)))
        # tanh keeps its argument's sign, that of a zero too (x^3 P(x^2) is +0 for -0)
        return self.cg.intrinsic("copysign", [self.select_lt(a, 0.625, small, large), x])

    def erf(self, x: ir.Value) -> ir.Value:
        b = self.b
        a = self.cg.intrinsic("fabs", [x])
        small = b.fmul(x, self.poly(b.fmul(x, x), ERF_P))
        limited = b.select(b.fcmp_ordered(">", a, self.c(x, 4.0)), self.c(x, 4.0), a)
        t = b.fsub(b.fdiv(self.c(x, 1.0), limited), self.c(x, 0.625))
        erfc = b.fmul(self.exp(b.fneg(b.fmul(limited, limited))), self.poly(t, ERFC_Q))
        large = self.cg.intrinsic("copysign", [b.fsub(self.c(x, 1.0), erfc), x])
        return self.select_lt(a, 1.0, small, large)


__all__ = ["F32Math"]
