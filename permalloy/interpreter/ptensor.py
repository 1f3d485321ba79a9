"""
The executable reference semantics of the ptensor dialect, on torch tensors.

Each op runs as the eager torch computation it stands for; the results are
checked against the declared result types under the size bindings of the
current call. The implementations live in four modules, by op family, and are
registered together here.
"""

from __future__ import annotations

from xdsl.interpreter import register_impls

from permalloy.interpreter.ptensor_data import DataFunctions
from permalloy.interpreter.ptensor_elementwise import ElementwiseFunctions
from permalloy.interpreter.ptensor_library import LibraryFunctions
from permalloy.interpreter.ptensor_sorting import SortFunctions


@register_impls
class PTensorFunctions(ElementwiseFunctions, DataFunctions, SortFunctions, LibraryFunctions):
    """
    Interpreter functions for every ptensor op. Tensors are `torch.Tensor`s;
    sizes are evaluated with the `SizeBindings` given at construction, which
    the `func` implementations (`SymbolicFuncFunctions`) fill at each call.
    """
