"""
torch's stable C shim: the `aoti_torch_*` functions libtorch exports for
AOTInductor's generated code, as a native host program calls them.

A tensor crosses the shim as an `AtenTensorHandle`, a pointer to an
`at::Tensor`. An `at::Tensor` is one word, the address of its `TensorImpl`,
which is what a Python tensor's `_cdata` gives: a word holding `_cdata` is a
borrowed handle of that tensor, valid while the Python tensor lives, which
costs no reference count. Handles the shim returns ("new references") are
owned and are given back with `aoti_torch_delete_tensor_object`. Every
function returns 0 on success.
"""

from __future__ import annotations

import ctypes
import os
import re
from dataclasses import dataclass
from functools import cache

import torch

from permalloy.targets.externs.recorded import RECORDED_OPS

SHIM_FUNCTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "aoti_torch_get_data_ptr": ("i32", ("ptr", "ptr")),
    "aoti_torch_get_sizes": ("i32", ("ptr", "ptr")),
    "aoti_torch_get_strides": ("i32", ("ptr", "ptr")),
    "aoti_torch_get_device_type": ("i32", ("ptr", "ptr")),
    "aoti_torch_get_device_index": ("i32", ("ptr", "ptr")),
    "aoti_torch_get_dtype": ("i32", ("ptr", "ptr")),
    "aoti_torch_is_contiguous": ("i32", ("ptr", "ptr")),
    "aoti_torch_empty_strided": ("i32", ("i64", "ptr", "ptr", "i32", "i32", "i32", "ptr")),
    "aoti_torch__reinterpret_tensor": ("i32", ("ptr", "i64", "ptr", "ptr", "i64", "ptr")),
    "aoti_torch_new_tensor_handle": ("i32", ("ptr", "ptr")),
    "aoti_torch_new_uninitialized_tensor": ("i32", ("ptr",)),
    "aoti_torch_delete_tensor_object": ("i32", ("ptr",)),
    "aoti_torch_copy_": ("i32", ("ptr", "ptr", "i32")),
}
"""The shim functions a native host program may call: name -> (result type,
parameter types), in LLVM's words (`ptr`, `i32`, `i64`, `f64`)."""

for _device in ("cpu", "cuda"):
    SHIM_FUNCTIONS.update({
        f"aoti_torch_{_device}_mm_out": ("i32", ("ptr", "ptr", "ptr")),
        f"aoti_torch_{_device}_bmm_out": ("i32", ("ptr", "ptr", "ptr")),
        f"aoti_torch_{_device}_addmm_out": ("i32", ("ptr", "ptr", "ptr", "ptr", "f64", "f64")),
        f"aoti_torch_{_device}_convolution": (
            "i32",
            ("ptr", "ptr", "ptr", "ptr", "i64", "ptr", "i64", "ptr", "i64", "i32", "ptr", "i64", "i64", "ptr"),
        ),
        f"aoti_torch_{_device}_convolution_backward": (
            "i32",
            ("ptr", "ptr", "ptr", "ptr", "i64", "ptr", "i64", "ptr", "i64", "ptr", "i64", "i32", "ptr", "i64",
             "i64", "ptr", "i64", "ptr", "ptr", "ptr"),
        ),
    })  # fmt: skip
SHIM_FUNCTIONS["aoti_torch_get_current_cuda_stream"] = ("i32", ("i32", "ptr"))
SHIM_FUNCTIONS["cuLaunchKernel"] = (
    "i32",
    ("ptr", "i32", "i32", "i32", "i32", "i32", "i32", "i32", "ptr", "ptr", "ptr"),
)  # the CUDA driver's, which launches a loaded CUDA function
SHIM_FUNCTIONS["cuMemsetD8Async"] = ("i32", ("i64", "i8", "i64", "ptr"))  # the driver's: bytes set on a stream

SCHEMA_TYPES: dict[str, tuple[str, ...]] = {
    "Tensor": ("ptr",), "Optional[Tensor]": ("ptr",), "bool": ("i32",), "float": ("f64",),
    "Optional[float]": ("ptr",), "int": ("i64",), "SymInt": ("i64",), "List[bool]": ("ptr", "i64"),
}  # fmt: skip
"""How the shim passes each type of an op's schema: a tensor as its handle,
an optional one or an optional float as a pointer to it (null for None), a
bool as an `int32_t`, a list of bools as a pointer to `int32_t`s and their
count; every result through a pointer."""

_DECLARED_TYPES = {
    "AtenTensorHandle": "ptr", "AtenTensorHandle*": "ptr", "int32_t": "i32", "double": "f64", "double*": "ptr",
    "int64_t": "i64", "int64_t*": "ptr", "const int32_t*": "ptr",
}  # fmt: skip
"""The same, for the C types of the shim's header."""


def schema_parameters(op_name: str) -> tuple[str, ...] | None:
    """The parameter types of the shim function of the ATen op `op_name` as
    its schema in this torch gives them (arguments, then a pointer per
    result); None where the op is not there or takes a type the shim passes
    otherwise."""
    overload = getattr(getattr(torch.ops.aten, op_name, None), "default", None)
    if overload is None:
        return None
    schema = overload._schema
    types = [SCHEMA_TYPES.get(str(argument.type)) for argument in schema.arguments]
    if None in types:
        return None
    return (*(t for pair in types for t in pair), *("ptr" for _ in schema.returns))  # type: ignore[union-attr]


def declared_parameters(device: str, op_name: str) -> tuple[str, ...] | None:
    """The parameter types of `aoti_torch_<device>_<op_name>` as the shim's
    header in this torch's package declares them; None where the header or
    the function is not there, or a type is not one of `_DECLARED_TYPES`."""
    text = _header(device)
    found = None if text is None else re.search(rf"\baoti_torch_{device}_{re.escape(op_name)}\(([^)]*)\);", text)
    if found is None:
        return None
    types = [_DECLARED_TYPES.get(parameter.rsplit(" ", 1)[0].strip()) for parameter in found.group(1).split(",")]
    return None if None in types else tuple(types)  # type: ignore[arg-type]


@cache
def _header(device: str) -> str | None:
    """The text of the shim's header for `device` in this torch's package,
    None where it is not there."""
    header = os.path.join(
        os.path.dirname(torch.__file__), "include", "torch", "csrc", "inductor", "aoti_torch", "generated", f"c_shim_{device}.h"
    )
    try:
        with open(header) as file:
            return file.read()
    except OSError:
        return None


def _recorded_shim_functions() -> dict[str, tuple[str, tuple[str, ...]]]:
    """The shim functions of `RECORDED_OPS` a native host program may call:
    those whose header, shipped with this torch, declares the parameters the
    op's schema gives (the shim keeps an old signature where a schema changed)."""
    functions = {}
    for device, ops in RECORDED_OPS.items():
        for op in ops:
            parameters = schema_parameters(op)
            if parameters is not None and parameters == declared_parameters(device, op):
                functions[f"aoti_torch_{device}_{op}"] = ("i32", parameters)
    return functions


SHIM_FUNCTIONS.update(_recorded_shim_functions())


@dataclass(frozen=True)
class Shim:
    """The shim of this process's libtorch: each function's address, and the
    codes it gives dtypes and device types."""

    addresses: dict[str, int]
    """The address of each function of `SHIM_FUNCTIONS` this process has
    (the CUDA ones where torch was built with CUDA and a driver is there)."""
    dtype_codes: dict[torch.dtype, int]
    device_codes: dict[str, int]

    def dtype_code(self, dtype: torch.dtype) -> int | None:
        return self.dtype_codes.get(dtype)


_DTYPE_NAMES = {
    torch.bool: "bool", torch.uint8: "uint8", torch.int8: "int8", torch.int16: "int16",
    torch.int32: "int32", torch.int64: "int64", torch.float16: "float16", torch.bfloat16: "bfloat16",
    torch.float32: "float32", torch.float64: "float64",
}  # fmt: skip


def _library(name: str) -> ctypes.CDLL | None:
    """A library of torch's package, or the system's where `name` has no
    folder (the CUDA driver); None where it is not there."""
    path = os.path.join(os.path.dirname(torch.__file__), "lib", name) if name.startswith("libtorch") else name
    try:
        return ctypes.CDLL(path)
    except OSError:
        return None


REQUIRED = ("aoti_torch_empty_strided", "aoti_torch_delete_tensor_object", "aoti_torch_get_data_ptr")
"""Functions without which no native host program runs."""


@cache
def load_shim() -> Shim | None:
    """The shim of the libtorch this process runs (and on a machine with a
    GPU, of its CUDA library and the driver), None where it lacks the
    functions every native host program calls (a build without the C shim,
    or one whose library is not where torch's package keeps it)."""
    library = _library("libtorch_cpu.so")
    if library is None:
        return None
    libraries = [library]
    if torch.cuda.is_available():
        libraries += [lib for lib in (_library("libtorch_cuda.so"), _library("libcuda.so.1")) if lib is not None]
    addresses = {}
    for name in SHIM_FUNCTIONS:
        for candidate in libraries:
            function = getattr(candidate, name, None)
            if function is not None:
                addresses[name] = ctypes.cast(function, ctypes.c_void_p).value
                break
    if not all(name in addresses for name in REQUIRED):
        return None
    codes = {}
    for dtype, name in _DTYPE_NAMES.items():
        code = getattr(library, f"aoti_torch_dtype_{name}", None)
        if code is not None:
            code.restype = ctypes.c_int32
            codes[dtype] = int(code())
    devices = {}
    for device in ("cpu", "cuda"):
        code = getattr(library, f"aoti_torch_device_type_{device}", None)
        if code is not None:
            code.restype = ctypes.c_int32
            devices[device] = int(code())
    return Shim(addresses, codes, devices)
