"""
The backend's warm start for graphs that traced-graph records do not cover
(training steps above all): AOTAutograd's own cache, which keeps what its
trace made of a Dynamo graph (the runtime metadata and wrappers, the forward
and backward graphs' compiled code) and rebuilds its autograd function in a
later process without tracing.

AOTAutograd caches a compiler's output when the compiler is a
`SerializableAOTDispatchCompiler` whose output is an `OutputCode` and its
cache is in bundled mode. `CompiledGraphCode` is that output here: the
compiled graph's runner, and what loading it again from the compiled-graph
cache needs (`loadable_record`), which is all that is pickled. On a hit,
AOTAutograd calls its `post_compile`, which loads the compiled graph; an
entry that is missing or does not load is a miss (`FXGraphCacheMiss`), and
the graph is traced and compiled again and its entry rewritten. A graph that
cannot be loaded so (symbolic sizes, captured constants, a graph run eagerly
after a failure) has no AOTAutograd entry. A training step's backward graph
is compiled on its first call (`PendingGraphCode`), its record known from
its import.

`autograd_cache_settings` is the configuration the backend's call runs in:
- AOTAutograd's cache bundled, and a training step's backward graph compiled
  with its forward graph (its non-lazy lowering), so that the pair is saved
  as one entry when the step is first traced;
- permalloy's rewrites of Dynamo's calls (`lowering/math_for_training.py`)
  marked cacheable, and the key given a digest of what the compilation
  depends on besides the graph (the compile material of the traced-graph
  key: options, target and its identity, software versions, torch's
  attention and einsum settings, the default dtype), through the values of
  torch's `unsafe_marked_cacheable_functions`, which AOTAutograd's key holds.

AOTAutograd keeps its entries under torch's cache directory
(`$TORCHINDUCTOR_CACHE_DIR`), which names the compiled-graph entries in
permalloy's (`$PERMALLOY_CACHE_DIR`). `torch.compiler.config.force_disable_caches`
or functorch's `enable_autograd_cache=False` turn AOTAutograd's cache off;
permalloy's `cache=False`, `PERMALLOY_CACHE=0` and dumping turn this whole
path off.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch._functorch.config as functorch_config
import torch._inductor.config as inductor_config
from torch._functorch._aot_autograd.autograd_cache import BypassAOTAutogradCache, FXGraphCacheMiss
from torch._inductor.output_code import OutputCode

from permalloy.cache.traced import TracedGraphRecord, compile_context
from permalloy.compiler import CompileOptions, compile_material
from permalloy.lowering.math_for_training import FUSED_FOR_INFERENCE, MATH_FOR_TRAINING
from permalloy.tools.graph_runners import compiled_runner
from permalloy.tools.traced_graphs import load_record


class CompiledGraphCode(OutputCode):
    """A compiled graph as AOTAutograd calls and caches it: its runner, in
    AOTAutograd's boxed calling convention, and `record`, what loading it
    again needs (None for a graph that cannot be loaded so, which keeps
    AOTAutograd from saving an entry)."""

    def __init__(self, runner: Callable[..., Any] | None, record: TracedGraphRecord | None, options: CompileOptions):
        super().__init__()
        self.runner = runner
        self.record = record
        self.options = options
        self._boxed_call = True

    def __call__(self, inputs: list[Any]) -> Any:
        if self.runner is None:
            raise RuntimeError("a compiled graph called before it was loaded")
        values = list(inputs)
        inputs.clear()
        return self.runner(*values)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["runner"] = None
        return state

    def prepare_for_serialization(self) -> None:
        if self.record is None:
            raise BypassAOTAutogradCache("permalloy cannot load this compiled graph from its cache")
        self.runner = None

    def post_compile(self, example_inputs: Sequence[Any], constants: Any, graph_kwargs: Any) -> None:
        """Load the compiled graph of a cache hit (AOTAutograd calls this
        before running it); a missing or damaged entry is a miss."""
        if self.runner is not None:
            return
        if self.record is None:
            raise FXGraphCacheMiss
        compiled = load_record(self.record, self.options)
        if compiled is None:
            raise FXGraphCacheMiss
        self.runner = compiled_runner(compiled, self.options, None, None, logged_when_called=True)

    def set_triton_bundle(self, triton_bundle: Any) -> None:
        """Triton's kernels are in the compiled-graph entry, not in a bundle."""


class PendingGraphCode(CompiledGraphCode):
    """A backward graph AOTAutograd hands the backend with its forward (its
    non-lazy lowering, so that the step is saved as one entry), compiled on
    its first call as a lazily lowered one would be: a forward run with
    gradients on never pays for a backward it does not run. AOTAutograd's
    cache keeps it as a `CompiledGraphCode` whose record comes from the
    graph's import (`record`): a later process loads the compiled graph
    where a call here compiled it, and misses (a new trace) where none did."""

    def __init__(
        self,
        compile: Callable[[], CompiledGraphCode],
        record: Callable[[], TracedGraphRecord | None],
        options: CompileOptions,
    ):
        super().__init__(None, None, options)
        self.compile = compile
        self.pending_record = record

    def __call__(self, inputs: list[Any]) -> Any:
        if self.runner is None:
            compiled = self.compile()
            self.runner, self.record = compiled.runner, compiled.record
        return super().__call__(inputs)

    def __reduce__(self) -> tuple[Any, ...]:
        record = self.record if self.runner is not None else self.pending_record()
        return (CompiledGraphCode, (None, record, self.options))


def autograd_cache_digest(options: CompileOptions) -> str | None:
    """The digest of what compiling a Dynamo graph with `options` (its target
    resolved) depends on besides the graph and its inputs, for AOTAutograd's
    key; None when the compiled-graph cache would not be used."""
    material = compile_material(options)
    if material is None:
        return None
    text = json.dumps(compile_context(material), sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def _rewrite_names() -> list[str]:
    """The qualified names of the functions permalloy points Dynamo's calls at
    before AOTAutograd traces them, as AOTAutograd's cacheability check names them."""
    functions = {*MATH_FOR_TRAINING.values(), *FUSED_FOR_INFERENCE.values()}
    return sorted(f"{f.__module__}.{f.__name__}" for f in functions)


@contextlib.contextmanager
def autograd_cache_settings(digest: str) -> Iterator[None]:
    """Within the block, AOTAutograd caches what it makes with a serializable
    compiler under a key that holds `digest` (see the module's docstring)."""
    marked = dict(inductor_config.unsafe_marked_cacheable_functions)
    marked.update(dict.fromkeys(_rewrite_names(), digest))
    marked["permalloy"] = digest
    with (
        functorch_config.patch(bundled_autograd_cache=True, force_non_lazy_backward_lowering=True),
        inductor_config.patch(unsafe_marked_cacheable_functions=marked),
    ):
        yield
