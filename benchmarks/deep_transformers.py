"""
Transformers at the depth people deploy (12 layers of BERT-base width), where
the suite's models have one or two: eager, Inductor and permalloy compiled in
one process, each checked against eager (relative error of the output),
timed in interleaved rounds of back-to-back calls, with each compiler's
summed kernel time from the profiler (wall minus kernels is host time).

    python benchmarks/deep_transformers.py --models llama,gpt2,bert --dtype bfloat16 --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import torch

from permalloy.tools.bench.timing import back_to_back_ms


def _llama(layers: int):
    import transformers

    config = transformers.LlamaConfig(
        vocab_size=32000, hidden_size=768, intermediate_size=3072, num_hidden_layers=layers,
        num_attention_heads=12, num_key_value_heads=12, max_position_embeddings=1024, attn_implementation="sdpa",
    )  # fmt: skip
    return transformers.LlamaForCausalLM(config)


def _gpt2(layers: int):
    import transformers

    config = transformers.GPT2Config(n_embd=768, n_layer=layers, n_head=12, n_positions=1024, attn_implementation="sdpa")
    return transformers.GPT2LMHeadModel(config)


def _bert(layers: int):
    import transformers

    config = transformers.BertConfig(num_hidden_layers=layers, attn_implementation="sdpa")
    return transformers.BertModel(config)


MODELS = {"llama": _llama, "gpt2": _gpt2, "bert": _bert}


def _output(result) -> torch.Tensor:
    for name in ("logits", "last_hidden_state"):
        if hasattr(result, name):
            return getattr(result, name)
    return result[0]


def _kernel_ms(run, inputs, calls: int = 5) -> float:
    activities = [torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as profile:
        for _ in range(calls):
            run(inputs)
        torch.cuda.synchronize()
    device_us = sum(e.device_time_total for e in profile.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    return device_us / calls / 1000


def measure(name: str, layers: int, dtype: torch.dtype, batch: int, seq: int, rounds: int) -> dict:
    torch.manual_seed(0)
    model = MODELS[name](layers).eval().to("cuda", dtype)
    tokens = torch.randint(0, 1000, (batch, seq), device="cuda")

    def forward(ids):
        return _output(model(input_ids=ids, use_cache=False) if name != "bert" else model(input_ids=ids))

    row: dict = {"model": name, "layers": layers, "dtype": str(dtype).removeprefix("torch."), "results": {}}
    runs = {}
    with torch.no_grad():
        expected = forward(tokens).float()
        for backend in ("eager", "inductor", "permalloy"):
            torch._dynamo.reset()  # noqa: SLF001
            run = forward if backend == "eager" else torch.compile(forward, backend=backend)
            begin = time.perf_counter()
            actual = run(tokens).float()
            torch.cuda.synchronize()
            error = ((actual - expected).norm() / expected.norm()).item()
            row["results"][backend] = {"first_call_s": time.perf_counter() - begin, "relative_error": error}
            runs[backend] = run
        calls = {backend: (lambda run=run: run(tokens)) for backend, run in runs.items()}
        medians = back_to_back_ms(calls, rounds, 3, torch.cuda.synchronize)
        for backend, run in runs.items():
            result = row["results"][backend]
            result["ms"] = medians[backend]
            result["kernel_ms"] = _kernel_ms(run, tokens)
    inductor = row["results"]["inductor"]["ms"]
    for result in row["results"].values():
        result["speedup_vs_inductor"] = inductor / result["ms"]
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default="llama,gpt2,bert")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--dtype", default="bfloat16", choices=["float32", "bfloat16", "float16"])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    rows = []
    for name in args.models.split(","):
        row = measure(name, args.layers, getattr(torch, args.dtype), args.batch, args.seq, args.rounds)
        rows.append(row)
        print(f"{name} x{args.layers} {args.dtype}: " + "  ".join(
            f"{b} {r['ms']:.3f} ms (kernels {r['kernel_ms']:.3f}, err {r['relative_error']:.1e}, "
            f"{r['speedup_vs_inductor']:.3f}x Inductor)" for b, r in row["results"].items()), flush=True)  # fmt: skip
        if args.json:
            with open(args.json, "w") as out:
                json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows}, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
