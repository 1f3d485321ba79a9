# RUN: python %s | filecheck %s
"""complex_as_real rewrites ATen graphs with complex tensors as graphs of
real pairs [..., 2]: complex inputs arrive as pairs (the boundary's inputs),
a product is computed on the parts, selected from the pairs, a complex
matrix product is one real product with a block matrix, FFTs are the
custom ops that import as `ptensor.fft`, and complex results leave as pairs
(the boundary's outputs)."""

import torch

from permalloy.lowering.capture import capture_aten_graphs
from permalloy.lowering.complex_as_real import complex_as_real
from permalloy.lowering.import_fx import import_graph

c64 = torch.complex64


def show(fn, *args):
    (graph,) = capture_aten_graphs(fn, *args)
    real = complex_as_real(graph)
    print(real.boundary)
    print(real.graph.code)
    print(import_graph(real.graph).module)


def product(z, w, x):
    return z * w + x


show(product, torch.randn(4, 8, dtype=c64), torch.randn(8, dtype=c64), torch.randn(4, 8))

# CHECK-LABEL: ComplexBoundary(inputs=(0, 1), outputs=(0,))
# CHECK:      def forward(self, arg0_1, arg1_1, arg2_1):
# CHECK-NEXT:     select = torch.ops.aten.select.int(arg0_1, 2, 0)
# CHECK-NEXT:     select_1 = torch.ops.aten.select.int(arg0_1, 2, 1)
# CHECK-NEXT:     select_2 = torch.ops.aten.select.int(arg1_1, 1, 0)
# CHECK-NEXT:     select_3 = torch.ops.aten.select.int(arg1_1, 1, 1)
# CHECK-NEXT:     mul = torch.ops.aten.mul.Tensor(select, select_2)
# CHECK-NEXT:     mul_1 = torch.ops.aten.mul.Tensor(select_1, select_3)
# CHECK-NEXT:     sub = torch.ops.aten.sub.Tensor(mul, mul_1)
# CHECK-NEXT:     mul_2 = torch.ops.aten.mul.Tensor(select, select_3)
# CHECK-NEXT:     mul_3 = torch.ops.aten.mul.Tensor(select_1, select_2)
# CHECK-NEXT:     add = torch.ops.aten.add.Tensor(mul_2, mul_3)
# CHECK-NEXT:     add_1 = torch.ops.aten.add.Tensor(sub, arg2_1)
# CHECK-NEXT:     unsqueeze = torch.ops.aten.unsqueeze.default(add_1, 2)
# CHECK-NEXT:     unsqueeze_1 = torch.ops.aten.unsqueeze.default(add, 2)
# CHECK-NEXT:     cat = torch.ops.aten.cat.default([unsqueeze, unsqueeze_1], -1)
# CHECK-NEXT:     return (cat,)
# CHECK:      func.func @forward(%0: !ptensor.tensor<[4, 8, 2], f32>, %1: !ptensor.tensor<[8, 2], f32>, %2: !ptensor.tensor<[4, 8], f32>) -> !ptensor.tensor<[4, 8, 2], f32>
# CHECK-NOT:  complex


def matrix_product(a, b):
    return a @ b


show(matrix_product, torch.randn(3, 5, dtype=c64), torch.randn(5, 4, dtype=c64))

# CHECK-LABEL: ComplexBoundary(inputs=(0, 1), outputs=(0,))
# CHECK:      func.func @forward(%0: !ptensor.tensor<[3, 5, 2], f32>, %1: !ptensor.tensor<[5, 4, 2], f32>) -> !ptensor.tensor<[3, 4, 2], f32>
# CHECK-NEXT:   %[[A:.+]] = ptensor.reshape %0 : !ptensor.tensor<[3, 5, 2], f32> -> !ptensor.tensor<[3, 10], f32>
# CHECK:        %[[BLOCK:.+]] = ptensor.reshape %{{.+}} : !ptensor.tensor<[5, 2, 4, 2], f32> -> !ptensor.tensor<[10, 8], f32>
# CHECK-NEXT:   %[[PRODUCT:.+]] = ptensor.mm %[[A]], %[[BLOCK]] : !ptensor.tensor<[3, 10], f32>, !ptensor.tensor<[10, 8], f32> -> !ptensor.tensor<[3, 8], f32>
# CHECK-NEXT:   %[[PAIR:.+]] = ptensor.reshape %[[PRODUCT]] : !ptensor.tensor<[3, 8], f32> -> !ptensor.tensor<[3, 4, 2], f32>
# CHECK-NEXT:   func.return %[[PAIR]]


def spectrum(x, w):
    return torch.fft.irfft(torch.fft.rfft(x) * w, n=8), torch.fft.fft(x.to(c64) * w[:1], norm="ortho")


show(spectrum, torch.randn(4, 8), torch.randn(5, dtype=c64))

# CHECK-LABEL: ComplexBoundary(inputs=(1,), outputs=(1,))
# CHECK:      fft_r2c = torch.ops.permalloy.fft_r2c.default(arg0_1, [1], 0, True)
# CHECK:      fft_c2r = torch.ops.permalloy.fft_c2r.default(cat, [1], 2, 8)
# CHECK:      fft_c2c = torch.ops.permalloy.fft_c2c.default(cat_1, [1], 1, True)
# CHECK:      func.func @forward(%0: !ptensor.tensor<[4, 8], f32>, %1: !ptensor.tensor<[5, 2], f32>) -> (!ptensor.tensor<[4, 8], f32>, !ptensor.tensor<[4, 8, 2], f32>)
# CHECK-NEXT:   %{{.+}} = ptensor.fft r2c %0 dims [1] normalization 0 onesided : !ptensor.tensor<[4, 8], f32> -> !ptensor.tensor<[4, 5, 2], f32>
# CHECK:        %{{.+}} = ptensor.fft c2r %{{.+}} dims [1] normalization 2 : !ptensor.tensor<[4, 5, 2], f32> -> !ptensor.tensor<[4, 8], f32>
# CHECK:        %{{.+}} = ptensor.fft c2c %{{.+}} dims [1] normalization 1 forward : !ptensor.tensor<[4, 8, 2], f32> -> !ptensor.tensor<[4, 8, 2], f32>
