"""Fine-tunes as a user's pipeline makes them: from_pretrained of a
transformers save, a few torch optimizer steps (SGD, Adam) on random token
ids, save_pretrained (the MTP head, which transformers drops, carried over
by the pipeline); known edits (exactly k elements set, one tensor zeroed, a
tensor added, one removed); a bare from_pretrained -> save_pretrained; config
edits. diff's relations, counts and statistics are held against torch on
the tensors safetensors reads, verify --against a contract of the base
against what transformers builds from each side."""

import json
import os
import shutil

import pytest
import torch

import tflib
from known import mark
from test_saves import cosine

TRAINED = [("qwen3_5", "sgd"), ("qwen3_5", "adam"), ("llama", "sgd"), ("qwen3_moe", "adam"), ("qwen3_next", "sgd")]


def torch_diff(a, b):
    """What diff must say of two tensors of one dtype and shape, from torch:
    relation, changed elements, max |a-b|, rel_l2 = |a-b| / |a|, cosine, in
    float64."""
    a64, b64 = a.double(), b.double()
    changed = int((a != b).sum())
    d = (a64 - b64).flatten()
    na = float(a64.flatten().norm())
    return {
        "relation": "identical" if changed == 0 else "changed",
        "changed_elems": changed,
        "max_abs_diff": float(d.abs().max()) if d.numel() else 0.0,
        "rel_l2": float(d.norm()) / na if na else None,
        "cosine": cosine(a, b) if na and float(b64.norm()) else None,
    }


def check_diff(doc, base, ft):
    """Every row of diff's JSON against torch_diff of the tensors; the
    summary's counts per relation against the rows torch implies."""
    rows = {t["name"]: t for t in doc["tensors"]}
    assert set(rows) == set(base) | set(ft)
    counts = {}
    for k in rows:
        r = rows[k]
        if k not in ft:
            want = {"relation": "only_in_base"}
        elif k not in base:
            want = {"relation": "only_in_ft"}
        else:
            want = torch_diff(base[k], ft[k])
        counts[want["relation"]] = counts.get(want["relation"], 0) + 1
        assert r["relation"] == want["relation"], (k, r)
        if want["relation"] in ("identical", "changed"):
            assert r["changed_elems"] == want["changed_elems"], (k, r, want)
            assert r["max_abs_diff"] == pytest.approx(want["max_abs_diff"], rel=1e-12, abs=0), (k, r, want)
            if want["rel_l2"] is not None:
                assert r["rel_l2"] == pytest.approx(want["rel_l2"], rel=1e-9, abs=1e-15), (k, r, want)
            if want["cosine"] is not None:
                assert r["cosine"] == pytest.approx(want["cosine"], abs=1e-12), (k, r, want)
    for rel, n in counts.items():
        assert doc["summary"][rel] == n, (rel, doc["summary"])
    assert sum(doc["summary"][r] for r in ("identical", "changed", "only_in_base", "only_in_ft")) == len(rows)
    return rows


@pytest.mark.parametrize("kind,opt", TRAINED, ids=[f"{k}-{o}" for k, o in TRAINED])
def test_trained(ckpt, zoo, kind, opt, tmp_path):
    """diff of the base and its fine-tune after 3 optimizer steps: every
    tensor identical or changed exactly as torch compares them (bf16 steps
    leave some weights unchanged: the vision tower gets no gradient, small
    updates round away), changed_elems, max_abs_diff, rel_l2 and cosine
    as torch computes them; verify --against the base's contract passes
    (same keys, dtypes, shapes, config), and with hashes (contract
    --read-data) fails exactly the tensors torch sees changed."""
    base = zoo.save(kind)
    ft = zoo.trained(kind, opt)
    a, b = tflib.read_all(base.dir), tflib.read_all(ft)
    doc = ckpt.json("diff", base.dir, ft, rc=1)
    rows = check_diff(doc, a, b)
    changed = sorted(k for k, r in rows.items() if r["relation"] == "changed")
    assert changed and len(changed) < len(rows)
    assert doc["differs"] is True
    c = tmp_path / "c.json"
    ckpt.run("contract", base.dir, "-o", c)
    v = ckpt.json("verify", ft, "--against", c)
    assert v["ok"], [f for f in v["findings"] if f["status"] == "fail"]
    ch = tmp_path / "ch.json"
    ckpt.run("contract", base.dir, "--read-data", "-o", ch)
    v = ckpt.json("verify", ft, "--against", ch, "--read-data", rc=1)
    failed = sorted(t for f in v["findings"] if f["id"] == "contract.hash" and f["status"] == "fail" for t in f["tensors"])
    assert failed == changed


def edited(zoo, tmp_path, k=7):
    """The Qwen3.5 base edited as a user would: from_pretrained, exactly k
    elements of one weight set to a new value, one weight zeroed,
    save_pretrained; the MTP head carried over but one of its tensors
    dropped, and a tensor added to the file."""
    base = zoo.save("qwen3_5")
    m = tflib.CLASSES["qwen3_5"].from_pretrained(base.dir, dtype=torch.bfloat16)
    setk = "model.language_model.layers.1.mlp.up_proj.weight"
    zero = "model.language_model.layers.2.linear_attn.out_proj.weight"
    with torch.no_grad():
        w = m.get_parameter(setk)
        flat = w.view(-1)
        idx = torch.arange(k) * 997 % flat.numel()
        flat[idx] = flat[idx] + 1.0  # |w| << 1: a bf16 step of 1.0 always changes it
        m.get_parameter(zero).zero_()
    d = tmp_path / "edited"
    m.save_pretrained(d)
    drop = "mtp.layers.0.mlp.down_proj.weight"
    tflib.add_tensors(str(d), {n: t for n, t in base.extra.items() if n != drop})
    add = "model.language_model.layers.0.mlp.gate_proj.bias"
    tflib.add_tensors(str(d), {add: torch.zeros(tflib.INTER, dtype=torch.bfloat16)})
    return base, d, dict(setk=setk, zero=zero, drop=drop, add=add, k=k)


def test_known_edits(ckpt, zoo, tmp_path):
    """diff counts exactly the edits: k elements changed in the set tensor,
    every nonzero element in the zeroed one (rel_l2 1), the dropped MTP
    tensor only_in_base, the added one only_in_ft, everything else
    identical; verify --against the base's contract fails naming exactly the
    removed and the added key."""
    base, d, e = edited(zoo, tmp_path)
    a, b = tflib.read_all(base.dir), tflib.read_all(str(d))
    rows = check_diff(ckpt.json("diff", base.dir, d, rc=1), a, b)
    assert rows[e["setk"]]["changed_elems"] == e["k"]
    assert rows[e["zero"]]["changed_elems"] == int((a[e["zero"]] != 0).sum())
    assert rows[e["zero"]]["rel_l2"] == 1
    assert rows[e["drop"]]["relation"] == "only_in_base" and rows[e["add"]]["relation"] == "only_in_ft"
    assert {k for k, r in rows.items() if r["relation"] != "identical"} == {e["setk"], e["zero"], e["drop"], e["add"]}
    c = tmp_path / "c.json"
    ckpt.run("contract", base.dir, "-o", c)
    v = ckpt.json("verify", d, "--against", c, rc=1)
    fails = {f["id"]: f["tensors"] for f in v["findings"] if f["status"] == "fail" and f["id"].startswith("contract.")}
    assert fails == {"contract.key_removed": [e["drop"]], "contract.key_added": [e["add"]]}, fails


def test_resave_drops_mtp(ckpt, zoo, tmp_path):
    """A bare from_pretrained -> save_pretrained of the checkpoint with the
    MTP head writes no mtp.* (transformers ignores them on load): verify
    --against the base's contract fails naming exactly the 15 MTP tensors,
    every other tensor identical (diff)."""
    base = zoo.save("qwen3_5")
    d = tmp_path / "resave"
    tflib.CLASSES["qwen3_5"].from_pretrained(base.dir, dtype=torch.bfloat16).save_pretrained(d)
    assert not [k for k in tflib.headers(str(d)) if k.startswith("mtp.")]
    c = tmp_path / "c.json"
    ckpt.run("contract", base.dir, "-o", c)
    v = ckpt.json("verify", d, "--against", c, rc=1)
    (f,) = [f for f in v["findings"] if f["id"] == "contract.key_removed" and f["status"] == "fail"]
    assert sorted(f["tensors"]) == sorted(base.extra)
    doc = ckpt.json("diff", base.dir, d, rc=1)
    assert {t["name"] for t in doc["tensors"] if t["relation"] != "identical"} == set(base.extra)


def resaved(zoo, tmp_path, base_dir):
    """from_pretrained -> save_pretrained of base_dir, the MTP head carried
    over (a pipeline that keeps it)."""
    base = zoo.save("qwen3_5")
    d = tmp_path / "resave"
    tflib.CLASSES["qwen3_5"].from_pretrained(base_dir, dtype=torch.bfloat16).save_pretrained(d)
    tflib.add_tensors(str(d), base.extra)
    return d


def test_resave_contract(ckpt, zoo, tmp_path):
    """The bare re-save (MTP head carried over) holds the base's contract,
    with hashes: the same tensors, bytes and config as transformers builds
    it."""
    base = zoo.save("qwen3_5")
    d = resaved(zoo, tmp_path, base.dir)
    c = tmp_path / "c.json"
    ckpt.run("contract", base.dir, "--read-data", "-o", c)
    v = ckpt.json("verify", d, "--against", c, "--read-data")
    assert v["ok"], [f for f in v["findings"] if f["status"] == "fail"]


@mark("resave-diff")
def test_resave_diff(ckpt, zoo, tmp_path):
    """diff of the base and its bare re-save: every tensor identical, and
    the config keys transformers adds on save (text_config.dtype,
    vision_config.dtype: bookkeeping, as the contract lists them) do not
    make a difference: differs false, exit 0."""
    base = zoo.save("qwen3_5")
    d = resaved(zoo, tmp_path, base.dir)
    doc = ckpt.json("diff", base.dir, d)
    assert all(t["relation"] == "identical" for t in doc["tensors"])
    assert doc["differs"] is False


def release_style(cfg):
    """The config as the released Qwen3.5 files write it: without the
    defaults transformers fills in on save (attention_dropout,
    initializer_range, the null token ids, vision_config.rope_parameters),
    partial_rotary_factor beside rope_parameters rather than in it."""
    tc = cfg["text_config"]
    for k in ("attention_dropout", "initializer_range", "bos_token_id", "eos_token_id", "pad_token_id"):
        tc.pop(k, None)
    tc["partial_rotary_factor"] = tc["rope_parameters"].pop("partial_rotary_factor")
    cfg["vision_config"].pop("rope_parameters", None)
    cfg["vision_config"].pop("initializer_range", None)


def built(d):
    """What transformers builds from checkpoint d: its config as a dict
    (bookkeeping keys left out) and its state dict."""
    m = tflib.CLASSES["qwen3_5"].from_pretrained(d, dtype=torch.bfloat16)
    cfg = m.config.to_dict()
    for k in ("transformers_version", "_name_or_path", "dtype"):
        cfg.pop(k, None)
    for sub in ("text_config", "vision_config"):
        cfg[sub].pop("dtype", None)
    return cfg, m.state_dict()


@mark("resave-release-config")
def test_resave_release_config(ckpt, zoo, tmp_path):
    """A base with the released config style, re-saved bare: transformers
    builds the same model from both (config.to_dict() and every tensor
    equal), so verify --against the base's contract passes, and diff finds
    no difference (exit 0): each key the re-save added or moved is a note
    (builds_same, or bookkeeping)."""
    base = zoo.save("qwen3_5")
    rel = tmp_path / "release"
    shutil.copytree(base.dir, rel)
    tflib.edit_config(str(rel), release_style)
    d = resaved(zoo, tmp_path, rel)
    (ca, sa), (cb, sb) = built(rel), built(d)
    assert ca == cb and sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)
    c = tmp_path / "c.json"
    ckpt.run("contract", rel, "-o", c)
    v = ckpt.json("verify", d, "--against", c)
    assert v["ok"], [f for f in v["findings"] if f["status"] == "fail"]
    doc = ckpt.json("diff", rel, d)
    assert doc["differs"] is False
    assert any(x.get("builds_same") for x in doc["config"])
    assert all(x.get("builds_same") or x.get("bookkeeping") for x in doc["config"]), doc["config"]


@mark("float-layer-count")
def test_float_layer_count(ckpt, zoo, tmp_path):
    """text_config.num_hidden_layers 4 -> 4.0: transformers refuses the
    config (an integer field given a float); verify --against the base's
    contract must fail naming the key, and diff (exit 1) lists it as the
    one difference, an integer given as a float."""
    base = zoo.save("qwen3_5")
    d = tmp_path / "float"
    shutil.copytree(base.dir, d)
    tflib.edit_config(str(d), lambda c: c["text_config"].__setitem__("num_hidden_layers", 4.0))
    with pytest.raises(Exception):
        tflib.CLASSES["qwen3_5"].from_pretrained(d, dtype=torch.bfloat16)
    c = tmp_path / "c.json"
    ckpt.run("contract", base.dir, "-o", c)
    v = ckpt.json("verify", d, "--against", c, rc=1)
    assert any("num_hidden_layers" in f["message"] for f in v["findings"]
               if f["id"] == "contract.config" and f["status"] == "fail")
    doc = ckpt.json("diff", base.dir, d, rc=1)
    assert [(x["path"], x.get("kind")) for x in doc["config"] if not (x.get("builds_same") or x.get("bookkeeping"))] == [
        ("text_config.num_hidden_layers", "integer_as_float")]


def test_config_change_fails_contract(ckpt, zoo, tmp_path):
    """A config change that changes what transformers builds
    (text_config.rms_norm_eps 1e-6 -> 1e-5: the model's norms differ) fails
    verify --against naming the key and both values."""
    base = zoo.save("qwen3_5")
    d = tmp_path / "eps"
    shutil.copytree(base.dir, d)
    tflib.edit_config(str(d), lambda c: c["text_config"].__setitem__("rms_norm_eps", 1e-5))
    m = tflib.CLASSES["qwen3_5"].from_pretrained(d)
    assert m.config.text_config.rms_norm_eps == 1e-5
    c = tmp_path / "c.json"
    ckpt.run("contract", base.dir, "-o", c)
    v = ckpt.json("verify", d, "--against", c, rc=1)
    (f,) = [f for f in v["findings"] if f["id"] == "contract.config" and f["status"] == "fail"]
    assert "text_config.rms_norm_eps" in f["message"] and "1e-05" in f["message"].replace("1e-5", "1e-05")


def bookkeeping_edit(zoo, tmp_path):
    base = zoo.save("qwen3_5")
    d = tmp_path / "bookkeeping"
    shutil.copytree(base.dir, d)

    def edit(c):
        c["transformers_version"] = "5.22.0"
        c["text_config"]["use_cache"] = False
    tflib.edit_config(str(d), edit)
    return base, d


def test_bookkeeping_contract(ckpt, zoo, tmp_path):
    """Configs differing only in transformers_version and use_cache: the same
    model for transformers, and verify --against passes."""
    base, d = bookkeeping_edit(zoo, tmp_path)
    (ca, sa), (cb, sb) = built(base.dir), built(d)
    cb["text_config"]["use_cache"] = ca["text_config"]["use_cache"]  # a generation switch
    assert ca == cb and all(torch.equal(sa[k], sb[k]) for k in sa)
    c = tmp_path / "c.json"
    ckpt.run("contract", base.dir, "-o", c)
    assert ckpt.json("verify", d, "--against", c)["ok"]


@mark("diff-bookkeeping")
def test_bookkeeping_diff(ckpt, zoo, tmp_path):
    """The same pair: diff finds no difference (exit 0, differs false)."""
    base, d = bookkeeping_edit(zoo, tmp_path)
    doc = ckpt.json("diff", base.dir, d)
    assert doc["differs"] is False
