"""Writes small checkpoints with compressed-tensors' own code (torch on the
CPU): a tiny Llama-shaped model of nn.Linear layers, quantised with
apply_quantization_config and a preset scheme, its weight scales computed by
compressed-tensors' calculate_qparams (and generate_gparam for NVFP4's
global scale) from the weights' min/max, compressed by ModelCompressor and
saved as safetensors with the config ModelCompressor.update_config writes.

What this relies on (compressed-tensors 0.20.1, the installed package):
  - quantization/quant_scheme.py@0.20.1: the preset schemes (FP8, FP8_DYNAMIC,
    FP8_BLOCK, NVFP4A16, MXFP4A16, W4A16, W8A16) and preset_name_to_scheme.
  - quantization/lifecycle/apply.py@0.20.1: apply_quantization_config
    registers weight_scale (and weight_global_scale, input_scale) on every
    targeted module, in the shapes of lifecycle/initialize.py@0.20.1
    initialize_qparams (tensor [1], channel [N, 1], group [N, K/g], block
    [ceil(N/bm), ceil(K/bn)]), of the weight's dtype unless the scheme sets
    scale_dtype.
  - quantization/utils/helpers.py@0.20.1: calculate_qparams(min, max, args,
    global_scale) makes the scales from the observed min/max (the observers
    themselves live in llm-compressor, not here: the min/max reduction over
    the strategy's groups is done below with torch); generate_gparam the
    NVFP4 global scale.
  - compressors/model_compressors/model_compressor.py@0.20.1:
    ModelCompressor.from_pretrained_model infers the format
    (compressors/format.py@0.20.1), compress_model compresses every
    quantised module, update_config writes config.json's
    quantization_config.
"""

import json
import math

import torch
from compressed_tensors.compressors import ModelCompressor
from compressed_tensors.quantization import (
    QuantizationConfig,
    QuantizationStrategy,
    apply_quantization_config,
    preset_name_to_scheme,
)
from compressed_tensors.quantization.utils import calculate_qparams, generate_gparam
from safetensors.torch import save_file

HIDDEN, INTER, VOCAB = 256, 512, 64


class Block(torch.nn.Module):
    def __init__(self, dtype):
        super().__init__()
        self.self_attn = torch.nn.Module()
        for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
            setattr(self.self_attn, n, torch.nn.Linear(HIDDEN, HIDDEN, bias=False, dtype=dtype))
        self.mlp = torch.nn.Module()
        self.mlp.gate_proj = torch.nn.Linear(HIDDEN, INTER, bias=False, dtype=dtype)
        self.mlp.up_proj = torch.nn.Linear(HIDDEN, INTER, bias=False, dtype=dtype)
        # 200 output rows: not a multiple of a 128-row block (a partial block)
        self.mlp.down_proj = torch.nn.Linear(INTER, 200, bias=False, dtype=dtype)
        self.input_layernorm = torch.nn.RMSNorm(HIDDEN, dtype=dtype)


class Tiny(torch.nn.Module):
    """model.embed_tokens, model.layers.{0,1}.{self_attn,mlp}.*, lm_head:
    the module names of a Hugging Face Llama."""

    def __init__(self, dtype, seed):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.model = torch.nn.Module()
        self.model.embed_tokens = torch.nn.Embedding(VOCAB, HIDDEN, dtype=dtype)
        self.model.layers = torch.nn.ModuleList([Block(dtype) for _ in range(2)])
        self.lm_head = torch.nn.Linear(HIDDEN, VOCAB, bias=False, dtype=dtype)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_((torch.randn(p.shape, generator=g) * 0.05).to(dtype))


def _minmax(w, args):
    """The observed min and max of weight w over each group of the
    strategy, in the shape of its scale (initialize_qparams)."""
    n, k = w.shape
    s = args.strategy
    if s == QuantizationStrategy.TENSOR:
        return w.amin().reshape(1), w.amax().reshape(1)
    if s == QuantizationStrategy.CHANNEL:
        return w.amin(dim=1, keepdim=True), w.amax(dim=1, keepdim=True)
    if s in (QuantizationStrategy.GROUP, QuantizationStrategy.TENSOR_GROUP):
        g = w.reshape(n, k // args.group_size, args.group_size)
        return g.amin(dim=-1), g.amax(dim=-1)
    if s == QuantizationStrategy.BLOCK:
        bm, bn = args.block_structure
        rb, cb = math.ceil(n / bm), math.ceil(k / bn)
        lo = torch.empty(rb, cb, dtype=w.dtype)
        hi = torch.empty(rb, cb, dtype=w.dtype)
        for i in range(rb):
            for j in range(cb):
                b = w[i * bm:(i + 1) * bm, j * bn:(j + 1) * bn]
                lo[i, j], hi[i, j] = b.amin(), b.amax()
        return lo, hi
    raise ValueError(f"strategy {s}")


def quantised_model(preset, dtype=torch.bfloat16, seed=0, perturb=None):
    """Tiny(dtype, seed) with preset applied to every Linear but lm_head,
    its weight scales calibrated; perturb(model) may change weights
    before calibration. Returns (model, config)."""
    model = Tiny(dtype, seed)
    if perturb is not None:
        with torch.no_grad():
            perturb(model)
    scheme = preset_name_to_scheme(preset, ["Linear"])
    config = QuantizationConfig(config_groups={"group_0": scheme}, ignore=["lm_head"])
    apply_quantization_config(model, config, show_progress=False)
    with torch.no_grad():
        for _, m in model.named_modules():
            qs = getattr(m, "quantization_scheme", None)
            if qs is None or qs.weights is None:
                continue
            args = qs.weights
            lo, hi = _minmax(m.weight.float(), args)
            gs = None
            if hasattr(m, "weight_global_scale"):
                gs = generate_gparam(m.weight.float().amin(), m.weight.float().amax())
                m.weight_global_scale.copy_(gs)
            scale, _ = calculate_qparams(lo, hi, args, global_scale=gs)
            m.weight_scale.copy_(scale.to(m.weight_scale.dtype).reshape(m.weight_scale.shape))
            if hasattr(m, "input_scale"):  # a static activation scale (calibration's job)
                m.input_scale.fill_(0.02)
            if hasattr(m, "input_global_scale"):
                m.input_global_scale.fill_(1.0)
    return model, config


def save(model, out, model_type="llama"):
    """Compresses model with ModelCompressor and writes out/ (config.json,
    model.safetensors) as save_pretrained would. Returns the compressor."""
    out.mkdir(parents=True, exist_ok=True)
    comp = ModelCompressor.from_pretrained_model(model)
    comp.compress_model(model)
    sd = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    save_file(sd, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "config.json").write_text(json.dumps({"model_type": model_type, "architectures": ["LlamaForCausalLM"],
                                                 "hidden_size": HIDDEN, "num_hidden_layers": 2,
                                                 "torch_dtype": str(model.lm_head.weight.dtype).removeprefix("torch.")}))
    comp.update_config(str(out))
    return comp

