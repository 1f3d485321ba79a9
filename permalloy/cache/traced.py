"""
Traced graphs: Dynamo's graph of an inference call, mapped to the
compiled-graph entry its ATen graph compiled to.

A compiled-graph entry's key is computed from the imported ptensor IR, so a
warm first call otherwise still runs AOTAutograd's trace and permalloy's
import only to find the entry (MobileNetV2 on a CPU: 3 s of AOTAutograd and
0.3 s of import before a 0.3 s load). A traced-graph record skips both. It
is written after an inference graph compiles, keyed on what decides that
ATen graph:
- Dynamo's graph as code (only of torch's functions, ATen and prims
  operators and Python builtins: a custom op or a function of the user's
  may change under the same name);
- its inputs' types, sizes, strides, devices, gradient flags, and which of
  them share storage;
- the grad and autocast modes, the default dtype, and the settings of
  torch's attention kernels and einsum, which the trace reads;
- AOTAutograd's configuration;
- the compile options, target and devices;
- the software versions (those of the compiled-graph key).

It holds the entry's digest and what the import said of the graph's outputs.
A record is written only where AOTAutograd's wrapper around the inference
graph does nothing but call it with gradients off (and bump the version
counters of the inputs it updates). That means Dynamo's
inputs are the graph's, with no parameters lifted and no duplicate
arguments, and there are no input mutations or aliasing outputs for the
wrapper to replay, no effect tokens, no functionalized randomness, no tensor
subclasses and no autocast. The graph must also have static sizes and no
large constants. A record whose entry is missing or does not load is
ignored: the graph is traced and compiled as on a miss, and the record is
written again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch._functorch.config as functorch_config
from torch.multiprocessing.reductions import StorageWeakRef
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from permalloy.cache.files import cache_dir, write_bytes_atomically
from permalloy.cache.key import CacheKey, device_identity, software_versions

TRACED_FORMAT = 1
"""The version of the record's layout and of its key; a change makes every old record a miss."""

Scalar = None | bool | int | float


@dataclass(frozen=True)
class TracedGraphRecord:
    """What a warm first call of a traced graph needs besides the compiled-graph entry."""

    entry: str
    """The digest of the compiled-graph entry of the graph's ATen graph."""
    outputs: tuple[int | tuple[Scalar], ...]
    """Per output of Dynamo's graph: the host function's result number it is,
    or a 1-tuple holding its plain value (None, a number)."""
    cpu_outputs: tuple[int, ...]
    """The outputs eager makes on the CPU in a graph computing on a GPU."""
    fallback_ops: tuple[str, ...]
    fallback_reasons: tuple[str, ...]
    bumped_inputs: tuple[int, ...] = ()
    """The inputs the graph updates whose version counters AOTAutograd's
    wrapper bumps at each call (updates autograd sees)."""

    def to_json(self) -> bytes:
        fields = {
            "format": TRACED_FORMAT,
            "entry": self.entry,
            "outputs": [o if isinstance(o, int) else {"value": o[0]} for o in self.outputs],
            "cpu_outputs": list(self.cpu_outputs),
            "fallback_ops": list(self.fallback_ops),
            "fallback_reasons": list(self.fallback_reasons),
            "bumped_inputs": list(self.bumped_inputs),
        }
        return json.dumps(fields).encode()

    @staticmethod
    def from_json(data: bytes) -> TracedGraphRecord:
        """The record `data` holds; ValueError (or KeyError, TypeError) when it
        is damaged or of another format."""
        fields = json.loads(data)
        if not isinstance(fields, dict):
            raise ValueError(f"a {type(fields).__name__}, expected an object")
        if fields.get("format") != TRACED_FORMAT:
            raise ValueError(f"format {fields.get('format')!r}, expected {TRACED_FORMAT}")
        outputs: list[int | tuple[Scalar]] = []
        for output in fields["outputs"]:
            if isinstance(output, int) and not isinstance(output, bool):
                outputs.append(output)
            elif isinstance(output, dict) and isinstance(output["value"], Scalar):  # type: ignore[arg-type]
                outputs.append((output["value"],))
            else:
                raise ValueError(f"an output of unknown form {output!r}")
        cpu_outputs = tuple(int(p) for p in fields["cpu_outputs"])
        if not all(0 <= p < len(outputs) for p in cpu_outputs):
            raise ValueError(f"CPU outputs {cpu_outputs} of {len(outputs)} outputs")
        return TracedGraphRecord(
            str(fields["entry"]),
            tuple(outputs),
            cpu_outputs,
            tuple(str(o) for o in fields["fallback_ops"]),
            tuple(str(r) for r in fields["fallback_reasons"]),
            tuple(int(p) for p in fields["bumped_inputs"]),
        )


def traced_graph_key(
    graph: torch.fx.GraphModule, example_inputs: list[Any], compile_material: dict[str, Any]
) -> CacheKey | None:
    """The key of Dynamo's `graph` called on `example_inputs`, compiled with
    what `compile_material` says (options, target and its identity); None
    where the graph cannot have a record (see the module's docstring)."""
    inputs = _input_signature(example_inputs)
    if inputs is None or torch._C._is_any_autocast_enabled():  # noqa: SLF001
        return None
    if any(True for _ in graph.parameters()) or any(True for _ in graph.buffers()):
        return None
    if not all(_keyed_by_name(node) for node in graph.graph.nodes) or _returns_subclasses(graph):
        return None
    devices = {t.device for t in example_inputs}
    material = {
        "format": TRACED_FORMAT,
        "graph": hashlib.sha256(graph.code.encode()).hexdigest(),
        "inputs": inputs,
        "grad": torch.is_grad_enabled(),
        "aot_autograd": _aot_autograd_settings(),
        "devices": sorted(device_identity(d) for d in devices),
        **compile_context(compile_material),
    }
    text = json.dumps(material, sort_keys=True, default=repr)
    return CacheKey(hashlib.sha256(text.encode()).hexdigest(), material)


KEYED_OP_NAMESPACES = ("aten", "prims")
"""The namespaces of operators whose meaning their name says, for the key:
an operator of another (a custom op) may be redefined under the same name."""


def _keyed_by_name(node: torch.fx.Node) -> bool:
    """Whether the graph's code says all of what `node` does: not a module
    or attribute of the graph (get_attr, call_module), and a call of torch's
    own functions, an ATen or prims operator, or a Python builtin, not of a
    function of the user's (allowed in the graph) or a custom op."""
    if node.op in ("get_attr", "call_module"):
        return False
    if node.op != "call_function":
        return True
    target = node.target
    if isinstance(target, torch._ops.OpOverload | torch._ops.OpOverloadPacket):  # noqa: SLF001
        return target.namespace in KEYED_OP_NAMESPACES
    if isinstance(target, torch._ops.HigherOrderOperator):  # noqa: SLF001
        return False
    module = getattr(target, "__module__", None) or ""
    return module.split(".")[0] in ("torch", "_operator", "operator", "math", "builtins")


def _returns_subclasses(graph: torch.fx.GraphModule) -> bool:
    """Whether an output of Dynamo's `graph` is a tensor subclass, which
    AOTAutograd's wrapper would make of the compiled graph's outputs."""
    values: list[Any] = []
    for node in graph.graph.nodes:
        if node.op == "output":
            torch.fx.node.map_arg(node.args, lambda n: values.append(n.meta.get("example_value")))
    return any(is_traceable_wrapper_subclass(v) for v in values if isinstance(v, torch.Tensor))


def _input_signature(example_inputs: list[Any]) -> list[list[Any]] | None:
    """Per input: its type, dtype, sizes, strides, offset, device, gradient
    flag and the first input sharing its storage; None unless every input is
    a plain strided tensor (or parameter) of static sizes without a
    conjugate or negative bit, and no two are the same tensor."""
    signature = []
    storages: list[StorageWeakRef] = []
    for position, value in enumerate(example_inputs):
        if type(value) not in (torch.Tensor, torch.nn.Parameter):  # no subclass
            return None
        if value.layout != torch.strided or value.is_neg() or value.is_conj():
            return None
        if any(value is other for other in example_inputs[:position]):
            return None
        sizes, strides = value.shape, value.stride()
        if not all(isinstance(n, int) for n in (*sizes, *strides, value.storage_offset())):
            return None
        storage = StorageWeakRef(value.untyped_storage())
        shared = next((i for i, s in enumerate(storages) if s.cdata == storage.cdata), position)
        storages.append(storage)
        signature.append(
            [
                "parameter" if isinstance(value, torch.nn.Parameter) else "tensor",
                str(value.dtype),
                list(sizes),
                list(strides),
                value.storage_offset(),
                str(value.device),
                value.requires_grad,
                shared,
            ]
        )
    return signature


def compile_context(compile_material: dict[str, Any]) -> dict[str, Any]:
    """What a key over a graph before AOTAutograd's trace holds besides the
    graph and its inputs: `compile_material` (options, target and its
    identity), the software versions, the default dtype and torch's
    settings that the trace reads (`tracing_settings`)."""
    return {
        "compile": compile_material,
        "versions": software_versions(),
        "default_dtype": str(torch.get_default_dtype()),
        "tracing_settings": tracing_settings(),
    }


def tracing_settings() -> list[Any]:
    """torch's settings that AOTAutograd's trace reads and Dynamo's graph does
    not show: which fused attention kernels `scaled_dot_product_attention`
    may decompose to, and how `einsum` orders its contractions."""
    cuda = torch.backends.cuda
    flags = [
        cuda.flash_sdp_enabled(),
        cuda.mem_efficient_sdp_enabled(),
        cuda.math_sdp_enabled(),
        cuda.cudnn_sdp_enabled(),
    ]
    reduction = getattr(cuda, "fp16_bf16_reduction_math_sdp_allowed", None)
    if reduction is not None:
        flags.append(reduction())
    einsum = torch.backends.opt_einsum
    return [flags, einsum.enabled, str(einsum.strategy)]


def _aot_autograd_settings() -> str:
    """A digest of AOTAutograd's configuration (functorch's config module)."""
    settings = functorch_config.get_config_copy()
    text = json.dumps({k: repr(v) for k, v in sorted(settings.items())})
    return hashlib.sha256(text.encode()).hexdigest()


class TracedGraphs:
    """Traced-graph records on disk, under `directory/traced` (by default,
    under permalloy's cache directory)."""

    def __init__(self, directory: Path | None = None):
        self.directory = (directory or cache_dir()) / "traced"

    def path(self, key: CacheKey) -> Path:
        return self.directory / f"{key.digest}.json"

    def load(self, key: CacheKey) -> TracedGraphRecord | None:
        """The record of `key`; None when there is none or it is damaged (a
        damaged record is a miss, replaced after the graph compiles)."""
        try:
            return TracedGraphRecord.from_json(self.path(key).read_bytes())
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def store(self, key: CacheKey, record: TracedGraphRecord) -> None:
        """Write the record of `key`; a cache that cannot be written keeps
        none (the compiled-graph cache warns of that itself)."""
        try:
            write_bytes_atomically(self.path(key), record.to_json())
        except OSError:
            pass
