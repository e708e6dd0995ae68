"""Qwen3_5MoeForConditionalGeneration (the 35B-A3B's class) saved by
transformers itself, planned and cached by ckpt at 1x2 and 1x4 (issue #38,
deliver 4).

The checkpoints, all of one tiny random model (MOE_TEXT, vision tower
VISION_WIDE):
  - bf16-experts: save_pretrained's own file. transformers 5.23.0 holds the
    routed experts fused in memory (Qwen3_5MoeExperts: gate_up_proj
    [E, 2I, H], down_proj [E, H, I]) and writes them per expert
    (mlp.experts.{e}.{gate,up,down}_proj.weight), reversing the conversion
    mapping its loader applies (conversion_mapping.py@5.23.0, the qwen3_5_moe
    entry: MergeModulelist + Concatenate);
  - bf16-fused: the same tensors with the experts in the release layout
    (mlp.experts.gate_up_proj [E, 2I, H], mlp.experts.down_proj [E, H, I],
    taken from the model's state_dict()), written with safetensors;
  - fp8-fused: the model quantised by transformers' FineGrainedFP8 quantizer
    (from_pretrained(quantization_config=FineGrainedFP8Config(...)) of
    bf16-experts: FP8Experts, integrations/finegrained_fp8.py@5.23.0) and
    its state_dict() written with safetensors: fused F8_E4M3 experts with
    gate_up_proj_scale_inv [E, 2I/128, H/128] and down_proj_scale_inv
    [E, H/128, I/128], every other converted Linear with its
    weight_scale_inv. (Its own save_pretrained writes the experts' codes per
    expert and their scales under the fused names only: a broken file,
    test_transformers_fp8_save_refused.)
  - fp8-experts: fp8-fused's codes and block scales split per expert
    (experts.{e}.{gate,up,down}_proj.weight + .weight_scale_inv; the block
    grid splits exactly because I is a multiple of 128).
Each is mapped at 1x2 and 1x4 (every tensor mapped or ignored with a reason,
the MoE files on every MoE layer, no dense mlp.*), cached (text and vision
folders) and checked by cache verify --read-data; the expert files built
from the per-expert and the fused layouts of the same weights are the same
bytes."""

import json
import os
import pathlib
import re
import shutil

import pytest
import torch
import transformers as T
from safetensors.torch import save_file

import tflib
from test_saves import cache_files, plan_names
from zoo import RELEASE_SKIP

MESHES = ("1x2", "1x4")
# Every sharded dimension divides 4 devices: 4 linear key heads (8 value
# heads), 4 query heads (the 2 KV heads are replicated at 1x4), 8 experts (2
# per device at 1x4), shared-expert and expert widths of 128 (one FP8 block,
# 32 columns per device at 1x4); a full-attention and a linear-attention
# layer, both MoE (decoder_sparse_step 1, no mlp_only_layers).
E, I = 8, 128
MOE_TEXT = tflib._text(linear_num_key_heads=4, linear_num_value_heads=8, linear_key_head_dim=64,
                       linear_value_head_dim=64, num_experts=E, num_experts_per_tok=2, moe_intermediate_size=I,
                       shared_expert_intermediate_size=128, num_hidden_layers=2,
                       layer_types=["full_attention", "linear_attention"])
VISION_WIDE = dict(tflib.VISION, num_heads=4)  # 4 heads of 32: whole heads per device at 1x4
# The released FP8 list and the shared-expert gate, a [1, H] Linear no
# 128x128 block fits (converted, it would be written BF16 beside an
# uninitialised weight_scale_inv).
FP8_SKIP = RELEASE_SKIP + ["mlp.shared_expert_gate"]
KINDS = ("bf16-experts", "bf16-fused", "fp8-fused", "fp8-experts")
PROJ = ("gate_proj", "up_proj", "down_proj")


def moe_model():
    torch.manual_seed(0)
    m = T.Qwen3_5MoeForConditionalGeneration(T.Qwen3_5MoeConfig(text_config=dict(MOE_TEXT),
                                                                vision_config=dict(VISION_WIDE)))
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for _, p in m.named_parameters():
            if p.ndim == 1 and bool((p == 0).all()):
                p.copy_(torch.randn(p.shape, generator=g) * 0.02)
    return m.to(torch.bfloat16).eval()


def expert_prefixes(names):
    """The mlp.experts. prefixes of a state dict's names, one per layer."""
    return sorted({n[: n.index("mlp.experts.") + len("mlp.experts.")] for n in names if "mlp.experts." in n})


def write_like(src, dst, tensors):
    """A checkpoint at dst: src's config.json (and the other JSON files
    save_pretrained wrote) with tensors in one model.safetensors, written by
    safetensors with save_pretrained's metadata."""
    os.makedirs(dst)
    for fn in os.listdir(src):
        if fn.endswith(".json") and not fn.startswith("model.safetensors"):
            shutil.copy(os.path.join(src, fn), dst)
    save_file({k: v.contiguous() for k, v in tensors.items()}, os.path.join(dst, "model.safetensors"),
              metadata={"format": "pt"})
    return dst


def fused_of(stored, state):
    """stored (a per-expert save) with each layer's experts replaced by the
    fused tensors of state (the model's own [E, 2I, H] and [E, H, I], with
    their _scale_inv when FP8)."""
    out = {k: v for k, v in stored.items() if not re.search(r"mlp\.experts\.\d+\.", k)
           and not k.endswith(("experts.gate_up_proj_scale_inv", "experts.down_proj_scale_inv"))}
    for p in expert_prefixes(stored):
        for n in ("gate_up_proj", "down_proj"):
            out[p + n] = state[p + n]
            if p + n + "_scale_inv" in state:
                out[p + n + "_scale_inv"] = state[p + n + "_scale_inv"]
    return out


def per_expert_of(fused):
    """fused with each layer's experts split per expert: gate = rows [0, I)
    of gate_up_proj[e], up = rows [I, 2I), down = down_proj[e]; block scales
    split along the same rows (I/128 block rows each)."""
    out = {k: v for k, v in fused.items() if not re.search(r"mlp\.experts\.(gate_up|down)_proj", k)}
    for p in expert_prefixes(fused):
        gu, dn = fused[p + "gate_up_proj"], fused[p + "down_proj"]
        gs, ds = fused.get(p + "gate_up_proj_scale_inv"), fused.get(p + "down_proj_scale_inv")
        for e in range(gu.shape[0]):
            parts = {"gate_proj": (gu[e, :I], None if gs is None else gs[e, : I // 128]),
                     "up_proj": (gu[e, I:], None if gs is None else gs[e, I // 128:]),
                     "down_proj": (dn[e], None if ds is None else ds[e])}
            for n, (w, s) in parts.items():
                out[f"{p}{e}.{n}.weight"] = w.clone()
                if s is not None:
                    out[f"{p}{e}.{n}.weight_scale_inv"] = s.clone()
    return out


class Moe:
    """The four checkpoints (made once per session) and their builds."""

    def __init__(self, root):
        self.root = str(root)
        self.model = moe_model()
        self.dirs = {}
        d = self.dirs["bf16-experts"] = os.path.join(self.root, "bf16-experts")
        self.model.save_pretrained(d)
        stored = tflib.read_all(d)
        self.dirs["bf16-fused"] = write_like(d, os.path.join(self.root, "bf16-fused"),
                                             fused_of(stored, self.model.state_dict()))
        self.fp8_model = tflib.fp8_quantize(d, "qwen3_5_moe", modules_to_not_convert=FP8_SKIP)
        tf = self.dirs["fp8-tf"] = os.path.join(self.root, "fp8-tf")
        self.fp8_model.save_pretrained(tf)
        state = {k: v.detach() for k, v in self.fp8_model.state_dict().items()}
        fused = fused_of(tflib.read_all(tf), state)
        self.dirs["fp8-fused"] = write_like(tf, os.path.join(self.root, "fp8-fused"), fused)
        self.dirs["fp8-experts"] = write_like(tf, os.path.join(self.root, "fp8-experts"), per_expert_of(fused))
        self._builds = {}

    def build(self, ckpt, kind, mesh):
        """(out, summary) of cache build of kind at mesh, built once."""
        key = (kind, mesh)
        if key not in self._builds:
            out = os.path.join(self.root, "cache", f"{kind}-{mesh}")
            summary = ckpt.json("cache", "build", self.dirs[kind], "--mesh", mesh, "--out", out, "--progress", "none")
            self._builds[key] = (out, summary)
        return self._builds[key]


@pytest.fixture(scope="module")
def moe(tmp_path_factory):
    return Moe(tmp_path_factory.mktemp("moe"))


def test_layouts_are_one_model(moe):
    """The fixtures are what they say: transformers' own save is per expert
    (no fused name), the fused re-save holds the same values (gate rows
    then up rows of each expert), transformers loads the fused file back
    as the same model; the fused FP8 file holds the quantised model's
    codes and the per-expert FP8 file dequantises (transformers' own load)
    to the same weights."""
    per = tflib.headers(moe.dirs["bf16-experts"])
    assert any(re.search(r"mlp\.experts\.0\.gate_proj\.weight$", k) for k in per)
    assert not any(k.endswith(("experts.gate_up_proj", "experts.down_proj")) for k in per)
    a, b = tflib.read_all(moe.dirs["bf16-experts"]), tflib.read_all(moe.dirs["bf16-fused"])
    for p in expert_prefixes(a):
        assert tuple(b[p + "gate_up_proj"].shape) == (E, 2 * I, MOE_TEXT["hidden_size"])
        assert tuple(b[p + "down_proj"].shape) == (E, MOE_TEXT["hidden_size"], I)
        for e in range(E):
            assert torch.equal(b[p + "gate_up_proj"][e, :I], a[f"{p}{e}.gate_proj.weight"])
            assert torch.equal(b[p + "gate_up_proj"][e, I:], a[f"{p}{e}.up_proj.weight"])
            assert torch.equal(b[p + "down_proj"][e], a[f"{p}{e}.down_proj.weight"])
    m, info = T.Qwen3_5MoeForConditionalGeneration.from_pretrained(moe.dirs["bf16-fused"], dtype=torch.bfloat16,
                                                                   output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    want = moe.model.state_dict()
    assert all(torch.equal(v, want[k]) for k, v in m.state_dict().items())
    fused = tflib.read_all(moe.dirs["fp8-fused"])
    assert any(k.endswith("experts.gate_up_proj_scale_inv") for k in fused)
    assert fused[expert_prefixes(fused)[0] + "gate_up_proj"].dtype == torch.float8_e4m3fn
    # transformers reads the per-expert FP8 file as the quantised model's
    # weights: its dequantize=True load (Fp8Dequantize of each expert's
    # codes and scales, merged to gate_up_proj/down_proj) equals
    # Fp8Dequantize of the fused codes and scales the quantizer made, expert
    # by expert, and is close to the bf16 weights (a wrong scale split is
    # off by orders of magnitude). (Its dequantize=True load of the fused
    # FP8 file leaves the fused experts' codes unscaled, so the fused file
    # is held against the quantised model's state only, above.)
    deq = tflib.fp8_dequantized(moe.dirs["fp8-experts"], "qwen3_5_moe")
    q = moe.fp8_model.state_dict()
    for p in expert_prefixes(fused):
        for n in ("gate_up_proj", "down_proj"):
            assert torch.equal(fused[p + n].view(torch.uint8), q[p + n].view(torch.uint8))
            ref = torch.stack([tflib.dequantize_like_transformers(q[p + n][e], q[p + n + "_scale_inv"][e])
                               for e in range(E)])
            assert torch.equal(deq[p + n], ref), p + n
            w = want[p + n].float()
            assert (deq[p + n].float() - w).abs().max() < 0.1 * w.abs().max(), p + n


def moe_layers(cfg):
    """The MoE layers of a Qwen3.5-MoE text config as the demo's
    is_moe_layer decides them (num_experts > 0, not in mlp_only_layers,
    (L+1) % decoder_sparse_step == 0)."""
    tc = cfg.get("text_config", cfg)
    step, only = tc.get("decoder_sparse_step", 1), tc.get("mlp_only_layers") or []
    return [i for i in range(tc["num_hidden_layers"])
            if tc.get("num_experts", 0) > 0 and i not in only and (i + 1) % step == 0]


@pytest.mark.parametrize("mesh", MESHES)
@pytest.mark.parametrize("kind", KINDS)
def test_map(ckpt, moe, kind, mesh):
    """map of each layout at 1x2 and 1x4: no problem, nothing unmapped,
    every tensor safetensors reads in exactly one place (an entry of the
    text or vision part, or ignored with a reason); on every MoE layer the
    expert-parallel files with the mesh width in their names (gate/up
    BFLOAT4_B, down BFLOAT8_B, sharded on the expert dimension, E/N experts
    per device), the router, the shared-expert gate and the shared expert's
    TP MLP, fed by that layer's experts, router and shared expert; no dense
    mlp.* file on any layer; the vision tower planned in its own folder."""
    d = moe.dirs[kind]
    doc = ckpt.json("map", d, "--mesh", mesh)
    n = int(mesh.split("x")[1])
    assert doc["problems"] == [] and doc["unmapped"] == []
    vision = doc.get("vision") or {}
    assert vision.get("entries") and vision.get("problems", []) == [] and vision.get("unmapped", []) == []
    where = plan_names(doc)
    for e in vision["entries"]:
        for s in e["sources"] + e.get("scales", []):
            where.setdefault(s, set()).add("vision")
    assert set(where) == set(tflib.headers(d))
    # The vision tower: ignored by the text part with a reason naming its
    # folder, and mapped by the vision part; every other tensor in one
    # place.
    tower = {k for k in where if k.startswith("model.visual.")}
    assert tower and all(where[k] == {"ignored", "vision"} for k in tower), {k: where[k] for k in tower}
    assert all(len(w) == 1 for k, w in where.items() if k not in tower)
    assert all(i["reason"] for i in doc["ignored"])
    assert all("tensor_cache_bfp8" in i["reason"] for i in doc["ignored"] if i["name"] in tower)
    entries = {e["target"]: e for e in doc["entries"]}
    cfg = json.load(open(os.path.join(d, "config.json")))
    fp8 = kind.startswith("fp8")
    layers = moe_layers(cfg)
    assert layers == [0, 1]
    for L in layers:
        src = f"model.language_model.layers.{L}.mlp."
        for p, dt in (("gate_proj", "BFLOAT4_B"), ("up_proj", "BFLOAT4_B"), ("down_proj", "BFLOAT8_B")):
            e = entries[f"layers.{L}/moe.experts.{p}_ep_swiglu{n}"]
            assert e["dtype"] == dt
            assert e["placement"] == {"kind": "shard", "dim": 1, "devices": n}, e
            assert e["shape"][1] == E and e["device_shape"][1] == E // n, e
            if "experts" in kind:
                want = {f"{src}experts.{x}.{p}.weight" for x in range(E)}
            else:
                want = {src + "experts." + ("down_proj" if p == "down_proj" else "gate_up_proj")}
            # an FP8 weight's block scale is read with it (a source too)
            assert set(e["sources"]) == want | ({w + "_scale_inv" for w in want} if fp8 else set()), e["sources"]
        assert entries[f"layers.{L}/moe.router.weight"]["sources"] == [src + "gate.weight"]
        assert entries[f"layers.{L}/moe.shared_expert_gate.weight"]["sources"] == [src + "shared_expert_gate.weight"]
        for p in PROJ:
            shared = [t for t, e in entries.items() if t.startswith(f"layers.{L}/shared_expert/mlp.{p}")]
            w = f"{src}shared_expert.{p}.weight"
            want = [w, w + "_scale_inv"] if fp8 else [w]
            assert shared and all(entries[t]["sources"] == want for t in shared), shared
        dense = [t for t in entries if t.startswith((f"layers.{L}/mlp.", f"layers.{L}.mlp."))
                 or re.match(rf"layers\.{L}/(?!shared_expert/).*mlp\.", t)]
        assert dense == [], dense


@pytest.mark.parametrize("mesh", MESHES)
@pytest.mark.parametrize("kind", KINDS)
def test_cache_build_verify(ckpt, moe, kind, mesh):
    """cache build of each layout at 1x2 and 1x4 writes exactly the files
    map plans, the text folder's and the vision folder's, and cache verify
    --read-data (every file's data held against what the source builds to)
    passes both."""
    d = moe.dirs[kind]
    plan = ckpt.json("map", d, "--mesh", mesh)
    out, _ = moe.build(ckpt, kind, mesh)
    files = cache_files(pathlib.Path(out))
    text = {e["file"] for e in plan["entries"]}
    vis = {e["file"] for e in plan["vision"]["entries"]}
    assert text and vis and not text & vis
    assert set(files) == text | vis
    # <device>/tensor_cache_bfp8_mesh1xN for the text model, the same
    # device's tensor_cache_bfp8 for the tower
    (tdir,) = {tuple(f.split("/")[:2]) for f in text}
    (vdir,) = {tuple(f.split("/")[:2]) for f in vis}
    assert tdir[1] == f"tensor_cache_bfp8_mesh{mesh}" and vdir == (tdir[0], "tensor_cache_bfp8")
    n = mesh[2:]
    assert any(re.search(rf"/moe\.experts\.gate_proj_ep_swiglu{n}_dtype_BFLOAT4_B_layout_TILE\.tensorbin$", f) for f in files)
    doc = ckpt.json("cache", "verify", out, "--source", d, "--read-data", "--progress", "none")
    assert doc["ok"]
    # one verdict per folder, each with its data compared
    folders = {os.path.relpath(f["dir"], out): f for f in doc["folders"]}
    assert set(folders) == {"/".join(f.split("/")[:2]) for f in text | vis}
    assert len(folders) == 2
    assert all(f["ok"] and f["data_compared"] and not f["findings"] for f in folders.values()), folders


def expert_files(files):
    return {f: b for f, b in files.items() if "/moe.experts." in f}


@pytest.mark.parametrize("mesh", MESHES)
@pytest.mark.parametrize("dtype", ("bf16", "fp8"))
def test_expert_files_same_bytes(ckpt, moe, dtype, mesh):
    """The expert files built from transformers' per-expert save (and its
    FP8 split) are byte for byte the ones built from the same weights in
    the fused release layout, 3 per MoE layer; so is every other file."""
    a = cache_files(pathlib.Path(moe.build(ckpt, f"{dtype}-experts", mesh)[0]))
    b = cache_files(pathlib.Path(moe.build(ckpt, f"{dtype}-fused", mesh)[0]))
    ea, eb = expert_files(a), expert_files(b)
    assert all(f"_ep_swiglu{mesh[2:]}_" in f for f in ea)
    assert len(ea) == 3 * len(moe_layers({"text_config": MOE_TEXT})) and ea.keys() == eb.keys()
    assert [f for f in ea if ea[f] != eb[f]] == []
    assert a == b


def test_fp8_builds_differ_from_bf16(ckpt, moe):
    """The FP8 files are the dequantised codes, not the bf16 weights they
    were quantised from (so the equalities above compare real data)."""
    a = expert_files(cache_files(pathlib.Path(moe.build(ckpt, "bf16-experts", "1x2")[0])))
    b = expert_files(cache_files(pathlib.Path(moe.build(ckpt, "fp8-experts", "1x2")[0])))
    assert a.keys() == b.keys() and all(a[f] != b[f] for f in a)


def test_transformers_fp8_save_refused(ckpt, moe, tmp_path):
    """transformers 5.23.0's own save_pretrained of the FP8 model writes each
    expert's codes per expert but their scales only under the fused names
    (as for Qwen3MoeForCausalLM, test_fp8.test_moe_fp8_save_is_broken_and_named):
    map names the scale-less expert weights and the stray fused scales,
    and cache build refuses it, exit 1, writing nothing."""
    d = moe.dirs["fp8-tf"]
    sd = tflib.read_all(d)
    no_scale = sorted(k for k, v in sd.items() if ".mlp.experts." in k and v.dtype == torch.float8_e4m3fn
                      and k + "_scale_inv" not in sd)
    fused_scales = sorted(k for k in sd if k.endswith(("experts.gate_up_proj_scale_inv", "experts.down_proj_scale_inv")))
    assert len(no_scale) == 2 * 3 * E and len(fused_scales) == 4
    doc = ckpt.json("map", d, "--mesh", "1x2", rc=1)
    named = {t for p in doc["problems"] if p["id"] == "scale" for t in p["tensors"]}
    assert named == set(no_scale)
    assert sorted(u if isinstance(u, str) else u["name"] for u in doc["unmapped"]) == fused_scales
    out = tmp_path / "cache"
    ckpt.run("cache", "build", d, "--mesh", "1x2", "--out", out, rc=1)
    assert not out.exists() or [p for p in out.rglob("*") if p.is_file()] == []
