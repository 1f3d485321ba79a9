"""
Architectures beyond the models suite: each compiled with permalloy from a
small random-weight configuration and checked against eager, on the CPU
(LLVM target) or a GPU. Hugging Face text models (token ids, and decoder ids
for encoder-decoders), Hugging Face vision models (pixel values) and timm
models (images of `--image` pixels, or the model's own fixed size). A row
says whether the compiled output matched eager (relative error under 1e-4),
the error (timm models compare their features before the classifier,
which timm initializes to zeros for some), the seconds it took, permalloy's warnings (fallbacks, graphs run
eagerly) and, for a model that eager itself cannot build or run at these
sizes, why it was skipped.

    python benchmarks/architecture_sweep.py --source hf-text --json text.jsonl
    python benchmarks/architecture_sweep.py --source timm --models resnest14d,volo_d1_224

`--target triton` on the CPU compiles for the Triton target and runs its
kernels in Triton's interpreter: slow, but the GPU target's kernels checked
on real architectures without a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import warnings
from collections.abc import Callable

import torch

HF_TEXT = (
    "albert bart bert big_bird biogpt bloom camembert codegen convbert ctrl data2vec-text deberta deberta-v2 "
    "distilbert electra ernie esm falcon flaubert fnet gemma gemma2 gemma3_text gpt2 gpt_bigcode gpt_neo "
    "gpt_neox gptj granite ibert jetmoe layoutlm led llama longformer m2m_100 marian mbart megatron-bert "
    "mistral mixtral mobilebert mpnet mpt mt5 mvp nemotron nystromformer olmo olmo2 opt pegasus persimmon phi "
    "phi3 plbart qwen2 qwen2_moe qwen3 rembert roberta roberta-prelayernorm roc_bert roformer smollm3 "
    "squeezebert stablelm starcoder2 t5 umt5 xglm xlm xlm-roberta xlnet yoso cohere"
).split()
HF_VISION = (
    "vit deit beit swin swinv2 convnext convnextv2 resnet regnet mobilenet_v2 mobilevit mobilevitv2 "
    "efficientnet dinov2 levit poolformer segformer yolos bit cvt dpt glpn focalnet pvt pvt_v2 vit_msn "
    "data2vec-vision hiera rt_detr mask2former clip_vision_model siglip_vision_model"
).split()
TIMM = (
    "cspresnet50 dpn68 hrnet_w18_small res2net50_14w_8s resnest14d skresnet18 selecsls42b rexnet_100 mixnet_s "
    "fbnetc_100 lcnet_050 mnasnet_100 nf_resnet26 repvgg_a2 repvit_m1 efficientvit_b0 fastvit_t8 mobileone_s0 "
    "edgenext_xx_small coat_lite_tiny twins_svt_small pit_ti_224 xcit_nano_12_p16_224 cait_xxs24_224 "
    "gcvit_xxtiny maxvit_tiny_tf_224 coatnet_0_rw_224 efficientformerv2_s0 vgg11 inception_v4 xception41 "
    "ghostnetv2_100 resnetv2_50 ese_vovnet19b_dw regnetz_005 eva02_tiny_patch14_224 hgnet_tiny "
    "inception_next_tiny sequencer2d_s gmlp_ti16_224 resmlp_12_224 vit_relpos_small_patch16_224 visformer_tiny "
    "halonet26t botnet26t_256 lambda_resnet26t volo_d1_224 tresnet_m dla34 crossvit_tiny_240"
).split()
SOURCES = {"hf-text": HF_TEXT, "hf-vision": HF_VISION, "timm": TIMM}

SMALL_TEXT = dict(
    hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128, vocab_size=512,
    d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
    encoder_ffn_dim=128, decoder_ffn_dim=128, num_key_value_heads=2, n_embd=64, n_layer=2, n_head=4,
    max_position_embeddings=128, num_layers=2, num_heads=4, d_ff=128, d_kv=16, ffn_dim=128, n_positions=128,
)  # fmt: skip
"""Small sizes, set on a configuration where it has the field."""
KEEP_DEFAULTS = {"swin", "swinv2", "convnext", "convnextv2", "squeezebert", "esm"}
"""Configurations whose sizes are per stage or tied together: their defaults."""
EXTRA = {
    "codegen": dict(rotary_dim=8),
    "gptj": dict(rotary_dim=8),
    "marian": dict(pad_token_id=0, decoder_start_token_id=0),
    "phi3": dict(pad_token_id=0),
    "smollm3": dict(pad_token_id=0),
    "esm": dict(pad_token_id=1, mask_token_id=2),
}
"""Fields a model needs beside the small sizes (rotary widths, padding ids)."""
TOLERANCE = 1e-4


class _Timeout(Exception):
    pass


def _raise_timeout(*_: object) -> None:
    raise _Timeout


def _hf_config(model_type: str, small: bool):
    from transformers import AutoConfig

    config = AutoConfig.for_model(model_type)
    if small and model_type not in KEEP_DEFAULTS:
        for field, value in SMALL_TEXT.items():
            if hasattr(config, field):
                setattr(config, field, value)
    for field, value in EXTRA.get(model_type, {}).items():
        setattr(config, field, value)
    return config


def _first_tensor(output) -> torch.Tensor:
    while isinstance(output, tuple | list):
        output = output[0]
    for field in ("last_hidden_state", "logits", "pooler_output"):
        if getattr(output, field, None) is not None:
            return getattr(output, field)
    return output


def _hf_case(model_type: str, vision: bool, device: str) -> tuple[torch.nn.Module, dict]:
    from transformers import AutoModel

    torch.manual_seed(0)
    config = _hf_config(model_type, small=not vision)
    model = AutoModel.from_config(config).eval().to(device)
    if vision:
        size = getattr(config, "image_size", 224)
        size = size if isinstance(size, int) else size[0]
        channels = getattr(config, "num_channels", 3)
        return model, {"pixel_values": torch.randn(2, channels, size, size, device=device)}
    ids = torch.randint(0, 500, (2, 32), device=device)
    keywords = {"input_ids": ids}
    if getattr(config, "is_encoder_decoder", False):
        keywords["decoder_input_ids"] = ids[:, :16]
    return model, keywords


class _Features(torch.nn.Module):
    """A timm model's features before its classifier, which timm initializes
    to zeros for some models (their logits would be 0 for any input)."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model.forward_features(x)


def _timm_case(name: str, image: int, device: str) -> tuple[torch.nn.Module, dict]:
    import timm

    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False, num_classes=10).eval().to(device)
    settings = model.pretrained_cfg or {}
    size = settings["input_size"][-1] if settings.get("fixed_input_size") else image
    return _Features(model), {"x": torch.randn(2, 3, size, size, device=device)}


def _run(build: Callable[[], tuple[torch.nn.Module, dict]], options: dict) -> dict:
    try:
        model, keywords = build()
        with torch.no_grad():
            expected = _first_tensor(model(**keywords)).float()
    except Exception as error:  # noqa: BLE001 - eager cannot run it at these sizes
        return {"status": "skipped", "why": f"{type(error).__name__}: {error}"[:300]}
    torch._dynamo.reset()  # noqa: SLF001
    with warnings.catch_warnings(record=True) as caught, torch.no_grad():
        warnings.simplefilter("always")
        try:
            compiled = torch.compile(model, backend="permalloy", options=options)
            actual = _first_tensor(compiled(**keywords)).float()
        except Exception as error:  # noqa: BLE001 - reported in the row
            return {"status": "error", "error": f"{type(error).__name__}: {error}"[:400]}
    if float(expected.abs().max()) < torch.finfo(torch.float32).tiny:
        # random weights can make activations vanish; kernels may flush subnormals
        return {"status": "zero-output", "why": "eager's output is zeros or subnormal: nothing to compare"}
    error = ((actual.double() - expected.double()).norm() / expected.double().norm()).item()
    notes = sorted({str(w.message)[:200] for w in caught if "permalloy" in str(w.message)})
    return {"status": "ok" if error < TOLERANCE else "mismatch", "relative_error": error, "warnings": notes}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", choices=sorted(SOURCES), default="hf-text")
    parser.add_argument("--models", help="comma-separated; default: every model of the source")
    parser.add_argument("--device", default="cpu")
    parser.add_argument(
        "--target", choices=("llvm", "triton"), default=None,
        help="permalloy's kernel target (default: llvm on the CPU, the device's otherwise); "
        "triton on the CPU runs its kernels in Triton's interpreter",
    )  # fmt: skip
    parser.add_argument("--image", type=int, default=96, help="timm's image side where the model takes any")
    parser.add_argument("--timeout", type=int, default=300, help="seconds a model may take")
    parser.add_argument("--json", help="write one JSON row per model to this file")
    args = parser.parse_args(argv)
    names = args.models.split(",") if args.models else SOURCES[args.source]
    target = args.target or ("llvm" if args.device == "cpu" else None)
    options = {"target": target} if target is not None else {}
    if target == "triton" and args.device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"
    rows = []
    for name in names:
        if args.source == "timm":
            build = lambda name=name: _timm_case(name, args.image, args.device)  # noqa: E731
        else:
            build = lambda name=name: _hf_case(name, args.source == "hf-vision", args.device)  # noqa: E731
        signal.signal(signal.SIGALRM, _raise_timeout)
        signal.alarm(args.timeout)
        started = time.perf_counter()
        try:
            row = {"model": name, **_run(build, options)}
        except _Timeout:
            row = {"model": name, "status": "timeout"}
        finally:
            signal.alarm(0)
        row["seconds"] = round(time.perf_counter() - started, 1)
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.json:
            with open(args.json, "w") as out:
                out.write("".join(json.dumps(r) + "\n" for r in rows))
    counts = {status: sum(r["status"] == status for r in rows) for status in ("ok", "mismatch", "error", "skipped", "zero-output", "timeout")}
    print(json.dumps({"source": args.source, "device": args.device, "target": target, **counts}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
