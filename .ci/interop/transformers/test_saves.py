"""save_pretrained of tiny random models of every class of the families
ckpt's users meet (zoo.SAVES: Qwen3_5ForConditionalGeneration with the
released MTP head, tied embeddings and a custom layer_types in bf16, f16 and
f32; Qwen3_5ForCausalLM, Qwen3_5MoeForConditionalGeneration,
Qwen3NextForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM,
LlamaForCausalLM, GptOssForCausalLM in bf16), each single-file, sharded and
with variant=, read by ckpt inspect / verify / contract / map / cache build /
extract / diff and held against what transformers, torch and safetensors
say of the same files."""

import json
import os

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file

import tflib
from known import SERVED, mark, params
from zoo import CASES, Case

BF16 = [c for c in CASES if c.dtype == "bf16"]


def src(ck, saved):
    """The SRC arguments of a one-checkpoint command for a save: its
    directory, and --variant NAME for a variant save (as
    from_pretrained(variant=NAME))."""
    return [saved.dir, *saved.variant_args()]


def side(saved):
    """One side of a diff: the directory, or a variant save's index (diff's
    --variant would apply to both sides; docs/cli.md)."""
    return tflib.index_path(saved.dir, saved.variant) if saved.variant else saved.dir


# ---------------------------------------------------------------- inspect

@pytest.mark.parametrize("case", params("inspect", CASES))
def test_inspect(ckpt, zoo, case):
    """inspect names every tensor safetensors reads, with its dtype, shape
    and file; parameters add up to the model's num_parameters() plus the
    MTP head transformers does not know (tied weights once, as written)."""
    s = zoo.save(case)
    doc = ckpt.json("inspect", *src(ckpt, s))
    ref = tflib.headers(s.dir, s.variant)
    got = {t["name"]: (t["dtype"], t["shape"], os.path.basename(t["file"])) for t in doc["tensors"]}
    assert got == ref
    extra = sum(t.numel() for t in s.extra.values())
    assert doc["summary"]["parameters"] == s.num_parameters + extra
    assert doc["summary"]["tensors"] == len(ref)
    assert sum(t["parameters"] for t in doc["tensors"]) == doc["summary"]["parameters"]
    want_dtype = tflib.ST_DTYPE[tflib.DTYPES[case.dtype]]
    assert doc["summary"]["parameters_by_dtype"] == {want_dtype: s.num_parameters + extra}
    assert doc["sharded"] == (case.layout != "single")
    with safe_open(os.path.join(s.dir, tflib.shard_files(s.dir, s.variant)[0]), "pt") as f:
        assert doc["files"][0]["metadata"] == f.metadata()


# ---------------------------------------------------------------- verify

def layer_counts(cfg):
    tc = cfg.get("text_config", cfg)
    lt = tc.get("layer_types") or []
    return lt.count("linear_attention"), lt.count("full_attention")


@pytest.mark.parametrize("case", params("verify", CASES))
def test_verify(ckpt, zoo, case):
    """A checkpoint transformers wrote and loads back (no missing or
    unexpected key but the MTP head it ignores, every tensor as stored)
    passes verify --read-data; for a Qwen3.5 model the architecture profile
    counts the layers of the config's own layer_types and the MTP layer."""
    s = zoo.save(case)
    doc = ckpt.json("verify", *src(ckpt, s), "--read-data")
    failing = [f for f in doc["findings"] if f["status"] in ("fail", "warn")]
    assert doc["ok"] and not failing, failing
    cfg = json.load(open(os.path.join(s.dir, "config.json")))
    if case.kind in SERVED:
        (arch,) = [f for f in doc["findings"] if f["id"] == "arch.config"]
        lin, full = layer_counts(cfg)
        assert f"{lin + full} layers ({lin} linear_attention + {full} full_attention)" in arch["message"]
        assert (", 1 mtp," in arch["message"]) == bool(s.extra)
    # What transformers says: it loads the directory it wrote.
    m, info = tflib.CLASSES[case.kind].from_pretrained(
        s.dir, dtype=tflib.DTYPES[case.dtype], variant=s.variant, output_loading_info=True)
    assert not info["missing_keys"] and not info["mismatched_keys"]
    # transformers drops the MTP head silently
    # (_keys_to_ignore_on_load_unexpected = [r"^mtp.*"]).
    assert set(info["unexpected_keys"]) <= set(s.extra)
    stored = tflib.read_all(s.dir, s.variant)
    for k, v in m.state_dict().items():
        if k in stored:
            assert torch.equal(v, stored[k]), k


def test_verify_names_nonfinite(ckpt, zoo, tmp_path):
    """One NaN and one Inf set in a saved model's weights by torch: verify
    --read-data fails data.float_nonfinite naming exactly those tensors."""
    m = tflib.make_model("llama")
    names = ["model.layers.0.mlp.up_proj.weight", "lm_head.weight"]
    sd = dict(m.named_parameters())
    with torch.no_grad():
        sd[names[0]][3, 5] = float("nan")
        sd[names[1]][1, 2] = float("inf")
    d = tmp_path / "nan"
    m.save_pretrained(d)
    stored = tflib.read_all(str(d))
    bad = sorted(k for k, v in stored.items() if not torch.isfinite(v.float()).all())
    assert bad == sorted(names)
    doc = ckpt.json("verify", d, "--read-data", rc=1)
    fs = [f for f in doc["findings"] if f["id"] == "data.float_nonfinite" and f["status"] == "fail"]
    assert sorted(t for f in fs for t in f["tensors"]) == bad, fs


# ---------------------------------------------------------------- contract

@pytest.mark.parametrize("case", params("contract", BF16))
def test_contract_across_layouts(ckpt, zoo, case, tmp_path):
    """The contract --read-data of the single-file save holds for the same
    model saved sharded or as a variant (the same tensors, bytes and
    config, by safetensors), and each save against its own contract."""
    single = zoo.save(case.kind, case.dtype, "single")
    s = zoo.save(case)
    a, b = tflib.read_all(single.dir), tflib.read_all(s.dir, s.variant)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    c = tmp_path / "c.json"
    ckpt.run("contract", single.dir, "--read-data", "-o", c)
    doc = ckpt.json("verify", *src(ckpt, s), "--against", c, "--read-data")
    assert doc["ok"], [f for f in doc["findings"] if f["status"] == "fail"]
    c2 = tmp_path / "c2.json"
    ckpt.run("contract", *src(ckpt, s), "-o", c2)
    assert ckpt.json("verify", *src(ckpt, s), "--against", c2)["ok"]


# ---------------------------------------------------------------- map / cache

def plan_names(doc):
    """Every tensor name a map document accounts for, and where."""
    where = {}
    for e in doc["entries"]:
        for n in e["sources"] + e.get("scales", []):
            where.setdefault(n, set()).add("entry")
    for i in doc["ignored"]:
        where.setdefault(i["name"], set()).add("ignored")
    for u in doc["unmapped"]:
        where.setdefault(u if isinstance(u, str) else u["name"], set()).add("unmapped")
    return where


SERVED_CASES = [c for c in CASES if c.kind in SERVED]
UNSERVED = [c for c in CASES if c.kind not in SERVED and c.layout == "single"]


@pytest.mark.parametrize("case", params("map", SERVED_CASES))
def test_map_served(ckpt, zoo, case):
    """map plans a Qwen3.5 checkpoint transformers wrote (either layout of
    names: model.language_model.* and text-only model.*), completely: every
    tensor safetensors reads is in an entry or the ignored list (not both),
    none unmapped, no problem, every matrix of the MTP head in an entry."""
    s = zoo.save(case)
    doc = ckpt.json("map", *src(ckpt, s), "--mesh", "1x2")
    assert doc["problems"] == [] and doc["unmapped"] == []
    where = plan_names(doc)
    assert set(where) == set(tflib.headers(s.dir, s.variant))
    assert all(len(w) == 1 for w in where.values()), {n: w for n, w in where.items() if len(w) != 1}
    for n, t in s.extra.items():
        if t.ndim == 2:
            assert where[n] == {"entry"}, n
    # Each decoder layer is planned as the kind the config's layer_types
    # (transformers' own list, not the default interval) says it is: gated
    # attention's fused q/k/v/gate target, or the Gated DeltaNet's.
    cfg = json.load(open(os.path.join(s.dir, "config.json")))
    lt = cfg.get("text_config", cfg)["layer_types"]
    targets = [e["target"] for e in doc["entries"]]
    for i, kind in enumerate(lt):
        attn = any(t.startswith(f"layers.{i}/tp/wqkv") for t in targets)
        gdn = any(t.startswith(f"layers.{i}/tp/qkvzab") for t in targets)
        assert (attn, gdn) == (kind == "full_attention", kind == "linear_attention"), (i, kind)


@pytest.mark.parametrize("case", params("map_unserved", UNSERVED))
def test_map_unserved_is_named(ckpt, zoo, case):
    """An architecture no mapping profile serves is refused (exit 1) naming
    its model_type and the profiles there are, not as a list of missing
    Qwen3.5 tensors."""
    s = zoo.save(case)
    p = ckpt.run("map", *src(ckpt, s), "--mesh", "1x2", rc=1)
    model_type = json.load(open(os.path.join(s.dir, "config.json")))["model_type"]
    profiles = ckpt.json("map", "--list-profiles")
    names = [p_["name"] for p_ in profiles.get("profiles", [])]
    out = p.stdout + p.stderr
    assert model_type in out and all(n in out for n in names), out


@pytest.mark.parametrize("case", UNSERVED, ids=[c.id for c in UNSERVED])
def test_cache_build_unserved_refused(ckpt, zoo, case, tmp_path):
    """cache build of an architecture no profile serves exits 1 and writes
    nothing."""
    s = zoo.save(case)
    out = tmp_path / "cache"
    ckpt.run("cache", "build", *src(ckpt, s), "--mesh", "1x2", "--out", out, rc=1)
    written = [p for p in out.rglob("*") if p.is_file()] if out.exists() else []
    assert written == []


def cache_files(root):
    """{relative path: bytes} of every .tensorbin file under root."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.tensorbin"))}


def f32_of_bf16(zoo):
    """The bf16 Qwen3.5 model converted to float32 by torch (exactly: every
    bf16 value is a float32) and saved single-file with the same MTP head in
    float32."""
    def make(d):
        m = tflib.make_model("qwen3_5").to(torch.float32)
        mtp = {k: v.float() for k, v in zoo.mtp("qwen3_5").items()}
        tflib.save(m, d, mtp=mtp)
    return zoo.once("qwen3_5-f32-of-bf16", make)


def text_only_of(zoo):
    """The language model of the bf16 Qwen3_5ForConditionalGeneration as a
    Qwen3_5ForCausalLM (its text_config, the same tensors under model.*,
    tied embeddings), saved by transformers, with the same MTP head."""
    def make(d):
        full = zoo.model("qwen3_5")
        tc = full.config.text_config
        import transformers as T
        m = T.Qwen3_5ForCausalLM(T.Qwen3_5TextConfig(**tc.to_dict())).to(torch.bfloat16)
        sd = {k.replace("model.language_model.", "model."): v
              for k, v in full.state_dict().items() if k.startswith(("model.language_model.", "lm_head"))}
        missing, unexpected = m.load_state_dict(sd, strict=False)
        assert not unexpected and set(missing) <= {"lm_head.weight"}
        m.tie_weights()
        tflib.save(m, d, mtp=zoo.mtp("qwen3_5"))
    return zoo.once("qwen3_5-text-of-full", make)


@pytest.mark.parametrize("case", params("cache", [Case(k, "bf16", "single") for k in sorted(SERVED)]))
def test_cache_build(ckpt, zoo, case, tmp_path):
    """cache build of a Qwen3.5 save writes every file map plans (the
    vision tower's in its own folder, planned as map's vision part), and
    cache verify --source accepts it."""
    s = zoo.save(case)
    plan = ckpt.json("map", *src(ckpt, s), "--mesh", "1x2")
    out = tmp_path / "cache"
    summary = ckpt.json("cache", "build", *src(ckpt, s), "--mesh", "1x2", "--out", out)
    files = cache_files(out)
    planned = [e["file"] for e in plan["entries"]]
    if "vision_config" in json.load(open(os.path.join(s.dir, "config.json"))):
        assert plan.get("vision") and plan["vision"]["entries"], "a vision tower is planned as the vision part"
        planned += [e["file"] for e in plan["vision"]["entries"]]
    assert set(files) == set(planned), summary
    ckpt.run("cache", "verify", out, "--source", s.dir)


def test_cache_same_weights_same_bytes(ckpt, zoo, tmp_path):
    """The same weights give the same cache bytes however transformers saved
    them: single-file and sharded, bf16 and their exact float32 copy."""
    builds = {}
    for name, d in (("single", zoo.save("qwen3_5").dir), ("sharded", zoo.save("qwen3_5", "bf16", "sharded").dir),
                    ("f32", f32_of_bf16(zoo))):
        ckpt.run("cache", "build", d, "--mesh", "1x2", "--out", tmp_path / name)
        builds[name] = cache_files(tmp_path / name)
    assert builds["single"] and builds["sharded"] == builds["single"]
    assert builds["f32"] == builds["single"]


@mark("cache-text-only")
def test_cache_text_only_same_bytes(ckpt, zoo, tmp_path):
    """The text-only Qwen3_5ForCausalLM save of the same language model
    (model.* instead of model.language_model.*, as the serving stack's
    weight mapping strips either prefix) builds the same cache files, byte
    for byte, as the Qwen3_5ForConditionalGeneration save, whose vision
    tower goes to a folder of its own beside them."""
    ckpt.run("cache", "build", zoo.save("qwen3_5").dir, "--mesh", "1x2", "--out", tmp_path / "full")
    ckpt.run("cache", "build", text_only_of(zoo), "--mesh", "1x2", "--out", tmp_path / "text")
    full, text = cache_files(tmp_path / "full"), cache_files(tmp_path / "text")
    vision = {f for f in full if f.startswith("P300/tensor_cache_bfp8/")}
    assert vision, "the full model's vision folder"
    assert text and text == {f: b for f, b in full.items() if f not in vision}


@mark("tie-top-level-only")
def test_tied_top_level_only(ckpt, tmp_path):
    """Qwen3_5Config(tie_word_embeddings=True) with a text_config that does
    not repeat it (text_config.tie_word_embeddings stays false in the saved
    config): transformers ties lm_head to the embeddings and writes no
    lm_head.weight, and loads the directory back; verify passes it and map
    plans it complete."""
    import transformers as T
    cfg = tflib.config_of("qwen3_5")
    cfg.text_config.tie_word_embeddings = False
    torch.manual_seed(0)
    m = T.Qwen3_5ForConditionalGeneration(cfg).to(torch.bfloat16)
    d = tmp_path / "tied"
    tflib.save(m, str(d), mtp=tflib.mtp_tensors(m))
    saved = json.load(open(d / "config.json"))
    assert saved["tie_word_embeddings"] is True and saved["text_config"]["tie_word_embeddings"] is False
    assert "lm_head.weight" not in tflib.headers(str(d))
    _, info = T.Qwen3_5ForConditionalGeneration.from_pretrained(d, output_loading_info=True)
    assert not info["missing_keys"]
    assert ckpt.json("verify", d)["ok"]
    doc = ckpt.json("map", d, "--mesh", "1x2")
    assert doc["problems"] == []


# ---------------------------------------------------------------- extract

@pytest.mark.parametrize("case", params("extract", CASES))
def test_extract_keep(ckpt, zoo, case, tmp_path):
    """extract --match '**' of a save is, read by safetensors, every tensor
    as stored (bytes, dtype, shape); into a directory with
    --max-shard-size it is sharded with an index and transformers loads it
    back as the same model."""
    s = zoo.save(case)
    stored = tflib.read_all(s.dir, s.variant)
    out = tmp_path / "x.safetensors"
    ckpt.run("extract", *src(ckpt, s), "--match", "**", "-o", out)
    got = load_file(str(out))
    assert got.keys() == stored.keys()
    for k in stored:
        assert got[k].dtype == stored[k].dtype and torch.equal(got[k].view(torch.uint8), stored[k].view(torch.uint8)), k
    total = sum(v.numel() * v.element_size() for v in stored.values())
    d = tmp_path / "dir"
    ckpt.run("extract", *src(ckpt, s), "--match", "**", "--max-shard-size", str(total // 3), "-o", d)
    assert (d / "model.safetensors.index.json").exists()
    m, info = tflib.CLASSES[case.kind].from_pretrained(d, dtype=tflib.DTYPES[case.dtype], output_loading_info=True)
    assert not info["missing_keys"]
    for k, v in m.state_dict().items():
        if k in stored:
            assert torch.equal(v, stored[k]), k


CONVERT = [(c, to) for c in CASES if c.kind == "qwen3_5" and c.layout == "single"
           for to in ("bf16", "f16", "f32") if to != c.dtype]


@pytest.mark.parametrize("case,to", [pytest.param(c, t, id=f"{c.id}-to-{t}") for c, t in CONVERT])
def test_extract_dtype(ckpt, zoo, case, to, tmp_path):
    """extract --dtype bf16|f16|f32 of a float save equals torch's
    Tensor.to(dtype) of every tensor (round to nearest even), bit for bit."""
    s = zoo.save(case)
    out = tmp_path / "x.safetensors"
    ckpt.run("extract", s.dir, "--match", "**", "--dtype", to, "-o", out)
    got = load_file(str(out))
    stored = tflib.read_all(s.dir)
    assert got.keys() == stored.keys()
    for k, v in stored.items():
        want = v.to(tflib.DTYPES[to])
        assert got[k].dtype == want.dtype and torch.equal(got[k].view(torch.uint8), want.view(torch.uint8)), k


# ---------------------------------------------------------------- diff

def cosine(a, b):
    """The cosine of two tensors in float64, as torch computes it."""
    a, b = a.double().flatten(), b.double().flatten()
    return float(a @ b / (a.norm() * b.norm()))

@pytest.mark.parametrize("case", params("diff", [c for c in BF16 if c.layout != "single"]))
def test_diff_layouts_identical(ckpt, zoo, case):
    """diff of the single-file and the sharded (or variant) save of one
    model: every tensor identical, exit 0, as safetensors reads them."""
    a, b = zoo.save(case.kind, case.dtype, "single"), zoo.save(case)
    doc = ckpt.json("diff", a.dir, side(b))
    assert doc["differs"] is False
    assert {t["name"] for t in doc["tensors"]} == set(tflib.headers(a.dir))
    assert all(t["relation"] == "identical" for t in doc["tensors"])


def test_diff_bf16_f32_same_values(ckpt, zoo):
    """The bf16 save against its exact float32 copy: every tensor
    dtype_changed with no value changed (torch: v.float() equal), the
    config's dtype the one key that differs; exit 1."""
    a = zoo.save("qwen3_5")
    d = f32_of_bf16(zoo)
    doc = ckpt.json("diff", a.dir, d, rc=1)
    sa, sb = tflib.read_all(a.dir), tflib.read_all(d)
    assert all(torch.equal(sa[k].float(), sb[k]) for k in sa)
    for t in doc["tensors"]:
        assert t["relation"] == "dtype_changed", t
        assert t["changed_elems"] == 0 and t["max_abs_diff"] == 0 and t["rel_l2"] == 0, t
        assert t["cosine"] == pytest.approx(cosine(sa[t["name"]], sb[t["name"]]), abs=1e-12), t
    assert {c["path"] for c in doc["config"]} == {"dtype"}


# ---------------------------------------------------------------- variants

@mark("variant-dir")
def test_variant_dir_opens_and_says_so(ckpt, zoo):
    """A directory holding one variant (save_pretrained(variant="fp16"),
    sharded: model.safetensors.index.fp16.json) opens without --variant, as
    from_pretrained(variant="fp16") reads it, with the same tensors, and
    says which variant it opened."""
    s = zoo.save("qwen3_5", "bf16", "variant")
    p = ckpt.run("inspect", s.dir, "--format", "json")
    assert {t["name"] for t in json.loads(p.stdout)["tensors"]} == set(tflib.headers(s.dir, s.variant))
    assert s.variant in p.stderr


@mark("variant-dir")
def test_variant_single_file(ckpt, zoo, tmp_path):
    """save_pretrained(variant="ema") unsharded writes model.ema.safetensors;
    --variant ema reads it, as from_pretrained(variant="ema") does."""
    m = zoo.model("llama")
    d = tmp_path / "ema"
    m.save_pretrained(d, variant="ema")
    assert (d / "model.ema.safetensors").exists()
    doc = ckpt.json("inspect", d, "--variant", "ema")
    assert {t["name"] for t in doc["tensors"]} == set(tflib.headers(str(d), "ema"))


@mark("variant-dir")
def test_several_variants_listed(ckpt, zoo, tmp_path):
    """A directory with two variants (fp16 and ema, both sharded): without
    --variant the command exits 2 naming both; --variant picks one."""
    m = zoo.model("llama")
    d = tmp_path / "two"
    total = sum(p.numel() * p.element_size() for p in m.parameters())
    for v in ("fp16", "ema"):
        m.save_pretrained(d, variant=v, max_shard_size=total // 3)
    assert (d / "model.safetensors.index.fp16.json").exists() and (d / "model.safetensors.index.ema.json").exists()
    p = ckpt.run("inspect", d, rc=2)
    assert "fp16" in p.stderr and "ema" in p.stderr
    doc = ckpt.json("inspect", d, "--variant", "ema")
    assert {t["name"] for t in doc["tensors"]} == set(tflib.headers(str(d), "ema"))
