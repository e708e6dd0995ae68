"""Checkpoints written by compressed-tensors' own code (ctlib: a tiny
Llama-shaped model quantised with a preset scheme, scales from
calculate_qparams, compressed and saved through ModelCompressor), read by
ckpt inspect / verify / extract / diff.

The formats ckpt reads (float-quantized FP8: strategies tensor, channel,
block) are checked against compressed-tensors' own decompressor; the
formats it does not read (nvfp4-pack-quantized, mxfp4-pack-quantized,
pack-quantized, int-quantized) must never pass silently: verify warns that
it did not verify them (exit 1 with --strict) and claims no scheme,
extract --dtype refuses them (exit 1) instead of writing wrong values.

Decompression follows compressed-tensors 0.20.1 (cited, not copied):
compressors/naive_quantized/base.py@0.20.1 FloatQuantizationCompressor
.decompress → quantization/lifecycle/forward.py@0.20.1 dequantize →
forward_helpers.py@0.20.1 _dequantize: x_q.to(scale.dtype) * scale, in the
scale's dtype (the weight's dtype: lifecycle/initialize.py@0.20.1), the
block strategy on the weight padded to whole blocks and cut back
(_process_block). ckpt's recipe is the float32 product code × scale
rounded once to the output dtype (nearest even). An E4M3 code has 4
significant bits and a BF16 scale 8, so their product is exact in float32
and rounding it once to BF16 is what torch's BF16 multiply does: with a
BF16 model both recipes agree bit for bit in BF16, and ckpt's F32 output
rounded to BF16 is compressed-tensors' BF16. With an F32 model both
compute the same float32 product: bit for bit in F32 and in BF16."""

import json

import pytest
import torch
from compressed_tensors.compressors import BaseCompressor
from compressed_tensors.quantization import QuantizationConfig
from safetensors import safe_open
from safetensors.torch import load_file, save_file

import ctlib

FP8 = {"FP8": "fp8-tensor", "FP8_DYNAMIC": "fp8-channel", "FP8_BLOCK": "fp8-block"}
# Presets whose format ckpt does not read, and the format compressed-tensors
# 0.20.1 infers for them (compressors/format.py@0.20.1).
UNREAD = {"NVFP4A16": "nvfp4-pack-quantized", "MXFP4A16": "mxfp4-pack-quantized",
          "W4A16": "pack-quantized", "W8A16": "pack-quantized", "W8A8": "int-quantized"}
DTYPES = {"bf16": torch.bfloat16, "f32": torch.float32}
COMPANIONS = ("weight_scale", "input_scale", "weight_global_scale", "input_global_scale", "weight_zero_point", "weight_shape")


def write(tmp_path, preset, dtype=torch.bfloat16, name="base", perturb=None):
    model, _ = ctlib.quantised_model(preset, dtype=dtype, perturb=perturb)
    d = tmp_path / name
    ctlib.save(model, d)
    return d


def config(d):
    return json.loads((d / "config.json").read_text())["quantization_config"]


def ct_decompress(d):
    """{name: tensor} of checkpoint d as compressed-tensors' own
    decompressor makes it: the config ModelCompressor wrote, parsed by
    QuantizationConfig, and per quantised module (one with a weight_scale)
    the decompress of the compressor registered for its group's format,
    on the module's tensors as stored."""
    qc = QuantizationConfig.model_validate(config(d))
    (scheme,) = qc.config_groups.values()
    compressor = BaseCompressor.get_value_from_registry(scheme.format)
    sd = load_file(str(d / "model.safetensors"))
    modules = {k.rsplit(".", 1)[0] for k in sd if k.endswith(".weight_scale")}
    out = {k: v for k, v in sd.items() if k.rsplit(".", 1)[0] not in modules}
    for m in sorted(modules):
        local = {k[len(m) + 1:]: v for k, v in sd.items() if k.rsplit(".", 1)[0] == m}
        for k, v in compressor.decompress(local, scheme).items():
            if k not in COMPANIONS:
                out[f"{m}.{k}"] = v
    return out


def bits(t):
    return t.contiguous().view({2: torch.int16, 4: torch.int32}[t.element_size()])


def assert_same(got, want, what):
    assert got.dtype == want.dtype and got.shape == want.shape, (what, got.dtype, got.shape, want.dtype, want.shape)
    bad = (bits(got) != bits(want)).nonzero()
    assert bad.numel() == 0, f"{what}: {bad.shape[0]} of {got.numel()} values differ; first at {bad[:4].tolist()}"


def reshape_scale(src, dst, name, shape):
    """dst: a copy of checkpoint src whose tensor name has shape (same
    bytes), rewritten with safetensors."""
    dst.mkdir()
    sd = load_file(str(src / "model.safetensors"))
    sd[name] = sd[name].reshape(shape).contiguous()
    save_file(sd, str(dst / "model.safetensors"), metadata={"format": "pt"})
    (dst / "config.json").write_text((src / "config.json").read_text())


@pytest.mark.parametrize("preset", FP8)
def test_fp8_written_by_compressed_tensors(ckpt, tmp_path, preset):
    """What compressed-tensors writes for FP8, FP8_DYNAMIC and FP8_BLOCK is
    float-quantized FP8 of strategy tensor / channel / block; inspect names
    the scheme, verify passes it naming the scheme, and fails (exit 1) a
    copy whose down_proj scale has a wrong shape, naming scale and weight."""
    d = write(tmp_path, preset)
    q = config(d)
    (g,) = q["config_groups"].values()
    strategy = {"FP8": "tensor", "FP8_DYNAMIC": "channel", "FP8_BLOCK": "block"}[preset]
    assert (q["format"], g["weights"]["strategy"], g["weights"]["num_bits"], g["weights"]["type"]) == ("float-quantized", strategy, 8, "float")
    w, s = "model.layers.0.mlp.down_proj.weight", "model.layers.0.mlp.down_proj.weight_scale"
    with safe_open(str(d / "model.safetensors"), "pt") as f:
        assert f.get_slice(w).get_dtype() == "F8_E4M3"
        sshape = f.get_slice(s).get_shape()
    assert sshape == {"FP8": [1], "FP8_DYNAMIC": [200, 1], "FP8_BLOCK": [2, 4]}[preset]  # 200 rows: a partial block

    doc = ckpt.json("inspect", d)
    assert doc["quantization"]["scheme"] == FP8[preset]
    assert doc["quantization"]["weights"] == 14  # 7 Linear per layer; lm_head ignored
    assert doc["quantization"]["ignore"] == ["lm_head"]
    rep = ckpt.json("verify", d, "--read-data")
    assert rep["ok"], [f for f in rep["findings"] if f["status"] == "fail"]
    assert [f["message"].split(":")[0] for f in rep["findings"] if f["id"] == "scheme.config" and f["status"] == "pass"] == [FP8[preset]]

    bad = tmp_path / "bad"
    reshape_scale(d, bad, s, {"FP8": [1, 1], "FP8_DYNAMIC": [1, 200], "FP8_BLOCK": [4, 2]}[preset])
    rep = ckpt.json("verify", bad, rc=1)
    fails = [f for f in rep["findings"] if f["status"] == "fail"]
    assert [f["id"] for f in fails] == ["scheme.companion_shape"], fails
    assert fails[0]["tensors"] == [s, w]
    p = ckpt.run("extract", bad, "--match", "**", "--dtype", "bf16", "-o", tmp_path / "bad.safetensors", "--progress", "none", rc=1)
    assert "refusing to read it" in p.stderr and f'"{w}"' in p.stderr
    assert not (tmp_path / "bad.safetensors").exists()


@pytest.mark.parametrize("model_dtype", DTYPES)
@pytest.mark.parametrize("preset", FP8)
def test_fp8_extract_equals_compressed_tensors_decompress(ckpt, tmp_path, preset, model_dtype):
    """extract --dtype bf16 and f32 equal compressed-tensors' own
    decompression of the same files bit for bit (see the module's
    docstring for why the two recipes agree): every tensor, the
    dequantised weights and the unquantised ones (lm_head, embeddings,
    norms); no companion is written."""
    d = write(tmp_path, preset, DTYPES[model_dtype])
    want = ct_decompress(d)
    assert {v.dtype for k, v in want.items() if k.endswith("proj.weight")} == {DTYPES[model_dtype]}
    for out_dtype, tdt in (("bf16", torch.bfloat16), ("f32", torch.float32)):
        out = tmp_path / f"{out_dtype}.safetensors"
        ckpt.run("extract", d, "--match", "**", "--dtype", out_dtype, "-o", out, "--progress", "none")
        got = load_file(str(out))
        assert sorted(got) == sorted(want), "the same tensors, companions consumed"
        for name, w in want.items():
            g = got[name]
            if out_dtype == "f32" and w.dtype == torch.bfloat16:
                # compressed-tensors rounded the exact float32 product to
                # BF16 (its scale's dtype): ckpt's F32 is that product, so
                # rounding it once to BF16 is compressed-tensors' value, and
                # it is within half a BF16 step of it (8 significant bits).
                assert g.dtype == torch.float32, name
                assert_same(g.to(torch.bfloat16), w, f"{name}: extract --dtype f32 rounded to bf16")
                assert torch.all((g - w.float()).abs() <= w.float().abs() * 2.0 ** -8), name  # half a step: <= 2^-8 |w|
            else:
                assert_same(g, w.to(tdt), f"{name}: extract --dtype {out_dtype}")


def _zero(picks):
    def perturb(model):
        for name, ij in picks.items():
            w = model.get_submodule(name).weight
            for i, j in ij:
                w[i, j] = 0.0
    return perturb


def _picks():
    """Elements to change in the fine-tune: per module, positions whose
    |w| is well inside every group's range (0.02 <= |w| <= 0.04, weights
    ~ N(0, 0.05)), so zeroing them changes their code (|w| / scale >= 35
    codes of 448) and no scale; one row of down_proj is in its partial
    128-row block."""
    m = ctlib.Tiny(torch.bfloat16, 0)
    picks = {}
    for name, rows, n in (("model.layers.0.mlp.down_proj", (3, 150, 199), 3), ("model.layers.1.self_attn.q_proj", (0, 255), 2)):
        w = m.get_submodule(name).weight.float()
        ij = []
        for i in rows:
            j = int(((w[i].abs() >= 0.02) & (w[i].abs() <= 0.04)).nonzero()[0])
            ij.append((i, j))
        picks[name] = ij[:n]
    return picks


@pytest.mark.parametrize("preset", FP8)
def test_fp8_diff_counts_changed_elements(ckpt, tmp_path, preset):
    """diff of a base and a fine-tune, both written by compressed-tensors,
    where the fine-tune zeroed 5 chosen weight elements before
    calibration: exactly those elements differ, in the two weights they
    belong to, as compressed-tensors' own decompression also shows."""
    picks = _picks()
    base = write(tmp_path, preset)
    ft = write(tmp_path, preset, name="ft", perturb=_zero(picks))
    a, b = ct_decompress(base), ct_decompress(ft)
    want = {n: int((a[n] != b[n]).sum()) for n in a if not torch.equal(a[n], b[n])}
    assert want == {f"{m}.weight": len(ij) for m, ij in picks.items()}, "the perturbation changed only the chosen elements"
    with safe_open(str(base / "model.safetensors"), "pt") as fa, safe_open(str(ft / "model.safetensors"), "pt") as fb:
        for k in fa.keys():
            if k.endswith("weight_scale"):
                assert torch.equal(fa.get_tensor(k), fb.get_tensor(k)), f"{k}: the scales are unchanged"

    r = ckpt.json("diff", base, ft, "--progress", "none", rc=1)
    changed = {t["name"]: t["changed_elems"] for t in r["tensors"] if t["relation"] != "identical"}
    assert changed == want, [t for t in r["tensors"] if t["relation"] != "identical"]
    assert all(t["relation"] == "identical" for t in r["tensors"] if t["name"] not in want)


@pytest.mark.parametrize("preset", UNREAD)
def test_unread_formats_never_pass_silently(ckpt, tmp_path, preset):
    """A format ckpt does not dequantise, as compressed-tensors writes it
    (NVFP4: weight_packed U8 + weight_scale F8_E4M3 + weight_global_scale,
    a divisor, not ModelOpt's weight_scale_2 multiplier; MXFP4:
    weight_packed U8 + weight_scale U8 exponents; int packing:
    weight_packed I32 + weight_shape; int8: I8 weight): inspect claims no
    scheme; verify warns it did not verify the quantisation (naming the
    format), fails nothing it did not check, and fails with --strict;
    extract --dtype bf16 refuses the weights (exit 1, nothing written)."""
    d = write(tmp_path, preset)
    fmt = UNREAD[preset]
    assert config(d)["format"] == fmt
    ct_decompress(d)  # the files are valid: compressed-tensors reads them back

    doc = ckpt.json("inspect", d)
    assert "quantization" not in doc or doc["quantization"] is None, doc.get("quantization")
    rep = ckpt.json("verify", d, "--read-data")
    sc = [f for f in rep["findings"] if f["id"] == "scheme.config"]
    assert [f["status"] for f in sc] == ["warn"], sc
    assert sc[0]["message"].startswith("quantisation not verified: ") and f'format "{fmt}"' in sc[0]["message"], sc
    assert not [f for f in rep["findings"] if f["status"] == "pass" and f["id"].startswith("scheme.")]
    assert not [f for f in rep["findings"] if f["status"] == "fail"]
    ckpt.run("verify", d, "--strict", rc=1)

    out = tmp_path / "out.safetensors"
    p = ckpt.run("extract", d, "--match", "**", "--dtype", "bf16", "-o", out, "--progress", "none", rc=1)
    assert "refusing to read it" in p.stderr and f'format "{fmt}"' in p.stderr, p.stderr
    assert not out.exists()
