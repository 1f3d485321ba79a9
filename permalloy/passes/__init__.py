"""
permalloy's passes, by name, and the pass pipelines built from them.

Each transformation is one module in this package (conversions between levels
live in `permalloy.lowering`), an xDSL `ModulePass` whose options are dataclass
fields. `all_passes()` is the registry `permalloy-opt -p` and the torch.compile
backend both read, so a pipeline is the same text everywhere:

    canonicalize,cse,fuse-loops{max-kernel-size=64}

`build_pipeline` turns such a text into an xDSL `PassPipeline`, and says which
names and options are valid when the text names a pass or an option that does
not exist.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, get_args, get_type_hints

from xdsl.passes import ModulePass, PassPipeline, PassPipelineCallbackType
from xdsl.utils.arg_spec import ArgSpec, ArgSpecConvertible, parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError
from xdsl.utils.hints import isa, type_repr

PassFactory = Callable[[], type[ModulePass]]
ConfigurableT = TypeVar("ConfigurableT", bound=ArgSpecConvertible)


def check_option(name: str, value: str, valid: Iterable[str]) -> None:
    """Raise ValueError, listing the valid values, where a pass's option
    `name` has a value that is not one of them."""
    valid = tuple(valid)
    if value not in valid:
        raise ValueError(f"{name}={value!r} is not valid; valid values: {', '.join(valid)}")


def _canonicalize() -> type[ModulePass]:
    from xdsl.transforms.canonicalize import CanonicalizePass

    return CanonicalizePass


def _cse() -> type[ModulePass]:
    from xdsl.transforms.common_subexpression_elimination import (
        CommonSubexpressionElimination,
    )

    return CommonSubexpressionElimination


def _dce() -> type[ModulePass]:
    from xdsl.transforms.dead_code_elimination import DeadCodeElimination

    return DeadCodeElimination


def _convert_ptensor_to_loop() -> type[ModulePass]:
    from permalloy.lowering.convert_ptensor_to_loop import ConvertPtensorToLoopPass

    return ConvertPtensorToLoopPass


def _materialize_views() -> type[ModulePass]:
    from permalloy.passes.materialize_views import MaterializeViewsPass

    return MaterializeViewsPass


def _fuse_attention() -> type[ModulePass]:
    from permalloy.passes.fuse_attention import FuseAttentionPass

    return FuseAttentionPass


def _fuse_loops() -> type[ModulePass]:
    from permalloy.passes.fuse_loops import FuseLoopsPass

    return FuseLoopsPass


def _squeeze_leading_unit_dims() -> type[ModulePass]:
    from permalloy.passes.squeeze_leading_unit_dims import SqueezeLeadingUnitDimsPass

    return SqueezeLeadingUnitDimsPass


def _split_reductions() -> type[ModulePass]:
    from permalloy.passes.split_reductions import SplitReductionsPass

    return SplitReductionsPass


def _unfuse_bias_add() -> type[ModulePass]:
    from permalloy.passes.unfuse_bias_add import UnfuseBiasAddPass

    return UnfuseBiasAddPass


def _pad_products() -> type[ModulePass]:
    from permalloy.passes.pad_products import PadProductsPass

    return PadProductsPass


def _scatter_embedding_gradients() -> type[ModulePass]:
    from permalloy.passes.scatter_embedding_gradients import ScatterEmbeddingGradientsPass

    return ScatterEmbeddingGradientsPass


def _generate_depthwise_convolutions() -> type[ModulePass]:
    from permalloy.passes.generate_depthwise_convolutions import GenerateDepthwiseConvolutionsPass

    return GenerateDepthwiseConvolutionsPass


def _plan_layouts() -> type[ModulePass]:
    from permalloy.passes.plan_layouts import PlanLayoutsPass

    return PlanLayoutsPass


def _choose_depthwise_weight_gradients() -> type[ModulePass]:
    from permalloy.passes.choose_depthwise_weight_gradients import ChooseDepthwiseWeightGradientsPass

    return ChooseDepthwiseWeightGradientsPass


def _choose_depthwise_kernels() -> type[ModulePass]:
    from permalloy.passes.choose_depthwise_kernels import ChooseDepthwiseKernelsPass

    return ChooseDepthwiseKernelsPass


def _convolutions_as_products() -> type[ModulePass]:
    from permalloy.passes.convolutions_as_products import ConvolutionsAsProductsPass

    return ConvolutionsAsProductsPass


def _plan_memory() -> type[ModulePass]:
    from permalloy.passes.plan_memory import PlanMemoryPass

    return PlanMemoryPass


def _write_input_updates() -> type[ModulePass]:
    from permalloy.passes.write_input_updates import WriteInputUpdatesPass

    return WriteInputUpdatesPass


def _convert_loop_to_buffer() -> type[ModulePass]:
    from permalloy.lowering.convert_loop_to_buffer import ConvertLoopToBufferPass

    return ConvertLoopToBufferPass


def all_passes() -> dict[str, PassFactory]:
    """
    Every pass permalloy can run, by its pipeline name, each with a factory that
    imports it.

    Upstream xDSL passes permalloy reuses come first: `canonicalize` (folding
    and the ops' canonicalization patterns), `cse` (common subexpression
    elimination) and `dce` (dead code elimination). Then the conversions between
    levels (`permalloy.lowering`) and the transformations of this package. A new
    pass is one module and one entry here.
    """
    return {
        "canonicalize": _canonicalize,
        "cse": _cse,
        "dce": _dce,
        "unfuse-bias-add": _unfuse_bias_add,
        "pad-products": _pad_products,
        "scatter-embedding-gradients": _scatter_embedding_gradients,
        "generate-depthwise-convolutions": _generate_depthwise_convolutions,
        "convert-ptensor-to-loop": _convert_ptensor_to_loop,
        "split-reductions": _split_reductions,
        "materialize-views": _materialize_views,
        "squeeze-leading-unit-dims": _squeeze_leading_unit_dims,
        "fuse-attention": _fuse_attention,
        "fuse-loops": _fuse_loops,
        "convert-loop-to-buffer": _convert_loop_to_buffer,
        "plan-layouts": _plan_layouts,
        "convolutions-as-products": _convolutions_as_products,
        "choose-depthwise-kernels": _choose_depthwise_kernels,
        "choose-depthwise-weight-gradients": _choose_depthwise_weight_gradients,
        "write-input-updates": _write_input_updates,
        "plan-memory": _plan_memory,
    }


class PipelineError(ValueError):
    """
    A pipeline text that does not parse, or names an unknown pass, an unknown
    option or a value of the wrong type.
    """


def build_pipeline(
    text: str,
    available: dict[str, PassFactory] | None = None,
    callback: PassPipelineCallbackType | None = None,
) -> PassPipeline:
    """
    The pass pipeline a text such as `canonicalize,cse` describes.

    Passes are looked up in `available` (by default `all_passes()`); `callback`
    runs between passes as in `PassPipeline`. Raises `PipelineError` with a
    message that lists the valid names when the text is wrong.
    """
    available = all_passes() if available is None else available
    passes = tuple(
        _instantiate(spec, available) for spec in _parse_pipeline_text(text)
    )
    return PassPipeline(passes, callback)


def _parse_pipeline_text(text: str) -> list[ArgSpec]:
    try:
        return list(parse_pipeline(text))
    except ArgSpecParseError as error:
        raise PipelineError(spec_syntax_message(error, "pass pipeline")) from None


def spec_syntax_message(error: ArgSpecParseError, what: str) -> str:
    """xDSL's message for a spec that does not parse, naming what was parsed."""
    _, _, located = str(error).partition("\n")
    return f"cannot parse the {what}:\n{located.rstrip()}"


def _instantiate(spec: ArgSpec, available: dict[str, PassFactory]) -> ModulePass:
    if spec.name not in available:
        raise PipelineError(
            f"unknown pass '{spec.name}'{_suggestion(spec.name, available)}; "
            f"available passes: {', '.join(sorted(available))}"
        )
    return instantiate_from_spec(available[spec.name](), spec, "pass")


def instantiate_from_spec(
    configurable: type[ConfigurableT], spec: ArgSpec, kind: str
) -> ConfigurableT:
    """
    An instance of a pass or target class with the options a spec gives.

    `kind` ("pass", "target") names the thing in messages. Raises
    `PipelineError`, listing the valid options, for an unknown option, a value of
    the wrong type or a missing required option.
    """
    _check_option_names(configurable, spec, kind)
    _check_option_values(configurable, spec, kind)
    _check_required_options(configurable, spec, kind)
    try:
        return configurable.from_spec(spec)
    except ValueError as error:
        raise PipelineError(
            f"bad options for {kind} '{spec.name}': {error}; "
            f"{describe_options(configurable)}"
        ) from None


def _check_option_names(
    configurable: type[ArgSpecConvertible], spec: ArgSpec, kind: str
) -> None:
    known = {_option_name(f.name) for f in _option_fields(configurable)}
    for given in spec.parameters:
        if _option_name(given) not in known:
            raise PipelineError(
                f"{kind} '{spec.name}' has no option '{given}'"
                f"{_suggestion(_option_name(given), known)}; "
                f"{describe_options(configurable)}"
            )


def _check_option_values(
    configurable: type[ArgSpecConvertible], spec: ArgSpec, kind: str
) -> None:
    hints = get_type_hints(configurable)
    for given, values in spec.parameters.items():
        hint = hints[given.replace("-", "_")]
        if not _value_fits(values, hint):
            raise PipelineError(
                f"option '{_option_name(given)}' of {kind} '{spec.name}' expects "
                f"{type_repr(hint)}, got {_format_given(values)}; "
                f"{describe_options(configurable)}"
            )


def _format_given(values: tuple[Any, ...]) -> str:
    return f"'{_format_default(tuple(values))}'" if values else "no value"


def _check_required_options(
    configurable: type[ArgSpecConvertible], spec: ArgSpec, kind: str
) -> None:
    given = {_option_name(name) for name in spec.parameters}
    for name in sorted(configurable.required_fields()):
        if _option_name(name) not in given:
            raise PipelineError(
                f"{kind} '{spec.name}' needs option '{_option_name(name)}'; "
                f"{describe_options(configurable)}"
            )


def _value_fits(values: tuple[Any, ...], hint: Any) -> bool:
    """Whether option values convert to a field's type, as `from_spec` does."""
    if not values:
        return type(None) in get_args(hint)
    return (len(values) == 1 and isa(values[0], hint)) or isa(values, hint)


def describe_options(configurable: type[ArgSpecConvertible]) -> str:
    """`options of 'x': a (int, default 1), ...`, or that it takes none."""
    fields = _option_fields(configurable)
    if not fields:
        return f"'{configurable.name}' takes no options"
    hints = get_type_hints(configurable)
    described = ", ".join(
        _describe_option(f, hints.get(f.name, f.type)) for f in fields
    )
    return f"options of '{configurable.name}': {described}"


def _describe_option(option: dataclasses.Field[Any], hint: Any) -> str:
    text = f"{_option_name(option.name)} ({type_repr(hint)}"
    if option.default is not dataclasses.MISSING:
        text += f", default {_format_default(option.default)}"
    elif option.default_factory is not dataclasses.MISSING:
        text += f", default {_format_default(option.default_factory())}"
    else:
        text += ", required"
    return text + ")"


def _format_default(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return ",".join(_format_default(v) for v in value) or "()"
    return str(value)


def _option_fields(
    configurable: type[ArgSpecConvertible],
) -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(configurable) if f.init]


def _option_name(name: str) -> str:
    """Options are spelled with dashes on the command line: `max-kernel-size`."""
    return name.replace("_", "-")


def _suggestion(name: str, candidates: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(candidates), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""
