"""
The `ptensor` dialect: value-semantic operations on ranked tensors.

This is the level the FX importer produces. Tensors have sizes that are integers
or integer expressions over size symbols (`!ptensor.tensor<[s0, 768], f32>`).
The op set is small and orthogonal:

- elementwise: `unary`, `binary`, `compare`, `where`, `cast` (with numpy-style
  broadcasting for the multi-operand ones; operands of `binary` and `compare`
  share a dtype, type promotion is made explicit by `cast`);
- reductions: `reduce` with a kind (sum, prod, max, min, argmax, argmin, any, all);
- scans: `scan` with a kind (sum, prod, logsumexp, max, min, argmax, argmin)
  along one dimension;
- views: `reshape`, `permute`, `expand`, `slice`, `select`, `squeeze`,
  `unsqueeze`, `as_strided`;
- data movement: `cat`, `pad`, `gather`, `index`;
- scatters: `scatter`, `scatter_add`, `scatter_reduce` with a kind (sum,
  prod, max, min), `index_put`;
- sorts: `sort` and `topk`, giving values and their positions;
- generators: `full`, `constant`, `iota`, `rand`;
- library ops that run as extern calls: `mm`, `bmm`, `addmm`, `convolution`,
  `convolution_backward`, `attention`, `embedding_backward`, `fft` (on
  complex tensors as real pairs: ptensor has no complex element type);
- `fallback`: any other ATen op, carried by name and run by torch.

Every op verifies the shapes and dtypes of its operands and results and says
what is wrong when they do not fit.

The package holds one module per family: `types` (the tensor type, list
attributes, dtype and shape helpers), `kinds` (the kind enumerations and their
attributes), `elementwise`, `reductions`, `scans`, `views`, `data_movement`, `scatters`,
`sorting`, `generators`, `library`, `spectral` and `fallback`; `checks` and `syntax` hold the
verification and custom-syntax helpers the ops share. Every public name is
available from `permalloy.dialects.ptensor` itself.
"""

from __future__ import annotations

from xdsl.ir import Dialect

from permalloy.dialects.ptensor.data_movement import (
    CatOp,
    GatherOp,
    IndexOp,
    PadOp,
    index_result_shape,
)
from permalloy.dialects.ptensor.elementwise import (
    ELEMENTWISE_OPS,
    BinaryOp,
    CastOp,
    CompareOp,
    UnaryOp,
    WhereOp,
)
from permalloy.dialects.ptensor.fallback import FallbackOp, NoneValueAttr, OperandRefAttr
from permalloy.dialects.ptensor.generators import ConstantOp, FullOp, IotaOp, RandOp
from permalloy.dialects.ptensor.kinds import (
    BOOL_ONLY_BINARY,
    BOOL_RESULT_UNARY,
    FLOAT_ONLY_BINARY,
    FLOAT_ONLY_UNARY,
    INT_ONLY_BINARY,
    BinaryKind,
    BinaryKindAttr,
    ComparePredicate,
    ComparePredicateAttr,
    FftKind,
    FftKindAttr,
    PadMode,
    PadModeAttr,
    RandomDistribution,
    RandomDistributionAttr,
    SCAN_POSITION_KINDS,
    ReduceKind,
    ReduceKindAttr,
    ScanKind,
    ScanKindAttr,
    ScatterKind,
    ScatterKindAttr,
    UnaryKind,
    UnaryKindAttr,
)
from permalloy.dialects.ptensor.library import (
    LIBRARY_OPS,
    AddmmOp,
    AttentionOp,
    BatchMatmulOp,
    ConvolutionBackwardOp,
    ConvolutionOp,
    EmbeddingBackwardOp,
    MatmulOp,
    convolution_geometry,
)
from permalloy.dialects.ptensor.spectral import FftOp
from permalloy.dialects.ptensor.reductions import ReduceOp, reduced_shape
from permalloy.dialects.ptensor.scans import ScanOp
from permalloy.dialects.ptensor.scatters import SCATTER_OPS, IndexPutOp, ScatterAddOp, ScatterOp, ScatterReduceOp
from permalloy.dialects.ptensor.sorting import SORT_OPS, SortOp, TopkOp
from permalloy.dialects.ptensor.types import (
    ELEMENT_TYPE_NAMES,
    IntListAttr,
    SymListAttr,
    TensorType,
    broadcast_shapes,
    format_shape,
    is_bool,
    is_element_type,
    is_float,
    is_integer,
    scalar_attr,
    shapes_equal,
    sizes_equal,
    tensor_type,
)
from permalloy.dialects.ptensor.views import (
    VIEW_OPS,
    AsStridedOp,
    ExpandOp,
    PermuteOp,
    ReshapeOp,
    SelectOp,
    SliceOp,
    SqueezeOp,
    UnsqueezeOp,
    slice_length,
)

PTensor = Dialect(
    "ptensor",
    [
        *ELEMENTWISE_OPS,
        FullOp,
        ConstantOp,
        IotaOp,
        RandOp,
        ReduceOp,
        ScanOp,
        *VIEW_OPS,
        CatOp,
        PadOp,
        GatherOp,
        IndexOp,
        *SCATTER_OPS,
        *SORT_OPS,
        *LIBRARY_OPS,
        FallbackOp,
    ],
    [
        TensorType,
        IntListAttr,
        SymListAttr,
        UnaryKindAttr,
        BinaryKindAttr,
        ComparePredicateAttr,
        ReduceKindAttr,
        ScanKindAttr,
        ScatterKindAttr,
        PadModeAttr,
        RandomDistributionAttr,
        FftKindAttr,
        OperandRefAttr,
        NoneValueAttr,
    ],
)

__all__ = [
    "AddmmOp",
    "AsStridedOp",
    "AttentionOp",
    "BOOL_ONLY_BINARY",
    "BOOL_RESULT_UNARY",
    "BatchMatmulOp",
    "BinaryKind",
    "BinaryKindAttr",
    "BinaryOp",
    "CastOp",
    "CatOp",
    "CompareOp",
    "ComparePredicate",
    "ComparePredicateAttr",
    "ConstantOp",
    "ConvolutionBackwardOp",
    "ConvolutionOp",
    "ELEMENTWISE_OPS",
    "ELEMENT_TYPE_NAMES",
    "EmbeddingBackwardOp",
    "ExpandOp",
    "FLOAT_ONLY_BINARY",
    "FLOAT_ONLY_UNARY",
    "FallbackOp",
    "FftKind",
    "FftKindAttr",
    "FftOp",
    "FullOp",
    "GatherOp",
    "INT_ONLY_BINARY",
    "IndexOp",
    "IndexPutOp",
    "IntListAttr",
    "IotaOp",
    "LIBRARY_OPS",
    "MatmulOp",
    "NoneValueAttr",
    "OperandRefAttr",
    "PTensor",
    "PadMode",
    "PadModeAttr",
    "PadOp",
    "PermuteOp",
    "RandOp",
    "RandomDistribution",
    "RandomDistributionAttr",
    "ReduceKind",
    "ReduceKindAttr",
    "ReduceOp",
    "ReshapeOp",
    "SCAN_POSITION_KINDS",
    "ScanKind",
    "ScanKindAttr",
    "ScanOp",
    "SCATTER_OPS",
    "ScatterAddOp",
    "ScatterKind",
    "ScatterKindAttr",
    "ScatterOp",
    "ScatterReduceOp",
    "SORT_OPS",
    "SelectOp",
    "SliceOp",
    "SortOp",
    "SqueezeOp",
    "SymListAttr",
    "TensorType",
    "TopkOp",
    "UnaryKind",
    "UnaryKindAttr",
    "UnaryOp",
    "UnsqueezeOp",
    "VIEW_OPS",
    "WhereOp",
    "broadcast_shapes",
    "convolution_geometry",
    "format_shape",
    "index_result_shape",
    "is_bool",
    "is_element_type",
    "is_float",
    "is_integer",
    "reduced_shape",
    "scalar_attr",
    "shapes_equal",
    "sizes_equal",
    "slice_length",
    "tensor_type",
]
