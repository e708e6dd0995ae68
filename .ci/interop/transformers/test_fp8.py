"""Block-FP8 checkpoints written by transformers' own FineGrainedFP8
quantizer (quantizers/quantizer_finegrained_fp8.py@5.23.0, Fp8Quantize in
integrations/finegrained_fp8.py@5.23.0) from the bf16 Qwen3.5 save, on the
CPU: the quantizer's GPU/XPU check in validate_environment is bypassed by
tflib.fp8_quantizer_on_cpu (its module's is_torch_xpu_available made to say
True while it runs; nothing else is patched). Flavours (zoo.FP8): the
released modules_to_not_convert list, FineGrainedFP8Config() as it comes
(the vision tower converted, in_proj_a/b too narrow for a block: BF16 with
a saved weight_scale_inv), scale_fmt="ue8m0" (F8_E8M0 scales), and the vision
entry written "visual". Each is read by ckpt inspect / verify / map / cache
build / extract / diff and held against transformers' own dequantisation
(from_pretrained with FineGrainedFP8Config(dequantize=True): Fp8Dequantize)
and against Fp8Quantize re-run on the bf16 weights."""

import json
import os

import pytest
import torch
from safetensors.torch import load_file

import tflib
from known import mark, params
from test_saves import cache_files, plan_names
from zoo import FP8

FLAVOURS = list(FP8)
FP8_DTYPE = torch.float8_e4m3fn


def quantised(sd):
    """The names of the FP8 weights of a state dict."""
    return sorted(k for k, v in sd.items() if v.dtype == FP8_DTYPE)


def orphans(sd):
    """Scales whose weight is not FP8 (or absent), as safetensors reads the
    file."""
    return sorted(k for k in sd if k.endswith(".weight_scale_inv")
                  and (sd.get(k.removesuffix("_scale_inv")) is None
                       or sd[k.removesuffix("_scale_inv")].dtype != FP8_DTYPE))


def test_quantizer_recipe_reproduced_by_torch(zoo):
    """The FP8 file is what Fp8Quantize's recipe makes of the bf16 weights,
    re-computed here with torch (block amax, scale 448/amax, codes
    e4m3(w*scale), weight_scale_inv 1/scale): the ground truth the diff
    tests below rely on."""
    base = tflib.read_all(zoo.save("qwen3_5").dir)
    _, _, sd = zoo.fp8("release")
    assert quantised(sd)
    for k in quantised(sd):
        w = base[k].float()
        r, c = w.shape
        blocks = w.reshape(r // 128, 128, c // 128, 128)
        amax = blocks.abs().amax(dim=(1, 3))
        scale = torch.where(amax > 0, 448.0 / torch.where(amax > 0, amax, 1.0), 1.0)
        codes = (blocks * scale[:, None, :, None]).clamp(-448, 448).to(FP8_DTYPE).reshape(r, c)
        assert torch.equal(sd[k].view(torch.uint8), codes.view(torch.uint8)), k
        assert torch.equal(sd[k + "_scale_inv"], (1.0 / scale).float()), k


# ---------------------------------------------------------------- inspect

@pytest.mark.parametrize("flavour", params("fp8-inspect", FLAVOURS))
def test_inspect(ckpt, zoo, flavour):
    """inspect names the block-FP8 scheme with transformers' block size and
    list, counts every F8_E4M3 weight safetensors reads as quantised, and
    counts the parameters of the bf16 model (scales are not parameters)."""
    d, q, sd = zoo.fp8(flavour)
    doc = ckpt.json("inspect", d)
    got = {t["name"]: (t["dtype"], t["shape"]) for t in doc["tensors"]}
    assert got == {k: (v[0], v[1]) for k, v in tflib.headers(d).items()}
    qz = doc["quantization"]
    assert qz["scheme"] == "block-fp8"
    assert qz["weights"] == len(quantised(sd))
    assert qz["block_size"] == [128, 128]
    assert qz["ignore"] == (q.hf_quantizer.quantization_config.modules_to_not_convert or [])
    base = zoo.save("qwen3_5")
    params_ = sum(v.numel() for k, v in sd.items() if not k.endswith("_scale_inv"))
    assert doc["summary"]["parameters"] == params_ == base.num_parameters + sum(t.numel() for t in base.extra.values())


# ---------------------------------------------------------------- verify

@pytest.mark.parametrize("flavour", params("fp8-verify", ["release", "ue8m0", "visual"]))
def test_verify(ckpt, zoo, flavour):
    """A FineGrainedFP8 checkpoint transformers loads (dequantize=True, no
    missing key) passes verify --read-data."""
    d, _, _ = zoo.fp8(flavour)
    deq = tflib.fp8_dequantized(d, "qwen3_5")
    assert deq
    doc = ckpt.json("verify", d, "--read-data", rc=(0, 1))
    failing = [f for f in doc["findings"] if f["status"] in ("fail", "warn")]
    assert doc["ok"] and not failing, failing[:5]


def test_verify_names_orphan_scales(ckpt, zoo):
    """FineGrainedFP8Config() writes a weight_scale_inv beside each Linear
    too narrow for a 128x128 block (kept BF16): verify's fp8.scale_orphan
    names exactly the scales safetensors finds beside a non-FP8 weight."""
    d, _, sd = zoo.fp8("default")
    want = orphans(sd)
    assert want, "FineGrainedFP8Config() wrote no orphan scale"
    doc = ckpt.json("verify", d, rc=(0, 1))
    got = sorted(t for f in doc["findings"] if f["id"] == "fp8.scale_orphan" and f["status"] != "pass"
                 for t in f["tensors"] if t.endswith("_scale_inv"))
    assert got == want


def test_verify_default_conversion(ckpt, zoo):
    """FineGrainedFP8Config() converts every Linear that divides the
    blocks, the vision tower's included, and transformers loads the file:
    verify's architecture profile expects those weights FP8 too (no arch.*
    failure but for the narrow Linears and their orphan scales)."""
    d, _, sd = zoo.fp8("default")
    assert any(k.startswith("model.visual.") for k in quantised(sd))
    assert tflib.fp8_dequantized(d, "qwen3_5")
    doc = ckpt.json("verify", d, rc=(0, 1))
    # The narrow Linears' BF16 weights beside their orphan scales fail, as
    # they should: transformers' load scales them by the uninitialised
    # scale (test_extract_dequantised_equals_transformers).
    narrow = set(orphans(sd)) | {k.removesuffix("_scale_inv") for k in orphans(sd)}
    bad = [f for f in doc["findings"] if f["id"].startswith("arch.") and f["status"] == "fail"
           and not set(f["tensors"]) <= narrow]
    assert not bad, bad[:3]


# One Linear weight of each class the leg makes, FP8 in its release-list
# FP8 file (the modeling files' nn.Linear modules: arch.FP8ModulesSource):
# the dense and shared-expert MLPs, full- and linear-attention projections.
UNCOVERED = {
    "qwen3_5": "model.language_model.layers.0.mlp.down_proj.weight",
    "qwen3_5_text": "model.layers.1.linear_attn.out_proj.weight",
    "qwen3_5_moe": "model.language_model.layers.0.mlp.shared_expert.down_proj.weight",
    "qwen3_next": "model.layers.0.linear_attn.in_proj_qkvz.weight",
    "qwen3": "model.layers.0.self_attn.o_proj.weight",
    "qwen3_moe": "model.layers.1.self_attn.q_proj.weight",
    "llama": "model.layers.0.mlp.down_proj.weight",
    "gpt_oss": "model.layers.0.self_attn.v_proj.weight",
}


def failing(doc):
    """The failing findings of a verify document, as (id, tensors)."""
    return {(f["id"], tuple(f["tensors"])) for f in doc["findings"] if f["status"] == "fail"}


@pytest.mark.parametrize("kind", params("fp8-uncovered-bf16-linear", list(UNCOVERED)))
def test_verify_uncovered_bf16_linear(ckpt, zoo, kind, tmp_path):
    """One FP8 Linear of the release-list checkpoint of each class replaced
    by its bf16 dequantisation, its scale dropped, modules_to_not_convert
    not listing it: transformers' FP8 load (the quantizer's GPU path) builds
    an FP8Linear for it, casts the BF16 values to F8_E4M3 codes and reports
    its weight_scale_inv missing (left as initialised), a broken module.
    Structural verify must fail it, naming the weight, with arch.dtype and
    nothing else beyond what it finds in the file before the edit (the
    Qwen3.5 classes: the architecture profile; the others: the FP8 module
    table, arch.FP8Modules)."""
    import shutil
    d, _, sd = zoo.fp8("release", kind)
    name = UNCOVERED[kind]
    assert sd[name].dtype == FP8_DTYPE, name
    e = tmp_path / "uncovered"
    shutil.copytree(d, e)
    w = tflib.dequantize_like_transformers(sd[name], sd[name + "_scale_inv"])
    tflib.remove_tensors(str(e), [name, name + "_scale_inv"])
    tflib.add_tensors(str(e), {name: w})
    with tflib.fp8_quantizer_on_cpu():
        m, info = tflib.CLASSES[kind].from_pretrained(e, dtype=torch.bfloat16, output_loading_info=True)
        _, before = tflib.CLASSES[kind].from_pretrained(d, dtype=torch.bfloat16, output_loading_info=True)
    assert set(info["missing_keys"]) - set(before["missing_keys"]) == {name + "_scale_inv"}
    assert m.get_parameter(name).dtype == FP8_DTYPE
    was = failing(ckpt.json("verify", d, rc=(0, 1)))
    assert not [f for f in was if name in f[1]]
    doc = ckpt.json("verify", e, rc=1)
    assert failing(doc) - was == {("arch.dtype", (name,))}


@pytest.mark.parametrize("kind", params("fp8-uncovered-bf16-experts", ["qwen3_moe", "qwen3_next", "gpt_oss"]))
def test_verify_uncovered_bf16_experts(ckpt, zoo, kind, tmp_path):
    """The FP8 checkpoint of a MoE class quantised with the experts kept
    (modules_to_not_convert ["lm_head", "mlp.experts"]: its experts BF16),
    then its list edited to ["lm_head"]: transformers builds an FP8Experts
    for each layer's experts (replace_with_fp8_linear: every module named
    "*.experts") and reports their scales missing, or, for GPT-OSS, whose
    experts have biases, refuses to build it (FP8Experts asserts has_bias
    is False). Structural verify fails arch.dtype for exactly the experts'
    weights (no bias), nothing else beyond what it finds before the edit."""
    base = zoo.save(kind)
    d = tmp_path / "kept"
    tflib.fp8_quantize(base.dir, kind, modules_to_not_convert=["lm_head", "mlp.experts"]).save_pretrained(d)
    sd = tflib.read_all(str(d))
    experts = sorted(k for k in sd if ".mlp.experts." in k and not k.endswith("_bias"))
    assert experts and all(sd[k].dtype == torch.bfloat16 for k in experts), experts
    was = failing(ckpt.json("verify", d, rc=(0, 1)))
    e = tmp_path / "uncovered"
    import shutil
    shutil.copytree(d, e)
    cfg = json.loads((e / "config.json").read_text())
    cfg["quantization_config"]["modules_to_not_convert"] = ["lm_head"]
    (e / "config.json").write_text(json.dumps(cfg))
    with tflib.fp8_quantizer_on_cpu():
        if kind == "gpt_oss":
            with pytest.raises(AssertionError, match="FP8Experts does not support bias"):
                tflib.CLASSES[kind].from_pretrained(e, dtype=torch.bfloat16)
        else:
            m, info = tflib.CLASSES[kind].from_pretrained(e, dtype=torch.bfloat16, output_loading_info=True)
            missing = {k for k in info["missing_keys"] if ".mlp.experts." in k}
            assert missing and all(k.endswith("_scale_inv") for k in missing), missing
            assert m.get_parameter("model.layers.0.mlp.experts.gate_up_proj").dtype == FP8_DTYPE
    doc = ckpt.json("verify", e, rc=1)
    assert failing(doc) - was == {("arch.dtype", (k,)) for k in experts}


# ---------------------------------------------------------------- extract

def ckpt_dequantised(ckpt, d, tmp_path, dtype="bf16"):
    out = tmp_path / f"deq-{dtype}.safetensors"
    ckpt.run("extract", d, "--match", "**", "--dtype", dtype, "-o", out)
    return load_file(str(out))


@pytest.mark.parametrize("flavour", params("fp8-extract", FLAVOURS))
def test_extract_dequantised_equals_transformers(ckpt, zoo, flavour, tmp_path):
    """extract --dtype bf16 equals, bit for bit, the state dict transformers
    loads with FineGrainedFP8Config(dequantize=True) (Fp8Dequantize: float32
    codes x scales rounded once to bf16), and the MTP head (which
    transformers does not load) Fp8Dequantize of its codes; a BF16 weight
    beside an orphan scale as stored; no scale is written as a value."""
    d, _, sd = zoo.fp8(flavour)
    got = ckpt_dequantised(ckpt, d, tmp_path)
    # The state dict holds tied lm_head.weight too: keep the tensors the
    # file has (as transformers writes them).
    ref = {k: v for k, v in tflib.fp8_dequantized(d, "qwen3_5").items() if k in sd}
    # A BF16 weight beside an orphan scale (FineGrainedFP8Config()'s
    # in_proj_a/b) is its stored values: transformers' own dequantize=True
    # load multiplies it by that scale, which save_pretrained wrote
    # uninitialised (FP8Linear's torch.empty, never set when Fp8Quantize
    # passes the weight through), so its values there are garbage
    # (observed: up to 1.8e14 for weights below 0.1).
    for k in orphans(sd):
        ref[k.removesuffix("_scale_inv")] = sd[k.removesuffix("_scale_inv")]
    for k, v in sd.items():
        if k.startswith("mtp.") and not k.endswith("_scale_inv"):
            ref[k] = (tflib.dequantize_like_transformers(v, sd[k + "_scale_inv"])
                      if v.dtype == FP8_DTYPE else v)
    assert not [k for k in got if k.endswith("_scale_inv")]
    assert set(got) == set(ref)
    for k in ref:
        assert got[k].dtype == torch.bfloat16 and torch.equal(got[k].view(torch.int16), ref[k].view(torch.int16)), k


def test_extract_f32_equals_transformers_float32(ckpt, zoo, tmp_path):
    """extract --dtype f32 equals Fp8Dequantize's float32 product (the same
    op with output dtype float32)."""
    d, _, sd = zoo.fp8("release")
    got = ckpt_dequantised(ckpt, d, tmp_path, "f32")
    for k in quantised(sd):
        want = tflib.dequantize_like_transformers(sd[k], sd[k + "_scale_inv"], torch.float32)
        assert torch.equal(got[k], want), k


def test_extract_dir_loads_in_transformers(ckpt, zoo, tmp_path):
    """extract --dtype bf16 into a directory writes a checkpoint (config.json
    without quantization_config) that transformers loads as the plain bf16
    model, equal to its own dequantised load."""
    d, _, _ = zoo.fp8("release")
    out = tmp_path / "bf16"
    ckpt.run("extract", d, "--match", "**", "--dtype", "bf16", "-o", out)
    m, info = tflib.CLASSES["qwen3_5"].from_pretrained(out, dtype=torch.bfloat16, output_loading_info=True)
    assert not info["missing_keys"]
    assert getattr(m.config, "quantization_config", None) is None
    ref = tflib.fp8_dequantized(d, "qwen3_5")
    for k, v in m.state_dict().items():
        assert torch.equal(v, ref[k]), k


def test_extract_keep_with_scales_roundtrip(ckpt, zoo, tmp_path):
    """extract --dtype keep --with-scales copies codes and scales byte for
    byte."""
    d, _, sd = zoo.fp8("release")
    out = tmp_path / "keep.safetensors"
    ckpt.run("extract", d, "--match", "**", "--with-scales", "-o", out)
    got = load_file(str(out))
    assert got.keys() == sd.keys()
    for k, v in sd.items():
        assert got[k].dtype == v.dtype and torch.equal(got[k].view(torch.uint8), v.view(torch.uint8)), k


@pytest.mark.parametrize("flavour", params("fp8-orphans-extract", ["default"]))
def test_extract_never_writes_orphan_scales(ckpt, zoo, flavour, tmp_path):
    """extract --dtype bf16 of the checkpoint with orphan scales writes no
    scale as a value (transformers' dequantised load has none)."""
    d, _, sd = zoo.fp8(flavour)
    got = ckpt_dequantised(ckpt, d, tmp_path)
    assert not [k for k in got if k.endswith("_scale_inv")]


# ---------------------------------------------------------------- map / cache

@pytest.mark.parametrize("flavour", params("fp8-map", FLAVOURS))
def test_map_accounts_for_every_tensor(ckpt, zoo, flavour):
    """map of a FineGrainedFP8 checkpoint accounts for every tensor
    safetensors reads (entry sources and scales, ignored list, unmapped
    list), and is complete: every FP8 weight's scale applied."""
    d, _, sd = zoo.fp8(flavour)
    doc = ckpt.json("map", d, "--mesh", "1x2", rc=(0, 1))
    assert set(plan_names(doc)) == set(sd)
    assert doc["problems"] == [] and doc["unmapped"] == []


def test_cache_fp8_equals_transformers_bf16(ckpt, zoo, tmp_path):
    """cache build of the FP8 checkpoint writes the same files, byte for
    byte, as cache build of transformers' own bf16 dequantisation of it
    (from_pretrained(dequantize=True) then save_pretrained, the MTP head
    dequantised by Fp8Dequantize)."""
    d, _, sd = zoo.fp8("release")
    bf = tflib.save_dequantized(d, "qwen3_5", tmp_path / "bf16")
    ckpt.run("cache", "build", d, "--mesh", "1x2", "--out", tmp_path / "c8")
    ckpt.run("cache", "build", bf, "--mesh", "1x2", "--out", tmp_path / "c16")
    a, b = cache_files(tmp_path / "c8"), cache_files(tmp_path / "c16")
    assert a and a == b


# ---------------------------------------------------------------- diff

def blocks(t, scale):
    """scale broadcast over the 128x128 blocks of t's shape."""
    r, c = t.shape
    return scale.repeat_interleave(128, 0)[:r].repeat_interleave(128, 1)[:, :c]


def decoded(codes, scale):
    """The values of FP8 codes under their block scales as ckpt reads them
    (code x scale, the product rounded to float32), in float64."""
    return (codes.float() * blocks(codes, scale.float())).double()


def ckpt_recipe(w):
    """ckpt's own recipe (docs/formats.md): s = amax/448 in float32, codes
    e4m3(w/s), zero codes for an all-zero block; (codes, scale)."""
    w = w.float()
    r, c = w.shape
    amax = w.reshape(r // 128, 128, c // 128, 128).abs().amax(dim=(1, 3))
    s = amax / 448.0
    codes = torch.where(blocks(w, s) > 0, (w / blocks(w, s)).clamp(-448, 448), 0.0).to(FP8_DTYPE)
    return codes, s


def same(a, b):
    return a.dtype == b.dtype and torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


def check_requant_row(row, wide, codes, scale, q, name):
    """One diff row of a wider weight against FP8 codes and scale, held
    against torch: changed_elems and max_abs_diff of the wide values
    against the decoded ones; requant_identical exactly when transformers'
    Fp8Quantize (its own op) or ckpt's recipe reproduces codes and scale,
    requant_recipe the first of those (ckpt's is tried first: formats.md)."""
    dec = decoded(codes, scale)
    diff = wide.double() - dec
    assert row["changed_elems"] == int((diff != 0).sum()), row
    assert row["max_abs_diff"] == pytest.approx(float(diff.abs().max()), rel=1e-12, abs=0), row
    again = tflib.fp8_quantize_tensors(q, {name: wide})
    by_tf = same(again[name], codes) and same(again[name + "_scale_inv"], scale)
    by_ckpt = False
    if scale.dtype == torch.float32:
        c2, s2 = ckpt_recipe(wide)
        by_ckpt = same(c2, codes) and same(s2, scale)
    tf_name = "transformers-ue8m0" if scale.dtype == torch.float8_e8m0fnu else "transformers"
    if by_ckpt or by_tf:
        assert row["relation"] == "requant_identical", (row, by_ckpt, by_tf)
        assert row.get("requant_recipe") == ("ckpt" if by_ckpt else tf_name), (row, by_ckpt, by_tf)
    else:
        assert row["relation"] == "dtype_changed" or row.get("requant_recipe") not in ("ckpt", tf_name), row


@pytest.mark.parametrize("flavour", params("fp8-diff-requant", FLAVOURS))
def test_diff_bf16_base_against_its_fp8(ckpt, zoo, flavour):
    """diff of the bf16 base against the FP8 file transformers made of it:
    each FP8 weight is requant_identical (Fp8Quantize of the base weight
    reproduces its codes and scale exactly: checked here by running the
    quantizer's own op), naming the recipe, with the elements whose value
    the quantisation changed counted as torch counts them; every tensor the
    quantizer left alone identical, the scales only_in_ft."""
    base = zoo.save("qwen3_5")
    d, q, sd = zoo.fp8(flavour)
    bsd = tflib.read_all(base.dir)
    doc = ckpt.json("diff", base.dir, d, rc=1)
    rows = {t["name"]: t for t in doc["tensors"]}
    for k in quantised(sd):
        again = tflib.fp8_quantize_tensors(q, {k: bsd[k]})
        assert same(again[k], sd[k]) and same(again[k + "_scale_inv"], sd[k + "_scale_inv"]), k
        check_requant_row(rows[k], bsd[k], sd[k], sd[k + "_scale_inv"], q, k)
    want = {}
    for k in set(sd) | set(bsd):
        if k in quantised(sd):
            want[k] = "requant_identical"
        elif k not in bsd:
            want[k] = "only_in_ft"
        else:
            want[k] = "identical" if torch.equal(bsd[k], sd[k]) else "changed"
    rel = {k: r["relation"] for k, r in rows.items()}
    assert rel == want, {k: (rel.get(k), v) for k, v in want.items() if rel.get(k) != v}


@pytest.mark.parametrize("flavour", params("fp8-diff-dequantized", ["release", "ue8m0"]))
def test_diff_fp8_against_transformers_bf16_copy(ckpt, zoo, flavour, tmp_path):
    """diff of transformers' bf16 copy of the FP8 file (its dequantize=True
    load saved) against the FP8 file: each FP8 weight requant_identical or
    dtype_changed as torch finds (check_requant_row: transformers' op and
    ckpt's recipe re-run on the copy), its changed elements those the bf16
    rounding of the dequantised values moved."""
    d, q, sd = zoo.fp8(flavour)
    bf = tflib.save_dequantized(d, "qwen3_5", tmp_path / "bf16")
    deq = tflib.read_all(str(bf))
    doc = ckpt.json("diff", bf, d, rc=1)
    rows = {t["name"]: t for t in doc["tensors"]}
    for k in quantised(sd):
        check_requant_row(rows[k], deq[k], sd[k], sd[k + "_scale_inv"], q, k)


# ---------------------------------------------------------------- other classes

def test_llama_fp8(ckpt, zoo, tmp_path):
    """LlamaForCausalLM through the same quantizer (lm_head left out): inspect
    counts its FP8 weights and the bf16 model's parameters, verify
    --read-data passes, extract --dtype bf16 equals transformers'
    dequantised load bit for bit."""
    d, q, sd = zoo.fp8("release", "llama")
    base = zoo.save("llama")
    doc = ckpt.json("inspect", d)
    assert doc["quantization"]["weights"] == len(quantised(sd)) > 0
    assert doc["summary"]["parameters"] == base.num_parameters
    v = ckpt.json("verify", d, "--read-data")
    assert v["ok"], [f for f in v["findings"] if f["status"] in ("fail", "warn")]
    got = ckpt_dequantised(ckpt, d, tmp_path)
    ref = {k: t for k, t in tflib.fp8_dequantized(d, "llama").items() if k in sd}
    assert set(got) == set(ref)
    for k in ref:
        assert torch.equal(got[k].view(torch.int16), ref[k].view(torch.int16)), k


def test_moe_fp8_save_is_broken_and_named(ckpt, zoo):
    """transformers 5.23.0's FP8 save of a Qwen3MoeForCausalLM writes each
    expert's FP8 weight under its own name (experts.E.gate_proj.weight) but
    the experts' scales only under the fused names
    (experts.gate_up_proj_scale_inv [E, ...]); its own dequantize=True
    reload then gives the raw E4M3 codes as values (an error of up to 448,
    checked here). ckpt agrees the file is broken: verify fails
    fp8.scale_missing for exactly the FP8 weights safetensors finds without
    a weight_scale_inv, and fp8.scale_orphan for the fused scales."""
    d, _, sd = zoo.fp8("release", "qwen3_moe")
    base = tflib.read_all(zoo.save("qwen3_moe").dir)
    deq = tflib.fp8_dequantized(d, "qwen3_moe")
    g = base["model.layers.0.mlp.experts.0.gate_proj.weight"]
    fused = deq["model.layers.0.mlp.experts.gate_up_proj"][0][: g.shape[0]]
    assert (fused.float() - g.float()).abs().max() > 100 * g.float().abs().max()
    no_scale = sorted(k for k in quantised(sd) if k + "_scale_inv" not in sd)
    fused_scales = sorted(k for k in sd if k.endswith("_scale_inv") and k.removesuffix("_scale_inv") not in sd)
    assert no_scale and fused_scales
    doc = ckpt.json("verify", d, rc=1)
    named = lambda i: sorted(t for f in doc["findings"] if f["id"] == i and f["status"] == "fail" for t in f["tensors"])
    assert named("fp8.scale_missing") == no_scale
    assert set(fused_scales) <= set(named("fp8.scale_orphan"))
