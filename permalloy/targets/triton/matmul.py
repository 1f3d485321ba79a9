"""
The matrix-product template: the module of a kernel planned as one `matmul`
group (a contraction and its pointwise epilogue, `analysis.contraction`).

Two ways to run it, chosen per size by timing like any configuration:

- the *template* (`XBLOCK`, `YBLOCK`, `RBLOCK` tiles): each program computes
  a `[XBLOCK, YBLOCK]` tile of the product (tiles in groups of 8 rows, for
  the cache), walking the reduction in `RBLOCK` chunks: each factor is
  computed over its chunk tile (its prologue: whatever fusion inlined into
  it) and the tiles are multiplied with `tl.dot` (float32 accumulation;
  TF32 where torch allows it for float32, half-precision tensor cores for
  f16 and bf16); then the epilogue stages run on the tile in registers and
  store the kernel's outputs;
- the *library* (`LIBRARY`): the factors are views of the inputs (or, when
  a prologue computes them, a flat kernel writes each to a scratch tensor),
  torch's `mm`/`bmm` computes the product in the factors' type, and a flat
  kernel runs the epilogue on it (none when the kernel only returns the
  product, which the library then writes in place).

    def launch(tensors, symbols, config):
        in0, in1, out0, = tensors
        if config["LIBRARY"]:
            ...  # torch.mm(left, right, out=product); epilogue kernel
        grid = triton.cdiv(128, config["XBLOCK"]) * triton.cdiv(64, config["YBLOCK"])
        ...

`matmul_candidates` lists the configurations: the library first, then
templates where one can win (something to fuse, or tensor cores the library
would also use); `max-autotune` adds more tiles and times the template even
for a bare product.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import sympy
from xdsl.dialects import arith
from xdsl.dialects.builtin import BFloat16Type, Float16Type
from xdsl.ir import Operation, SSAValue

from permalloy.analysis.affine import split_affine
from permalloy.analysis.contraction import Contraction, cone
from permalloy.dialects.buffer import contiguous_strides
from permalloy.dialects.loop import LoadOp, YieldOp
from permalloy.dialects.sym import reduction_index
from permalloy.targets.host import python_expr
from permalloy.targets.triton.body import BodyWriter, Tile, store
from permalloy.targets.triton.configs import CandidateSpace, Config, evaluate
from permalloy.targets.triton.exprs import TritonExpr
from permalloy.targets.triton.plan import Group, KernelPlan, Stage
from permalloy.targets.triton.source import SourceWriter, Value
from permalloy.targets.triton.stages import decompose, write_program_id
from permalloy.targets.triton.types import TORCH_DTYPES, value_dtype

X, R = "x", "r"
GROUP_ROWS = 8
"""Tiles of the product are taken in groups of this many tile rows, so that
programs running together read the same columns of the right factor."""
LIBRARY_CONFIG = Config(XBLOCK=1024, num_warps=4, LIBRARY=1)
"""The library's product, with a flat epilogue of 1024 elements per program."""


@dataclass(frozen=True)
class Factor:
    """One operand of the product: the body value it multiplies, computed over
    a tile by `ops`, and how the library reads it."""

    name: str
    """`left` or `right`."""
    value: SSAValue
    """The operand as the product takes it (a half-precision value before its
    widening, so that tensor cores multiply it)."""
    ops: list[Operation]
    view: tuple[str, list[sympy.Expr], sympy.Expr] | None
    """For an operand that is one affine load of an input: the input's name,
    the strides of its batch, row and column positions, and the offset."""

    @property
    def dtype(self) -> str:
        return value_dtype(self.value.type)


def _operand(value: SSAValue) -> SSAValue:
    """The value a product multiplies: a widened half-precision value's own."""
    owner = value.owner
    if isinstance(owner, arith.ExtFOp) and isinstance(owner.input.type, Float16Type | BFloat16Type):
        return owner.input
    return value


def _factor(name: str, stage: Stage, value: SSAValue, variables: list[sympy.Symbol]) -> Factor:
    operand = _operand(value)
    ops = cone(stage.op, operand)
    view = None
    load = operand.owner
    if isinstance(load, LoadOp) and not load.index_values and load.mask is None and load not in stage.register_reads:
        source = stage.sources[load.source]
        address = stage.load_address(load)
        strides, rest = [], address
        for var in variables:
            split = split_affine(rest, var)
            if split is None:
                break
            rest, coefficient = split
            strides.append(coefficient)
        else:
            nonnegative = all(not bool(s.is_negative) for s in strides)
            if nonnegative and not any(s.name[0] in "drv" for s in rest.free_symbols) and not isinstance(source, int):
                view = (source.name, strides, rest)
    return Factor(name, operand, ops, view)


class MatmulWriter:
    """Writes the module of a `matmul` plan."""

    def __init__(self, plan: KernelPlan, interpret: bool, tf32: bool):
        self.plan = plan
        self.group: Group = plan.groups[0]
        assert self.group.contraction is not None
        self.product: Contraction = self.group.contraction
        self.stage: Stage = self.group.stages[0]
        self.interpret = interpret
        self.tf32 = tf32
        self.helpers: set[str] = set()
        product = self.product
        self.batch_vars = product.batch_indices
        self.row_vars = product.row_indices
        self.column, self.position = product.column_index, reduction_index(0)
        self.batch_sizes, self.row_sizes, self.n, self.k = product.sizes
        self.m = sympy.expand(sympy.Mul(*self.row_sizes))
        self.left = _factor("left", self.stage, product.left, [*self.batch_vars, *self.row_vars, self.position])
        self.right = _factor("right", self.stage, product.right, [*self.batch_vars, self.position, self.column])
        same = self.left.dtype == self.right.dtype and not interpret
        self.dot_dtype = self.left.dtype if same else "tl.float32"
        """The type the product multiplies in (float32 under the interpreter,
        whose `tl.dot` mishandles bf16)."""
        self.library_dtype = self.left.dtype if self.left.dtype == self.right.dtype else "tl.float32"

    # -- sizes -------------------------------------------------------------------

    def size(self, expr: sympy.Expr) -> str:
        return TritonExpr(lambda name: name, self.helpers).text(sympy.sympify(expr))

    def operand(self, expr: sympy.Expr) -> str:
        return TritonExpr(lambda name: name, self.helpers).atom(sympy.sympify(expr))

    @property
    def batch_total(self) -> sympy.Expr:
        return sympy.Mul(*self.batch_sizes) if self.batch_sizes else sympy.Integer(1)

    def constexprs(self, *names: str) -> list[str]:
        return [*names, *(["IDX64"] if self.plan.index_bits is None else [])]

    # -- kernel functions ----------------------------------------------------------

    def _signature(self, w: SourceWriter, name: str, extra: Sequence[str], constexprs: Sequence[str]) -> None:
        parameters = [t.name for t in self.plan.tensors] + list(extra) + list(self.plan.symbols)
        parameters += [f"{c}: tl.constexpr" for c in constexprs]
        w.line("@triton.jit")
        w.line(f"def {name}({', '.join(parameters)}):")

    @property
    def batch_dims(self) -> list[tuple[sympy.Symbol, sympy.Expr]]:
        return list(zip(self.batch_vars, self.batch_sizes))

    @property
    def row_dims(self) -> list[tuple[sympy.Symbol, sympy.Expr]]:
        return list(zip(self.row_vars, self.row_sizes))

    def _compute_factor(self, w: SourceWriter, factor: Factor, tile: Tile) -> Value:
        writer = BodyWriter(w, self.stage, tile, {})
        writer.emit_ops(factor.ops)
        return writer.values[factor.value]

    def _epilogue(self, w: SourceWriter, tile: Tile, product: Value, mask: str, axes: set[str]) -> None:
        """The epilogue stages on `product` (float32), and every store."""
        registers: dict[int, Value] = {self.stage.position: product}
        for tensor in self.stage.outputs:
            address = BodyWriter(w, self.stage, tile, registers).expr(self.stage.output_address(tensor))
            store(w, tensor, address, product, mask, axes)
        for stage in self.group.stages[1:]:
            w.comment(f"stage {stage.position}:")
            w.comment(str(stage.op))
            writer = BodyWriter(w, stage, tile, registers)
            value = writer.emit()
            if stage.keeps_register:
                registers[stage.position] = w.assign(value.text, value.dtype, value.deps, stem="st")
            for tensor in stage.outputs:
                store(w, tensor, writer.expr(stage.output_address(tensor)), value, mask, axes)

    def template_function(self) -> str:
        w = self._writer()
        self._signature(w, self.plan.name, [], self.constexprs("XBLOCK", "YBLOCK", "RBLOCK"))
        with w.indented():
            w.comment(f"matrix product [{self.size(self.m)}, {self.size(self.k)}] x [{self.size(self.k)}, {self.size(self.n)}]"
                      f"{', batch ' + self.size(self.batch_total) if self.batch_vars else ''}, with its epilogue")  # fmt: skip
            for tensor in self.plan.tensors:
                w.comment(f"{tensor.name}: {tensor.dtype.removeprefix('tl.')}")
            write_program_id(w, self.plan.index_bits)
            m, n, k = self.size(self.m), self.size(self.n), self.size(self.k)
            w.line(f"tiles_m = ({m} + XBLOCK - 1) // XBLOCK")
            w.line(f"tiles_n = ({n} + YBLOCK - 1) // YBLOCK")
            variables = {}
            if self.batch_vars:
                w.line("tiles = tiles_m * tiles_n")
                variables.update(decompose(w, "(pid // tiles)", self.batch_dims, frozenset(), self.operand))
                w.line("pid = pid % tiles")
            w.line(f"width = {GROUP_ROWS} * tiles_n")
            w.line(f"first = (pid // width) * {GROUP_ROWS}")
            w.line(f"height = tl.minimum(tiles_m - first, {GROUP_ROWS})")
            w.line("pid_m = first + (pid % width) % height")
            w.line("pid_n = (pid % width) // height")
            w.line("rows = (pid_m * XBLOCK + tl.arange(0, XBLOCK))[:, None]")
            w.line("columns = (pid_n * YBLOCK + tl.arange(0, YBLOCK))[None, :]")
            w.line(f"row_mask = rows < {m}")
            w.line(f"column_mask = columns < {n}")
            w.comment("the factors are read at rows and columns wrapped into range: no load is masked")
            w.comment("but along the reduction, and a wrapped row or column is never stored")
            w.line(f"rows_in = rows % {self.operand(self.m)}")
            w.line(f"columns_in = columns % {self.operand(self.n)}")
            w.line("all_rows = tl.full([XBLOCK, 1], 1, tl.int1)")
            w.line("all_columns = tl.full([1, YBLOCK], 1, tl.int1)")
            factor_variables = {**variables, **decompose(w, "rows_in", self.row_dims, frozenset({X}), self.operand)}
            w.line("acc = tl.full([XBLOCK, YBLOCK], 0, tl.float32)")
            w.line(f"for k0 in range(0, {k}, RBLOCK):")
            with w.indented():
                w.line("k_row = (k0 + tl.arange(0, RBLOCK))[None, :]")
                w.line("k_column = (k0 + tl.arange(0, RBLOCK))[:, None]")
                w.line(f"k_row_mask = {self._reduction_mask('k_row')}")
                w.line(f"k_column_mask = {self._reduction_mask('k_column')}")
                left_tile = Tile(
                    {**factor_variables, self.position.name: Value("k_row", "tl.int64", frozenset({R}))},
                    {X: "all_rows", R: "k_row_mask"},
                )  # fmt: skip
                right_tile = Tile(
                    {**factor_variables, self.column.name: Value("columns_in", "tl.int64", frozenset({X})),
                     self.position.name: Value("k_column", "tl.int64", frozenset({R}))},
                    {X: "all_columns", R: "k_column_mask"},
                )  # fmt: skip
                w.comment("left factor")
                a = self._dot_operand(w, self.left, left_tile, "k_row_mask", "[XBLOCK, RBLOCK]")
                w.comment("right factor")
                b = self._dot_operand(w, self.right, right_tile, "k_column_mask", "[RBLOCK, YBLOCK]")
                precision = "tf32" if self.tf32 and self.dot_dtype == "tl.float32" and not self.interpret else "ieee"
                w.line(f'acc += tl.dot({a}, {b}, input_precision="{precision}")')
            variables.update(decompose(w, "rows", self.row_dims, frozenset({X}), self.operand))
            tile = Tile(
                {**variables, self.column.name: Value("columns", "tl.int64", frozenset({R}))},
                {X: "row_mask", R: "column_mask"},
            )  # fmt: skip
            self._epilogue(w, tile, Value("acc", "tl.float32", frozenset({X, R})), "row_mask & column_mask", {X, R})
        return w.text()

    def _reduction_mask(self, positions: str) -> str:
        """The mask of the reduction positions a step reads: where the inner
        size is a constant that `RBLOCK` divides, a constant true that
        Triton folds away, so that no load of the loop is masked."""
        k = sympy.sympify(self.k)
        if k.is_Integer:
            return f"({positions} < {k}) | ({k} % RBLOCK == 0)"
        return f"{positions} < {self.size(k)}"

    def _dot_operand(self, w: SourceWriter, factor: Factor, tile: Tile, k_mask: str, shape: str) -> str:
        value = self._compute_factor(w, factor, tile)
        text = value.text
        if factor.view is None or R not in value.deps:
            # a computed factor, or one constant along the reduction, is 0 past its end
            text = w.assign(f"tl.where({k_mask}, {text}, 0)", value.dtype, value.deps | {R}).text
            value = Value(text, value.dtype, value.deps | {R})
        if value.deps != frozenset({X, R}):
            text = w.assign(f"tl.broadcast_to({text}, {shape})", value.dtype, frozenset({X, R})).text
        if value.dtype != self.dot_dtype:
            text = w.assign(f"{text}.to({self.dot_dtype})", self.dot_dtype, frozenset({X, R})).text
        return text

    def _flat_function(self, name: str, extra: str, dims: list[tuple[sympy.Symbol, sympy.Expr]], body) -> str:
        """A flat kernel over the batch and `dims` (row-major), `body(w, tile)`
        writing its work at `xindex`."""
        w = self._writer()
        self._signature(w, name, [extra], self.constexprs("XBLOCK"))
        with w.indented():
            write_program_id(w, self.plan.index_bits)
            dims = [*self.batch_dims, *dims]
            total = sympy.expand(sympy.Mul(*[size for _, size in dims]))
            w.line("xindex = pid * XBLOCK + tl.arange(0, XBLOCK)")
            w.line(f"xmask = xindex < {self.size(total)}")
            variables = decompose(w, "xindex", dims, frozenset({X}), self.operand)
            body(w, Tile(variables, {X: "xmask"}))
        return w.text()

    def factor_function(self, factor: Factor) -> str:
        """The flat kernel writing a computed factor to a contiguous scratch tensor."""
        dims = [*self.row_dims, (self.position, self.k)] if factor.name == "left" else [(self.position, self.k), (self.column, self.n)]

        def body(w: SourceWriter, tile: Tile) -> None:
            value = self._compute_factor(w, factor, tile)
            text = value.text if value.dtype == self.library_dtype else f"{value.text}.to({self.library_dtype})"
            w.line(f"tl.store(scratch + xindex, tl.broadcast_to({text}, [XBLOCK]), mask=xmask)")

        return self._flat_function(f"{self.plan.name}_{factor.name}", "scratch", dims, body)

    def epilogue_function(self) -> str:
        """The flat kernel running the epilogue on the library's product."""

        def body(w: SourceWriter, tile: Tile) -> None:
            loaded = w.assign("tl.load(product + xindex, mask=xmask, other=0).to(tl.float32)", "tl.float32", frozenset({X}))
            self._epilogue(w, tile, loaded, "xmask", {X})

        dims = [*self.row_dims, (self.column, self.n)]
        return self._flat_function(f"{self.plan.name}_epilogue", "product", dims, body)

    # -- the library's path --------------------------------------------------------

    @functools.cached_property
    def writes_product_in_place(self) -> str | None:
        """The output the library's product can be written into directly: the
        product's own output when nothing else is computed, or the rounding of
        a half-precision product to its type; None when an epilogue runs."""
        stages = self.group.stages
        if len(stages) == 1 and len(self.stage.outputs) == 1 and self.library_dtype == "tl.float32":
            output = self.stage.outputs[0]
            return output.name if self._merged_strides(output) is not None else None
        if len(stages) != 2 or len(stages[1].outputs) != 1:
            return None
        rounds = _only_rounds(self.group)
        output = stages[1].outputs[0]
        merges = self._merged_strides(output) is not None
        return output.name if rounds and merges and output.dtype == self.library_dtype else None

    def _library_shape(self) -> tuple[str, str, str]:
        """The shapes of the library's left and right factors and product."""
        batch = [python_expr(s) for s in self.batch_sizes]
        m, n, k = python_expr(self.m), python_expr(self.n), python_expr(self.k)
        return (
            f"({', '.join([*batch, m, k])},)",
            f"({', '.join([*batch, k, n])},)",
            f"({', '.join([*batch, m, n])},)",
        )

    def _library_operand(self, w: SourceWriter, factor: Factor, shape: str, device: str) -> None:
        """The line binding the factor's tensor for the library: a view of an
        input, or the scratch tensor its flat kernel (`library_launches`) fills."""
        if factor.view is not None:
            name, strides, offset = factor.view
            sizes = [*self.batch_sizes, *self.row_sizes, self.k] if factor.name == "left" else [*self.batch_sizes, self.k, self.n]
            text = (
                f"{name}.as_strided(({''.join(python_expr(s) + ', ' for s in sizes)}), "
                f"({''.join(python_expr(s) + ', ' for s in strides)}), {name}.storage_offset() + {python_expr(offset)})"
            )
            if len(sizes) != len(self.batch_sizes) + 2:
                text += f".reshape({shape})"
            if factor.dtype != self.library_dtype:
                text += f".to({TORCH_DTYPES[self.library_dtype]})"
            w.line(f"{factor.name} = {text}")
            return
        w.line(f"{factor.name} = torch.empty({shape}, dtype={TORCH_DTYPES[self.library_dtype]}, device={device}.device)")

    def _merged_strides(self, output) -> tuple[list[sympy.Expr], sympy.Expr] | None:
        """The strides of the product's batch, row and column positions in
        `output` as its writing stage addresses it, the rows merged into one,
        and the offset; None when the rows do not merge."""
        stage = next(st for st in self.group.stages if output in st.outputs)
        rest = stage.output_address(output)
        strides = []
        for var in [*self.batch_vars, *self.row_vars, self.column]:
            split = split_affine(rest, var)
            if split is None:
                return None
            rest, coefficient = split
            strides.append(coefficient)
        if any(s.name[0] in "drv" for s in rest.free_symbols):
            return None
        merged = self._merge_rows(strides)
        return None if merged is None else (merged, rest)

    def _merge_rows(self, strides: list[sympy.Expr]) -> list[sympy.Expr] | None:
        """Strides of batch positions, then rows, then one last position, with
        the rows merged into one (a row's stride is the next one's times its
        size); None where they do not merge. A factor's or product's strides
        with one row (or the right factor's, whose `k` stands there) are kept."""
        batch = len(self.batch_vars)
        rows = strides[batch:-1]
        for i in range(len(rows) - 1):
            if sympy.expand(rows[i] - rows[i + 1] * self.row_sizes[i + 1]) != 0:
                return None
        return [*strides[:batch], rows[-1], strides[-1]]

    def _library_product(self, w: SourceWriter, device: str, jit: bool) -> str:
        """Lines computing the library's product (in the JIT path, not when
        only compiling); the name of its tensor."""
        rank = len(self.batch_vars) + 2
        call = {2: "torch.mm", 3: "torch.bmm"}.get(rank, "torch.matmul")
        left_shape, right_shape, product_shape = self._library_shape()
        in_place = self.writes_product_in_place
        if in_place is not None:
            output = next(t for t in self.plan.outputs if t.name == in_place)
            merged = self._merged_strides(output)
            assert merged is not None
            strides, offset = merged
            w.line(
                f"product = {in_place}.as_strided({product_shape}, ({', '.join(python_expr(s) for s in strides)},), "
                f"{in_place}.storage_offset() + {python_expr(offset)})"
            )
        else:
            w.line(f"product = torch.empty({product_shape}, dtype={TORCH_DTYPES[self.library_dtype]}, device={device}.device)")
        if jit:
            w.line("if not compile_only:")
            with w.indented():
                w.line(f"{call}(left, right, out=product)")
        else:
            w.line(f"{call}(left, right, out=product)")
        return "product"

    def _flat_grid(self, dims: Sequence[sympy.Expr]) -> str:
        total = sympy.expand(self.batch_total * sympy.Mul(*dims))
        return f"triton.cdiv({python_expr(total)}, config['XBLOCK'])"

    def library_launches(self) -> list[tuple[str, str, str]]:
        """The flat launches of the library's path, in order: (function, extra
        argument, grid)."""
        launches = []
        for factor, dims in ((self.left, (self.m, self.k)), (self.right, (self.k, self.n))):
            if factor.view is None:
                launches.append((f"{self.plan.name}_{factor.name}", factor.name, self._flat_grid(dims)))
        if self.writes_product_in_place is None:
            launches.append((f"{self.plan.name}_epilogue", "product", self._flat_grid((self.m, self.n))))
        return launches

    # -- the module ------------------------------------------------------------------

    def _bind(self, w: SourceWriter, tensors: bool = True) -> None:
        if tensors:
            names = [t.name for t in (*self.plan.inputs, *self.plan.outputs)]
            w.line(f"{''.join(n + ', ' for n in names)}= tensors")
        if self.plan.symbols:
            w.line(f"{''.join(s + ', ' for s in self.plan.symbols)}= symbols")
        if self.plan.index_bits is None:
            extents = ", ".join(python_expr(e) for e in self.plan.extents)
            w.line(f"idx64 = max({extents}, 0) >= 2**31")

    def _idx64_values(self) -> list[str]:
        """The launch's `idx64` value, where the index width is decided per call."""
        return ["idx64"] if self.plan.index_bits is None else []

    def _idx64_option(self) -> list[str]:
        return [f"IDX64={value}" for value in self._idx64_values()]

    def _template_constexprs(self) -> list[str]:
        """The template's constant parameters, in launch order, from `config`."""
        return ["config['XBLOCK']", "config['YBLOCK']", "config['RBLOCK']", *self._idx64_values()]

    def _flat_constexprs(self) -> list[str]:
        """A flat kernel's constant parameters, in launch order."""
        return ["XBLOCK", *self._idx64_values()]

    def _template_options(self) -> list[str]:
        """The keyword arguments of a JIT launch (or warm-up) of the template."""
        options = ["XBLOCK=config['XBLOCK']", "YBLOCK=config['YBLOCK']", "RBLOCK=config['RBLOCK']"]
        return options + self._idx64_option() + ["num_warps=config['num_warps']", "num_stages=config['num_stages']"]

    def _flat_options(self) -> list[str]:
        """The keyword arguments of a JIT launch (or warm-up) of a flat kernel of the library's path."""
        return ["XBLOCK=config['XBLOCK']", *self._idx64_option(), "num_warps=config['num_warps']", "num_stages=1"]

    def _template_grid(self) -> str:
        return (
            f"triton.cdiv({python_expr(self.m)}, config['XBLOCK']) * triton.cdiv({python_expr(self.n)}, config['YBLOCK'])"
            f" * {python_expr(self.batch_total)}"
        )

    def _device(self) -> str:
        return self.plan.outputs[0].name if self.plan.outputs else self.plan.inputs[0].name

    def launch(self) -> str:
        w = SourceWriter()
        w.line("def launch(tensors, symbols, config, compile_only=False):")
        with w.indented():
            w.line('"""Run the kernel on `tensors` (inputs then outputs) for the size `symbols`: the')
            w.line('template, or the library\'s product and flat kernels; return the compiled kernels.')
            w.line('With `compile_only`, compile them for these arguments and run nothing."""')
            self._bind(w)
            arguments = [t.name for t in self.plan.tensors]
            symbols = list(self.plan.symbols)
            w.line("kernels = []")
            w.line("if config.get('LIBRARY'):")
            with w.indented():
                self._library_body(w, arguments, symbols, jit=True)
                w.line("return kernels")
            w.line(f"grid = {self._template_grid()}")
            w.line("if grid > 0:")
            with w.indented():
                options = self._template_options()
                w.line(
                    f"kernels.append({self.plan.name}.run({', '.join(arguments + symbols)}, grid=(grid,), "
                    f"warmup=compile_only, {', '.join(options)}))"
                )
            w.line("return kernels")
        return w.text()

    def _library_body(self, w: SourceWriter, arguments: list[str], symbols: list[str], jit: bool) -> None:
        """The library's path: with `jit`, launches through Triton's JIT
        appending to `kernels`; else through the bound direct launchers."""
        device = self._device()
        left_shape, right_shape, _ = self._library_shape()
        self._library_operand(w, self.left, left_shape, device)
        self._library_operand(w, self.right, right_shape, device)
        for step in self.library_sequence():
            if step is None:
                self._library_product(w, device, jit)
            else:
                position, (function, extra, grid) = step
                self._flat_launch(w, position, function, arguments + [extra] + symbols, grid, jit)

    def library_sequence(self) -> list[tuple[int, tuple[str, str, str]] | None]:
        """The library's path in order: each flat launch with its position
        among `library_launches`, and the product (None) after the factors'
        kernels and before the epilogue's, which reads it."""
        launches = self.library_launches()
        sequence: list[tuple[int, tuple[str, str, str]] | None] = []
        for position, launch in enumerate(launches):
            if launch[1] == "product":
                sequence.append(None)
            sequence.append((position, launch))
        if not launches or launches[-1][1] != "product":
            sequence.append(None)
        return sequence

    def _flat_launch(self, w: SourceWriter, position: int, function: str, values: list[str], grid: str, jit: bool) -> None:
        if jit:
            w.line(f"grid = {grid}")
            w.line("if grid > 0:")
            with w.indented():
                w.line(
                    f"kernels.append({function}.run({', '.join(values)}, grid=(grid,), warmup=compile_only, "
                    f"{', '.join(self._flat_options())}))"
                )
            return
        constexprs = self._flat_constexprs()
        w.line(f"if grid{position} > 0:")
        with w.indented():
            w.line(
                f"run{position}(grid{position}, 1, 1, stream, function{position}, metadata{position}, "
                f"None, None, None, {', '.join(values + constexprs)})"
            )

    def launcher(self) -> str:
        """`launcher(symbols, config, kernels)`: the direct path at fixed sizes."""
        w = SourceWriter()
        w.line("def launcher(symbols, config, kernels):")
        with w.indented():
            w.line('"""A function `run(tensors, stream)` launching the kernel at the sizes `symbols` with')
            w.line('`config` through `kernels`, the compiled kernels `launch` returned for them."""')
            self._bind(w, tensors=False)
            w.line("compiled = iter(kernels)")
            arguments = [t.name for t in self.plan.tensors]
            symbols = list(self.plan.symbols)
            w.line("if config.get('LIBRARY'):")
            with w.indented():
                w.line("XBLOCK = config['XBLOCK']")
                launches = self.library_launches()
                for position, (_, _, grid) in enumerate(launches):
                    w.line(f"grid{position} = {grid}")
                    w.line(
                        f"run{position}, function{position}, metadata{position} = "
                        f"next(compiled) if grid{position} > 0 else (None, None, None)"
                    )
                w.line("")
                w.line("def run_library(tensors, stream):")
                with w.indented():
                    names = [t.name for t in (*self.plan.inputs, *self.plan.outputs)]
                    w.line(f"{''.join(n + ', ' for n in names)}= tensors")
                    self._library_body(w, arguments, symbols, jit=False)
                w.line("")
                w.line("return run_library")
            w.line("grid = " + self._template_grid())
            w.line("run0, function0, metadata0 = next(compiled) if grid > 0 else (None, None, None)")
            w.line(f"constants = ({', '.join(self._template_constexprs())},)")
            w.line("")
            w.line("def run(tensors, stream):")
            with w.indented():
                names = [t.name for t in (*self.plan.inputs, *self.plan.outputs)]
                w.line(f"{''.join(n + ', ' for n in names)}= tensors")
                w.line("if grid > 0:")
                with w.indented():
                    w.line(
                        f"run0(grid, 1, 1, stream, function0, metadata0, None, None, None, "
                        f"{', '.join(arguments + symbols)}, *constants)"
                    )
            w.line("")
            w.line("return run")
        return w.text()

    def native_launches(self) -> str:
        """`native_launches(symbols, config, kernels)`: what a native host
        program runs for the kernel, as the other kernels' modules give it
        (temporaries, then steps): the template's one launch; or the
        library's path, its flat kernels' launches around a step
        `("product", "mm_out" or "bmm_out", views)` that the program calls
        the shim's product for. None where the library's path reshapes or
        casts a factor (the program then calls back into Python)."""
        w = SourceWriter()
        w.line("def native_launches(symbols, config, kernels):")
        with w.indented():
            w.line('"""The temporaries (elements, dtype) and the steps of the kernel at the sizes')
            w.line("`symbols` with `config`: launches (grid, compiled kernel, parameter values) and")
            w.line("the library's product (\"product\", shim function, views of the product and the")
            w.line("factors: tensor, sizes, strides, offset), tensors as (\"tensor\", position) among")
            w.line('the kernel\'s and then the temporaries; None where the program calls back."""')
            self._bind(w, tensors=False)
            w.line("compiled = iter(kernels)")
            w.line("if config.get('LIBRARY'):")
            with w.indented():
                self._native_library_steps(w)
            tensors = [f'("tensor", {i})' for i in range(len(self.plan.tensors))]
            values = tensors + list(self.plan.symbols) + self._template_constexprs()
            w.line(f"grid = {self._template_grid()}")
            w.line(f"launches = [(grid, next(compiled), ({', '.join(values)},))] if grid > 0 else []")
            w.line("return [], launches")
        return w.text()

    def _native_library_steps(self, w: SourceWriter) -> None:
        """The lines returning the library's path for a native host program."""
        merged = {f.name: self._merge_rows(list(f.view[1])) for f in (self.left, self.right) if f.view is not None}
        casts = any(f.view is not None and f.dtype != self.library_dtype for f in (self.left, self.right))
        if len(self.batch_vars) > 1 or casts or any(m is None for m in merged.values()):
            w.line("return None")
            return
        positions = {t.name: i for i, t in enumerate(self.plan.tensors)}
        count = len(self.plan.tensors)
        batch = list(self.batch_sizes)
        shapes = {"left": [*batch, self.m, self.k], "right": [*batch, self.k, self.n], "product": [*batch, self.m, self.n]}
        temporaries: list[sympy.Expr] = []
        views: dict[str, tuple[str, list[sympy.Expr], list[sympy.Expr], sympy.Expr]] = {}

        def temporary(name: str) -> tuple[str, list[sympy.Expr], list[sympy.Expr], sympy.Expr]:
            """A dense temporary of the shape `name` has, as a view of itself."""
            temporaries.append(sympy.expand(sympy.Mul(*shapes[name])))
            return f'("tensor", {count + len(temporaries) - 1})', shapes[name], list(contiguous_strides(shapes[name])), sympy.Integer(0)

        for factor in (self.left, self.right):
            if factor.view is not None:
                tensor, _, offset = factor.view
                views[factor.name] = (f'("tensor", {positions[tensor]})', shapes[factor.name], merged[factor.name], offset)
            else:
                views[factor.name] = temporary(factor.name)
        in_place = self.writes_product_in_place
        if in_place is not None:
            output = next(t for t in self.plan.outputs if t.name == in_place)
            strides, offset = self._merged_strides(output)
            views["product"] = (f'("tensor", {positions[in_place]})', shapes["product"], strides, offset)
        else:
            views["product"] = temporary("product")
        tensors = [f'("tensor", {i})' for i in range(count)]
        extras = {name: views[name][0] for name in ("left", "right", "product")}
        constexprs = self._flat_constexprs()
        w.line("XBLOCK = config['XBLOCK']")
        w.line("steps = []")

        def listed(values) -> str:
            return f"({''.join(python_expr(v) + ', ' for v in values)})"

        def product_step() -> None:
            texts = [f"({views[n][0]}, {listed(views[n][1])}, {listed(views[n][2])}, {python_expr(views[n][3])})" for n in ("product", "left", "right")]
            function = "bmm_out" if self.batch_vars else "mm_out"
            w.line(f"steps.append(('product', {function!r}, ({', '.join(texts)})))")

        for step in self.library_sequence():
            if step is None:
                product_step()
                continue
            _, (_, extra, grid) = step
            w.line(f"grid = {grid}")
            values = tensors + [extras[extra]] + list(self.plan.symbols) + constexprs
            w.line("if grid > 0:")
            with w.indented():
                w.line(f"steps.append((grid, next(compiled), ({', '.join(values)},)))")
        dtype = TORCH_DTYPES[self.library_dtype]
        w.line(f"return [{''.join(f'({python_expr(e)}, {dtype}), ' for e in temporaries)}], steps")

    def warmup(self) -> str:
        w = SourceWriter()
        w.line("def warmup(symbols, config):")
        with w.indented():
            w.line('"""Compile the kernel for the sizes `symbols` and `config` into Triton\'s cache."""')
            self._bind(w, tensors=False)
            dtypes = [TORCH_DTYPES[t.dtype] for t in self.plan.tensors]
            symbols = list(self.plan.symbols)
            w.line("if config.get('LIBRARY'):")
            with w.indented():
                # the flat kernels' extra tensor (a scratch factor, the product) has the library's type
                arguments = dtypes + [TORCH_DTYPES[self.library_dtype]] + symbols
                for function, _, grid in self.library_launches():
                    w.line(f"if {grid} > 0:")
                    with w.indented():
                        w.line(f"{function}.warmup({', '.join(arguments)}, grid=(1,), {', '.join(self._flat_options())})")
                w.line("return")
            w.line(f"if {self._template_grid()} > 0:")
            with w.indented():
                options = self._template_options()
                w.line(f"{self.plan.name}.warmup({', '.join(dtypes + symbols)}, grid=(1,), {', '.join(options)})")
        return w.text()

    def functions(self) -> list[str]:
        """Every `@triton.jit` function of the module: the template, the
        library path's factor kernels and its epilogue."""
        texts = [self.template_function()]
        for factor in (self.left, self.right):
            if factor.view is None:
                texts.append(self.factor_function(factor))
        if self.writes_product_in_place is None:
            texts.append(self.epilogue_function())
        return texts

    def _writer(self) -> SourceWriter:
        """A writer of one function, sharing the module's helpers."""
        return SourceWriter(helpers=self.helpers)


def tf32_allowed() -> bool:
    """Whether torch lets float32 products use TF32 tensor cores."""
    import torch

    return bool(torch.backends.cuda.matmul.allow_tf32)


# -- configurations ------------------------------------------------------------------

HALF_TILES = [(128, 128, 64, 8, 3), (64, 128, 64, 4, 4), (128, 64, 64, 4, 4), (64, 64, 64, 4, 4)]
"""Template tiles (XBLOCK, YBLOCK, RBLOCK, warps, stages) of half-precision
products, the most promising first."""
FLOAT_TILES = [(128, 128, 32, 8, 3), (64, 128, 32, 4, 4), (128, 64, 32, 4, 4), (64, 64, 32, 4, 4)]
"""Template tiles of float32 products (TF32 or exact)."""
WIDE_TILES = [(128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (64, 32, 32, 2, 5), (32, 64, 32, 2, 5), (16, 64, 128, 2, 3)]
"""Tiles `max-autotune` adds (RBLOCK halved for float32)."""
DEFAULT_TEMPLATES = 2
"""Template tiles the default mode times against the library."""


def _pow2_at_least_16(n: int) -> int:
    return max(16, 1 << (max(n, 1) - 1).bit_length())


def product_facts(plan: KernelPlan) -> tuple[tuple[sympy.Expr, sympy.Expr, sympy.Expr], bool, bool]:
    """What a `matmul` plan's candidates depend on: its sizes M, N and K,
    whether both factors are half precision, and whether work is fused into
    it (an epilogue beyond rounding, or a computed factor)."""
    group = plan.groups[0]
    product = group.contraction
    assert product is not None
    _, rows, columns, reduced = product.sizes
    epilogue = len(group.stages) > 2 or (len(group.stages) == 2 and not _only_rounds(group))
    return (sympy.Mul(*rows), columns, reduced), _half_factors(product), epilogue or _has_prologue(product)


def matmul_candidates(space: CandidateSpace, sizes: Mapping[str, int], mode: str, interpret: bool) -> list[Config]:
    """The configurations of a `matmul` kernel at `sizes`: under the
    interpreter the template alone, on one tile; on a GPU the library first,
    then the template tiles worth timing against it."""
    m, n, k = (evaluate(e, sizes) for e in space.product)
    if interpret:
        return [Config(_pow2_at_least_16(min(m, 32)), _pow2_at_least_16(min(k, 32)), 1, 1, _pow2_at_least_16(min(n, 32)))]
    wide = mode.startswith("max-autotune")
    half = space.half
    tensor_cores = half or tf32_allowed()
    configs = [LIBRARY_CONFIG]
    if not (wide or (space.fused and tensor_cores)):
        return configs
    tiles = list(HALF_TILES if half else FLOAT_TILES)
    tiles = tiles + [(x, y, r if half else r // 2, w, s) for x, y, r, w, s in WIDE_TILES] if wide else tiles[:DEFAULT_TEMPLATES]
    for xblock, yblock, rblock, warps, stages in tiles:
        config = Config(
            min(xblock, _pow2_at_least_16(m)), min(rblock, _pow2_at_least_16(k)), warps, stages, min(yblock, _pow2_at_least_16(n))
        )
        if config not in configs:
            configs.append(config)
    return configs


def _only_rounds(group: Group) -> bool:
    """Whether the group's one epilogue stage only rounds the product to its
    half-precision type (the library's product in that type is the same)."""
    stage = group.stages[1]
    ops = list(stage.op.body.block.ops)
    return (
        not group.stages[0].outputs
        and len(ops) == 3
        and isinstance(ops[0], LoadOp)
        and ops[0] in stage.register_reads
        and isinstance(ops[1], arith.TruncFOp)
        and isinstance(ops[2], YieldOp)
    )


def _half_factors(product: Contraction) -> bool:
    return all(_operand(v) is not v for v in (product.left, product.right))


def _has_prologue(product: Contraction) -> bool:
    """Whether a factor is computed (fusion inlined work into it), not read."""
    return any(not isinstance(_operand(v).owner, LoadOp) for v in (product.left, product.right))


__all__ = ["LIBRARY_CONFIG", "MatmulWriter", "matmul_candidates", "product_facts", "tf32_allowed"]
