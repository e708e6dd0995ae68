"""Checkpoints written by Hugging Face transformers' own code (torch on the
CPU, nothing downloaded): tiny random models of the real classes, built from
a config by code, saved with save_pretrained, quantised by transformers'
FineGrainedFP8 quantizer, fine-tuned with torch optimizer steps.

What this relies on (transformers 5.23.0, the installed package):
  - modeling_utils.py@5.23.0 PreTrainedModel.save_pretrained(dir,
    max_shard_size=, variant=): one model.safetensors, or shards
    model-0000k-of-0000n.safetensors with model.safetensors.index.json;
    variant V puts V before the extension (model.V.safetensors,
    model.safetensors.index.V.json, model.V-0000k-of-0000n.safetensors);
    tied weights are written once (get_expanded_tied_weights_keys reads
    self.config.tie_word_embeddings, the top-level key of a composite
    config).
  - models/qwen3_5/modeling_qwen3_5.py@5.23.0: transformers never writes the
    MTP head (_keys_to_ignore_on_load_unexpected = [r"^mtp.*"]); the released
    checkpoints carry it as 15 top-level tensors mtp.* (attach_mtp below adds
    them to the saved files the same way: listed in the index, in a shard,
    text_config.mtp_num_hidden_layers = 1).
  - quantizers/quantizer_finegrained_fp8.py@5.23.0: FineGrainedFP8HfQuantizer
    quantises on load (from_pretrained(..., quantization_config=
    FineGrainedFP8Config(...))); its validate_environment refuses a machine
    with neither CUDA nor XPU. fp8_quantizer_on_cpu() bypasses exactly that
    check by making the module's own name is_torch_xpu_available return
    True for the duration (the quantisation itself, Fp8Quantize in
    integrations/finegrained_fp8.py@5.23.0, is plain torch on the CPU).
  - integrations/finegrained_fp8.py@5.23.0 Fp8Quantize._quantize_one: per
    128x128 block scale = 448/amax, codes e4m3(clamp(w*scale)), stored
    weight_scale_inv = 1/scale (F32; ue8m0: rounded up to a power of two,
    F8_E8M0); a Linear whose rows or columns do not divide the block keeps
    its weight unquantised (and FP8Linear's weight_scale_inv parameter is
    saved beside it). Fp8Dequantize._dequantize_one: float32 codes x float32
    scales, rounded once to the target dtype.
"""

import contextlib
import json
import os
import shutil

import torch
import transformers as T
from safetensors import safe_open
from safetensors.torch import load_file, save_file

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
ST_DTYPE = {torch.bfloat16: "BF16", torch.float16: "F16", torch.float32: "F32",
            torch.float8_e4m3fn: "F8_E4M3", torch.float8_e8m0fnu: "F8_E8M0"}

# The text dimensions of every model: every Linear of the Qwen3.5 text
# model divides 128x128 blocks (FP8 quantises all of them), every sharded
# dimension divides the 2 devices of a 1x2 mesh, and the whole leg stays
# small (a few MB per checkpoint).
H, INTER, VOCAB, HEADS, KV, HEAD_DIM = 256, 512, 512, 4, 2, 64
LINEAR = dict(linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=64, linear_value_head_dim=64)
MOE = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=128)
# Not the default full_attention_interval pattern (L L L F): layer 0 is a
# full-attention layer.
LAYER_TYPES = ["full_attention", "linear_attention", "linear_attention", "full_attention"]
VISION = dict(depth=1, hidden_size=128, intermediate_size=256, num_heads=2, out_hidden_size=H,
              num_position_embeddings=64)


def _text(**kw):
    d = dict(vocab_size=VOCAB, hidden_size=H, intermediate_size=INTER, num_hidden_layers=4,
             num_attention_heads=HEADS, num_key_value_heads=KV, head_dim=HEAD_DIM, max_position_embeddings=256)
    d.update(kw)
    return d


def config_of(kind, tie=True):
    """The config of a tiny model of class CLASSES[kind]."""
    if kind == "qwen3_5":
        # The released layout: mtp_num_hidden_layers in text_config (the key
        # is kept: PreTrainedConfig stores unknown keys), tied embeddings
        # declared at both levels as the small Qwen3.5 releases do.
        return T.Qwen3_5Config(
            text_config=_text(**LINEAR, layer_types=LAYER_TYPES, tie_word_embeddings=tie,
                              mtp_num_hidden_layers=1, mtp_use_dedicated_embeddings=False),
            vision_config=dict(VISION), tie_word_embeddings=tie)
    if kind == "qwen3_5_text":
        return T.Qwen3_5TextConfig(**_text(**LINEAR, layer_types=LAYER_TYPES))
    if kind == "qwen3_5_moe":
        return T.Qwen3_5MoeConfig(
            text_config=_text(**LINEAR, **MOE, num_hidden_layers=2, shared_expert_intermediate_size=128),
            vision_config=dict(VISION))
    if kind == "qwen3_next":
        return T.Qwen3NextConfig(**_text(**LINEAR, **MOE, shared_expert_intermediate_size=128))
    if kind == "qwen3":
        return T.Qwen3Config(**_text())
    if kind == "qwen3_moe":
        return T.Qwen3MoeConfig(**_text(**MOE, num_hidden_layers=2))
    if kind == "llama":
        return T.LlamaConfig(**_text())
    if kind == "gpt_oss":
        return T.GptOssConfig(**_text(intermediate_size=256, num_local_experts=4, num_experts_per_tok=2,
                                      num_hidden_layers=2))
    raise ValueError(kind)


CLASSES = {
    "qwen3_5": T.Qwen3_5ForConditionalGeneration,
    "qwen3_5_text": T.Qwen3_5ForCausalLM,
    "qwen3_5_moe": T.Qwen3_5MoeForConditionalGeneration,
    "qwen3_next": T.Qwen3NextForCausalLM,
    "qwen3": T.Qwen3ForCausalLM,
    "qwen3_moe": T.Qwen3MoeForCausalLM,
    "llama": T.LlamaForCausalLM,
    "gpt_oss": T.GptOssForCausalLM,
}


def make_model(kind, dtype=torch.bfloat16, seed=0, tie=True):
    """A model of CLASSES[kind], its weights drawn from the class's own
    initialiser with torch seeded by seed, in dtype. The zero-initialised
    norms (Qwen3.5's zero-centred RMSNorm) get small random values so that
    no two tensors are trivially equal."""
    torch.manual_seed(seed)
    model = CLASSES[kind](config_of(kind, tie=tie))
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for _, p in model.named_parameters():
            if p.ndim == 1 and bool((p == 0).all()):
                p.copy_(torch.randn(p.shape, generator=g) * 0.02)
    return model.to(dtype).eval()


# ---------------------------------------------------------------- MTP head

def mtp_tensors(model, seed=7):
    """The 15 tensors of the released MTP head (one full-attention layer
    with the main model's shapes, fc [H, 2H], four norms) for a
    Qwen3_5ForConditionalGeneration, random, in the model's dtype."""
    tc = model.config.text_config
    h, inter, hd = tc.hidden_size, tc.intermediate_size, tc.head_dim
    q_rows = tc.num_attention_heads * hd * 2  # query + output gate (attn_output_gate)
    kv_rows = tc.num_key_value_heads * hd
    shapes = {
        "mtp.fc.weight": [h, 2 * h],
        "mtp.pre_fc_norm_embedding.weight": [h],
        "mtp.pre_fc_norm_hidden.weight": [h],
        "mtp.layers.0.input_layernorm.weight": [h],
        "mtp.layers.0.post_attention_layernorm.weight": [h],
        "mtp.layers.0.self_attn.q_proj.weight": [q_rows, h],
        "mtp.layers.0.self_attn.k_proj.weight": [kv_rows, h],
        "mtp.layers.0.self_attn.v_proj.weight": [kv_rows, h],
        "mtp.layers.0.self_attn.o_proj.weight": [h, tc.num_attention_heads * hd],
        "mtp.layers.0.self_attn.q_norm.weight": [hd],
        "mtp.layers.0.self_attn.k_norm.weight": [hd],
        "mtp.layers.0.mlp.gate_proj.weight": [inter, h],
        "mtp.layers.0.mlp.up_proj.weight": [inter, h],
        "mtp.layers.0.mlp.down_proj.weight": [h, inter],
        "mtp.norm.weight": [h],
    }
    dtype = next(model.parameters()).dtype
    g = torch.Generator().manual_seed(seed)
    return {k: (torch.randn(s, generator=g) * 0.02).to(dtype) for k, s in shapes.items()}


def index_path(d, variant=None):
    v = f".{variant}" if variant else ""
    return os.path.join(d, f"model.safetensors.index{v}.json")


def shard_files(d, variant=None):
    """The safetensors files of checkpoint d, as save_pretrained wrote them."""
    ip = index_path(d, variant)
    if os.path.exists(ip):
        with open(ip) as f:
            return sorted(set(json.load(f)["weight_map"].values()))
    v = f".{variant}" if variant else ""
    return [f"model{v}.safetensors"]


def add_tensors(d, tensors, variant=None):
    """Adds tensors to checkpoint d as the released checkpoints carry extra
    top-level tensors: into its last shard (rewritten by safetensors with
    save_pretrained's metadata {"format": "pt"}), listed in the index with
    its total_size updated."""
    files = shard_files(d, variant)
    last = os.path.join(d, files[-1])
    sd = load_file(last)
    sd.update(tensors)
    save_file(sd, last, metadata={"format": "pt"})
    ip = index_path(d, variant)
    if os.path.exists(ip):
        with open(ip) as f:
            idx = json.load(f)
        for k, t in tensors.items():
            idx["weight_map"][k] = files[-1]
            idx["metadata"]["total_size"] += t.numel() * t.element_size()
        with open(ip, "w") as f:
            json.dump(idx, f, indent=2, sort_keys=True)


def remove_tensors(d, names, variant=None):
    """Removes tensors from checkpoint d (file and index)."""
    ip = index_path(d, variant)
    for fn in shard_files(d, variant):
        p = os.path.join(d, fn)
        with safe_open(p, "pt") as f:
            meta = f.metadata()
        sd = load_file(p)
        if any(n in sd for n in names):
            for n in names:
                t = sd.pop(n, None)
                if t is not None and os.path.exists(ip):
                    with open(ip) as f:
                        idx = json.load(f)
                    del idx["weight_map"][n]
                    idx["metadata"]["total_size"] -= t.numel() * t.element_size()
                    with open(ip, "w") as f:
                        json.dump(idx, f, indent=2, sort_keys=True)
            save_file(sd, p, metadata=meta)


def edit_config(d, fn):
    p = os.path.join(d, "config.json")
    with open(p) as f:
        cfg = json.load(f)
    fn(cfg)
    with open(p, "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)


def attach_mtp(d, model, variant=None, seed=7):
    """The MTP head of the released layout added to the saved checkpoint d of
    model (transformers never writes it). Returns the tensors."""
    mtp = mtp_tensors(model, seed=seed)
    add_tensors(d, mtp, variant=variant)
    return mtp


# ---------------------------------------------------------------- saving

def save(model, d, layout="single", variant=None, mtp=None):
    """save_pretrained of model into d: layout single (one file), sharded
    (max_shard_size a third of the model, so 3 to 5 shards) or variant
    (sharded, with variant= ; the variant name defaults to "fp16" as
    transformers' own docs use it). mtp: tensors attach_mtp-style to add.
    Returns the variant used (None unless layout is variant)."""
    kw = {}
    if layout in ("sharded", "variant"):
        total = sum(p.numel() * p.element_size() for p in model.parameters())
        kw["max_shard_size"] = max(total // 3, 64 * 1024)
    if layout == "variant":
        variant = variant or "fp16"
        kw["variant"] = variant
    model.save_pretrained(d, **kw)
    if mtp is not None:
        add_tensors(d, mtp, variant=variant)
    return variant


def read_all(d, variant=None):
    """{name: tensor} of every safetensors file of checkpoint d, as
    safetensors reads them."""
    out = {}
    for fn in shard_files(d, variant):
        out.update(load_file(os.path.join(d, fn)))
    return out


def headers(d, variant=None):
    """{name: (dtype, shape, file)} as safetensors' safe_open reports them."""
    out = {}
    for fn in shard_files(d, variant):
        with safe_open(os.path.join(d, fn), "pt") as f:
            for k in f.keys():
                s = f.get_slice(k)
                out[k] = (s.get_dtype(), list(s.get_shape()), fn)
    return out


def copy(src, dst):
    shutil.copytree(src, dst)
    return dst


# ---------------------------------------------------------------- FP8

@contextlib.contextmanager
def fp8_quantizer_on_cpu():
    """Lets transformers' FineGrainedFP8 quantizer quantise on this CPU-only
    machine. FineGrainedFP8HfQuantizer.validate_environment
    (quantizers/quantizer_finegrained_fp8.py@5.23.0) raises "No GPU or XPU
    found" when neither torch.cuda.is_available() nor is_torch_xpu_available()
    holds; the narrowest point that skips just that test is the module's own
    name is_torch_xpu_available (imported there by name, used nowhere else in
    the module), made to return True for the duration. Its other checks
    (accelerate installed, the device_map rules) still run; the quantisation
    is Fp8Quantize's torch code, on the CPU."""
    import transformers.quantizers.quantizer_finegrained_fp8 as q
    saved = q.is_torch_xpu_available
    q.is_torch_xpu_available = lambda *a, **k: True
    try:
        yield
    finally:
        q.is_torch_xpu_available = saved


def fp8_quantize(src, kind, **cfg):
    """The model of checkpoint src (a bf16 save of CLASSES[kind]) quantised
    by transformers' FineGrainedFP8 quantizer on load, as a user's
    from_pretrained(src, quantization_config=FineGrainedFP8Config(**cfg))
    makes it. Returns the quantised model (save_pretrained writes the FP8
    checkpoint)."""
    with fp8_quantizer_on_cpu():
        return CLASSES[kind].from_pretrained(src, quantization_config=T.FineGrainedFP8Config(**cfg),
                                             dtype=torch.bfloat16)


def fp8_quantize_tensors(model, tensors):
    """tensors quantised with the quantizer's own Fp8Quantize op (of the
    quantised model's hf_quantizer): {name: codes, name_scale_inv: scale}
    for each weight that divides the blocks, the others as they are."""
    from transformers.integrations.finegrained_fp8 import Fp8Quantize
    op = Fp8Quantize(model.hf_quantizer)
    out = {}
    for k, v in tensors.items():
        out.update(op.convert({k: v}))
    return out


def fp8_dequantized_model(d, kind):
    """FP8 checkpoint d as transformers loads it with
    FineGrainedFP8Config(dequantize=True): Fp8Dequantize of every FP8 weight,
    in bf16."""
    return CLASSES[kind].from_pretrained(d, quantization_config=T.FineGrainedFP8Config(dequantize=True),
                                         dtype=torch.bfloat16)


def fp8_dequantized(d, kind):
    """{name: tensor} of fp8_dequantized_model(d, kind) (its state dict)."""
    return {k: v.detach() for k, v in fp8_dequantized_model(d, kind).state_dict().items()}


def save_dequantized(d, kind, out):
    """transformers' bf16 copy of FP8 checkpoint d: the state dict of its
    dequantize=True load, put into a fresh model of the class built from the
    same config without quantization_config and saved by save_pretrained
    into out; the MTP head (which transformers does not load) dequantised
    with Fp8Dequantize and added back. (save_pretrained of the
    dequantize=True model itself is no bf16 copy: it runs the quantizer's
    reverse op, Fp8Quantize, on save and writes FP8 weights again, the
    embeddings and the vision tower included.) Returns out."""
    m = fp8_dequantized_model(d, kind)
    cfg = m.config.to_dict()
    cfg.pop("quantization_config", None)
    fresh = CLASSES[kind](m.config.__class__.from_dict(cfg)).to(torch.bfloat16)
    missing, unexpected = fresh.load_state_dict(m.state_dict(), strict=False)
    assert not unexpected and not missing, (missing, unexpected)
    fresh.save_pretrained(out)
    sd = read_all(d)
    mtp = {k: (dequantize_like_transformers(v, sd[k + "_scale_inv"]) if v.dtype == torch.float8_e4m3fn else v)
           for k, v in sd.items() if k.startswith("mtp.") and not k.endswith("_scale_inv")}
    if mtp:
        add_tensors(str(out), mtp)
    return out


def dequantize_like_transformers(codes, scale, dtype=torch.bfloat16):
    """One weight dequantised with the quantizer's own Fp8Dequantize op."""
    from transformers.integrations.finegrained_fp8 import Fp8Dequantize
    return Fp8Dequantize(None)._dequantize_one(codes, scale, output_dtype=dtype)


# ---------------------------------------------------------------- training

def train_steps(model, steps=3, opt="sgd", lr=1e-2, seed=0, seq=16, batch=2):
    """steps optimizer steps (torch.optim.SGD or Adam) of the causal LM loss
    on random token ids, in the model's own dtype. Returns the model."""
    model.train()
    g = torch.Generator().manual_seed(seed)
    params = [p for p in model.parameters() if p.requires_grad]
    o = torch.optim.SGD(params, lr=lr) if opt == "sgd" else torch.optim.Adam(params, lr=lr)
    vocab = model.config.get_text_config().vocab_size
    for _ in range(steps):
        ids = torch.randint(0, vocab, (batch, seq), generator=g)
        loss = model(input_ids=ids, labels=ids).loss
        o.zero_grad()
        loss.backward()
        o.step()
    return model.eval()
