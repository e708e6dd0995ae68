"""The element codecs and block dequantisations of the quantisation schemes
(ckpt/numfmt: E2M1, E8M0, MXFP4, NVFP4 and NVFP4's F8_E4M3 block scales)
against ml_dtypes (float4_e2m1fn, float8_e8m0fnu, float8_e4m3fn) and an
independent numpy dequantisation, through the fp4dump helper
(cmd/internal/fp4dump); and checkpoints of each scheme in the hub's layout,
written with the reference safetensors writer, read by inspect and verify,
and dequantised by extract --dtype bf16|f16|f32 (MXFP4, NVFP4, compressed-tensors
FP8 per channel) as numpy and ml_dtypes dequantise them.

Upstream layouts (cited in ckpt/numfmt): MXFP4 blocks [..., G, 16] U8 with
two codes per byte, low nibble first, scales [..., G] E8M0
(transformers integrations/mxfp4.py, gpt-oss torch/weights.py); NVFP4
weight [N, K/2] U8, weight_scale [N, K/16] F8_E4M3, weight_scale_2 F32
(vLLM quantization/modelopt.py)."""

import json
import os
import subprocess

import ml_dtypes
import numpy as np
import pytest

from stlib import assert_same_floats, ref_read, ref_write

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FP4 = ml_dtypes.float4_e2m1fn
E8M0 = ml_dtypes.float8_e8m0fnu
E4M3 = ml_dtypes.float8_e4m3fn


@pytest.fixture(scope="module")
def fp4dump(tmp_path_factory):
    if os.environ.get("FP4DUMP_BIN"):
        return os.environ["FP4DUMP_BIN"]
    out = str(tmp_path_factory.mktemp("bin") / "fp4dump")
    subprocess.run(["go", "build", "-o", out, "./cmd/internal/fp4dump"], cwd=REPO, check=True)
    return out


def dump(fp4dump, tmp_path, cmd, *inputs, args=()):
    paths = []
    for i, data in enumerate(inputs):
        p = tmp_path / f"in{i}"
        p.write_bytes(np.ascontiguousarray(data).tobytes())
        paths.append(str(p))
    out = tmp_path / "out"
    subprocess.run([fp4dump, cmd, *map(str, args), *paths, str(out)], check=True)
    return np.frombuffer(out.read_bytes(), dtype="<f4")


def e2m1(codes):
    """ml_dtypes' value of each 4-bit code (one code per uint8)."""
    return np.asarray(codes, dtype=np.uint8).view(FP4).astype(np.float32)


def unpack(packed):
    """Packed bytes → codes in element order: low nibble, then high."""
    packed = np.asarray(packed, dtype=np.uint8)
    return np.stack([packed & 0x0F, packed >> 4], axis=-1).reshape(*packed.shape[:-1], -1)


def test_e2m1_every_byte(fp4dump, tmp_path):
    b = np.arange(256, dtype=np.uint8)
    got = dump(fp4dump, tmp_path, "e2m1", b)
    assert_same_floats(got, e2m1(unpack(b)), "packed E2M1 → float32 (numfmt.UnpackE2M1)")
    # element 2i is the low nibble: 0x71 is (0.5, 6.0)
    assert got[2 * 0x71: 2 * 0x71 + 2].tolist() == [0.5, 6.0]


def test_e8m0_every_code(fp4dump, tmp_path):
    c = np.arange(256, dtype=np.uint8)
    want = c.view(E8M0).astype(np.float32)
    got = dump(fp4dump, tmp_path, "e8m0", c)
    assert_same_floats(got, want, "E8M0 → float32 (numfmt.E8M0ToFloat32)")
    assert np.isnan(got[255]) and got[127] == 1.0


def test_nvfp4_block_scale_every_e4m3_code(fp4dump, tmp_path):
    """Each of 256 rows has one block whose codes are all 1.0 (0x22) and
    whose scale is one F8_E4M3 code: the values are the decoded scales."""
    packed = np.full((256, 8), 0x22, dtype=np.uint8)
    scales = np.arange(256, dtype=np.uint8)
    got = dump(fp4dump, tmp_path, "nvfp4", packed, scales, args=(256, 16, 1.0)).reshape(256, 16)
    want = np.repeat(scales.view(E4M3).astype(np.float32)[:, None], 16, axis=1)
    assert_same_floats(got, want, "NVFP4 F8_E4M3 block scale → float32")


def test_mxfp4_dequantisation(fp4dump, tmp_path):
    rng = np.random.default_rng(28)
    g = 512
    blocks = rng.integers(0, 256, size=(g, 16), dtype=np.uint8)
    scales = rng.integers(0, 256, size=g, dtype=np.uint8)
    scales[:6] = [0, 1, 127, 253, 254, 255]  # extremes, overflow to Inf, NaN
    got = dump(fp4dump, tmp_path, "mxfp4", blocks, scales).reshape(g, 32)
    # independent: float64 ldexp of the E2M1 values, rounded to float32
    # once; 0xFF is NaN.
    vals = e2m1(unpack(blocks)).astype(np.float64)
    with np.errstate(over="ignore"):
        want = np.ldexp(vals, scales.astype(np.int64)[:, None] - 127).astype(np.float32)
    want[scales == 255] = np.nan
    assert_same_floats(got, want, "MXFP4 blocks × 2^(scale-127)")
    assert np.isinf(got[3:5]).any(), "large exponents overflow float32 as ldexp does"


@pytest.mark.parametrize("global_scale", [1.0, 2.0 ** -8, 1 / 3, 0.0123, 3.1e-5])
def test_nvfp4_dequantisation(fp4dump, tmp_path, global_scale):
    rng = np.random.default_rng(16)
    rows, cols = 64, 128
    packed = rng.integers(0, 256, size=(rows, cols // 2), dtype=np.uint8)
    scales = rng.integers(0, 0x7F, size=(rows, cols // 16), dtype=np.uint8)  # positive, finite
    gs = np.float32(global_scale)
    got = dump(fp4dump, tmp_path, "nvfp4", packed, scales, args=(rows, cols, repr(float(gs)))).reshape(rows, cols)
    # independent: the exact product in float64, rounded to float32 once.
    codes = e2m1(unpack(packed)).astype(np.float64)
    s = np.repeat(scales.view(E4M3).astype(np.float64), 16, axis=1)
    want = (codes * s * np.float64(gs)).astype(np.float32)
    assert_same_floats(got, want, f"NVFP4 e2m1 × e4m3 × {gs}")


def run_out(fp4dump, tmp_path, cmd, values, args=()):
    """fp4dump CMD [ARGS] IN OUT with IN the float32 values; OUT's bytes."""
    inp, out = tmp_path / "vals", tmp_path / "out"
    inp.write_bytes(np.ascontiguousarray(values, dtype="<f4").tobytes())
    subprocess.run([fp4dump, cmd, *map(str, args), str(inp), str(out)], check=True)
    return np.frombuffer(out.read_bytes(), dtype=np.uint8)


def ref_e2m1(x):
    """ml_dtypes' float32 → float4_e2m1fn cast (nearest even, saturating),
    as codes."""
    return np.asarray(x, dtype=np.float32).astype(FP4).view(np.uint8)


def test_e2m1_encode_sweep(fp4dump, tmp_path):
    """numfmt.EncodeE2M1 on every 997th float32 bit pattern (NaN left out:
    ml_dtypes has no E2M1 NaN) and on the ties, against ml_dtypes."""
    bits = np.arange(0, 1 << 32, 997, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    x = np.concatenate([x[~np.isnan(x)], np.float32([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, -0.25, -5, -0.0])])
    got = run_out(fp4dump, tmp_path, "encode-e2m1", x)
    want = ref_e2m1(x)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(float(x[i]), int(got[i]), int(want[i])) for i in bad[:10]]


def _blocks_of(rng, g, n, lo=-20, hi=20):
    """g blocks of n bf16-exact float32 values, each block with its own
    power-of-two range; block 0 all zero, block 1 with a largest value of
    mantissa 1.75 (saturates under a floor scale), block 2 with ties."""
    e = rng.integers(lo, hi, size=(g, 1))
    w = (rng.uniform(-1, 1, size=(g, n)) * np.exp2(e)).astype(np.float32)
    w = w.astype(ml_dtypes.bfloat16).astype(np.float32)
    w[0] = 0
    w[1, 0] = 7.0
    w[2, :8] = [6, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5]
    return w


@pytest.mark.parametrize("recipe", ["ocp-floor", "triton-round-up"])
def test_mxfp4_quantisation(fp4dump, tmp_path, recipe):
    """numfmt.QuantizeMXFP4 against numpy: the shared exponent from
    float64 log2 (OCP MX v1.0 §6.3: floor(log2 amax) - 2; triton_kernels'
    round-up: ceil(log2(amax / 6)) of the float32 quotient), clamped to
    E8M0, then the values times 2^-X cast by ml_dtypes (nearest even,
    saturating). bf16 values, as transformers gives triton."""
    rng = np.random.default_rng(32)
    g = 2048
    w = _blocks_of(rng, g, 32)
    out = run_out(fp4dump, tmp_path, "quantize-mxfp4", w.reshape(-1), args=(recipe,))
    scales, blocks = out[:g], out[g:].reshape(g, 16)
    amax = np.abs(w).max(axis=1)
    with np.errstate(divide="ignore"):
        if recipe == "ocp-floor":
            x = np.floor(np.log2(amax.astype(np.float64))) - 2
        else:
            x = np.ceil(np.log2((amax / np.float32(6)).astype(np.float64)))
    x = np.where(amax == 0, -127, np.maximum(x, -127)).astype(np.int64)
    assert scales.tolist() == (x + 127).tolist()
    want = ref_e2m1(np.ldexp(w.astype(np.float64), -x[:, None]).astype(np.float32))
    want[amax == 0] = 0
    assert (unpack(blocks) == want).all()


def test_nvfp4_quantisation(fp4dump, tmp_path):
    """numfmt.QuantizeNVFP4 against numpy after ModelOpt's NVFP4QTensor:
    weight_scale_2 = amax / 2688, block scales amax_b / (6 × it) in float32
    (1 where 0) cast by ml_dtypes to float8_e4m3fn, codes w / (scale × it)
    in float32 cast by ml_dtypes to float4_e2m1fn."""
    rng = np.random.default_rng(16)
    g = 4096
    w = _blocks_of(rng, g, 16, lo=-12, hi=4)
    out = run_out(fp4dump, tmp_path, "quantize-nvfp4", w.reshape(-1))
    glob = out[:4].view("<f4")[0]
    scales, packed = out[4:4 + g], out[4 + g:].reshape(g, 8)
    f32 = np.float32
    want_g = f32(np.abs(w).max()) / f32(2688)
    assert glob == want_g
    s = np.abs(w).max(axis=1) / (f32(6) * want_g)
    s[s == 0] = 1
    s8 = s.astype(E4M3)
    assert scales.tolist() == s8.view(np.uint8).tolist()
    d = (s8.astype(np.float32) * want_g)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        q = w / d
    want = ref_e2m1(np.nan_to_num(q, nan=6.0))  # 0 / 0 is 6 in ModelOpt's _cast_fp4
    assert (unpack(packed) == want).all()
    assert (scales & 0x78 == 0).any(), "some block scales are subnormal E4M3"


def test_nvfp4_requant_identical(ckpt, tmp_path):
    """A ModelOpt-layout NVFP4 base quantised by numpy (the reference
    above) from a bf16 checkpoint: ckpt diff calls the weight
    requant_identical under the modelopt recipe; with one value moved by a
    code step, dtype_changed with one mismatching code."""
    rng = np.random.default_rng(7)
    n, k = 64, 128
    w = (rng.uniform(-1, 1, size=(n, k)) * np.exp2(rng.integers(-8, 0, size=(n, k // 16))).repeat(16, axis=1))
    w = w.astype(ml_dtypes.bfloat16).astype(np.float32)
    f32 = np.float32
    glob = f32(np.abs(w).max()) / f32(2688)
    blk = w.reshape(n, k // 16, 16)
    s8 = (np.abs(blk).max(axis=2) / (f32(6) * glob)).astype(E4M3)
    codes = ref_e2m1(blk / (s8.astype(np.float32) * glob)[..., None]).reshape(n, k)
    packed = (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8)
    base, ft = tmp_path / "base", tmp_path / "ft"
    base.mkdir()
    ft.mkdir()
    name = "model.layers.0.mlp.down_proj"
    ref_write(base / "model.safetensors", {
        name + ".weight": ("U8", [n, k // 2], packed.tobytes()),
        name + ".weight_scale": ("F8_E4M3", [n, k // 16], s8.view(np.uint8).tobytes()),
        name + ".weight_scale_2": ("F32", [], np.array(glob, dtype="<f4").tobytes()),
    })
    (base / "config.json").write_text(json.dumps({"model_type": "llama"}))
    (base / "hf_quant_config.json").write_text(json.dumps({"producer": {"name": "modelopt"}, "quantization": {
        "quant_algo": "NVFP4", "group_size": 16, "exclude_modules": ["lm_head"]}}))
    (ft / "config.json").write_text(json.dumps({"model_type": "llama"}))

    def write_ft(vals):
        ref_write(ft / "model.safetensors", {name + ".weight": ("BF16", [n, k], vals.astype(ml_dtypes.bfloat16).tobytes())})

    write_ft(w)
    doc = ckpt.json("diff", base, ft, "--progress", "none", rc=1)
    row = next(r for r in doc["tensors"] if r["name"] == name + ".weight")
    assert (row["relation"], row["requant_mismatch_elems"], row["requant_mismatch_blocks"], row["requant_recipe"]) == \
        ("requant_identical", 0, 0, "modelopt"), row
    # one element of a block that is not its largest moves to 1.5× (another code)
    i = next(j for j in range(16, 32) if 0 < abs(w[0, j]) < np.abs(w[0, 16:32]).max() / 2)
    w2 = w.copy()
    w2[0, i] *= 1.5
    write_ft(w2)
    doc = ckpt.json("diff", base, ft, "--progress", "none", rc=1)
    row = next(r for r in doc["tensors"] if r["name"] == name + ".weight")
    assert (row["relation"], row["requant_mismatch_elems"], row["requant_mismatch_blocks"]) == ("dtype_changed", 1, 1), row


def _mxfp4_checkpoint(d, bad=False):
    """A gpt-oss-style MXFP4 checkpoint written by the reference writer."""
    rng = np.random.default_rng(4)
    e, rows, g = 2, 64, 2
    blocks = rng.integers(0, 256, size=(e, rows, g, 16), dtype=np.uint8)
    scales = rng.integers(120, 130, size=(e, rows, g), dtype=np.uint8)
    sshape = [e, g, rows] if bad else [e, rows, g]
    ref_write(d / "model.safetensors", {
        "model.embed_tokens.weight": ("BF16", [32, 32], bytes(2 * 32 * 32)),
        "model.layers.0.mlp.experts.down_proj_blocks": ("U8", list(blocks.shape), blocks.tobytes()),
        "model.layers.0.mlp.experts.down_proj_scales": ("U8", sshape, scales.tobytes()),
    })
    (d / "config.json").write_text(json.dumps({"model_type": "gpt_oss", "quantization_config": {
        "quant_method": "mxfp4", "modules_to_not_convert": ["model.embed_tokens", "lm_head"]}}))
    return e * rows * g * 32 + 32 * 32


def _nvfp4_checkpoint(d, bad=False):
    """A ModelOpt-style NVFP4 checkpoint (hf_quant_config.json)."""
    rng = np.random.default_rng(5)
    n, k = 32, 64
    packed = rng.integers(0, 256, size=(n, k // 2), dtype=np.uint8)
    scales = rng.integers(0x30, 0x50, size=(n, k // 16), dtype=np.uint8)
    sshape = [n // 2, k // 8] if bad else [n, k // 16]
    f32 = lambda v: np.array(v, dtype="<f4").tobytes()  # noqa: E731
    ref_write(d / "model.safetensors", {
        "model.layers.0.mlp.down_proj.weight": ("U8", [n, k // 2], packed.tobytes()),
        "model.layers.0.mlp.down_proj.weight_scale": ("F8_E4M3", sshape, scales.tobytes()),
        "model.layers.0.mlp.down_proj.weight_scale_2": ("F32", [], f32(0.01)),
        "model.layers.0.mlp.down_proj.input_scale": ("F32", [], f32(0.5)),
    })
    (d / "config.json").write_text(json.dumps({"model_type": "llama"}))
    (d / "hf_quant_config.json").write_text(json.dumps({"producer": {"name": "modelopt"}, "quantization": {
        "quant_algo": "NVFP4", "group_size": 16, "exclude_modules": ["lm_head"]}}))
    return n * k


@pytest.mark.parametrize("scheme,make,scale,weight", [
    ("mxfp4", _mxfp4_checkpoint, "model.layers.0.mlp.experts.down_proj_scales", "model.layers.0.mlp.experts.down_proj_blocks"),
    ("nvfp4", _nvfp4_checkpoint, "model.layers.0.mlp.down_proj.weight_scale", "model.layers.0.mlp.down_proj.weight"),
])
def test_hub_layout_inspect_and_verify(ckpt, tmp_path, scheme, make, scale, weight):
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.mkdir()
    bad.mkdir()
    params = make(good)
    make(bad, bad=True)
    doc = ckpt.json("inspect", good)
    assert doc["quantization"]["scheme"] == scheme
    assert doc["summary"]["parameters"] == params, "packed FP4 codes count two per byte, companions not at all"
    rep = ckpt.json("verify", good, "--read-data")
    assert rep["ok"], [f for f in rep["findings"] if f["status"] == "fail"]
    assert any(f["id"] == "scheme.config" and f["message"].startswith(scheme + ":") for f in rep["findings"])
    rep = ckpt.json("verify", bad, rc=1)
    fails = [f for f in rep["findings"] if f["status"] == "fail"]
    assert [f["id"] for f in fails] == ["scheme.companion_shape"], fails
    assert fails[0]["tensors"] == [scale, weight]


def _fp8_channel_checkpoint(d, bad=False):
    """A compressed-tensors float-quantized FP8 checkpoint, strategy channel."""
    rng = np.random.default_rng(6)
    n, k = 32, 64
    codes = rng.integers(0, 256, size=(n, k), dtype=np.uint8)
    codes[(codes & 0x7F) == 0x7F] ^= 1  # no NaN codes
    scale = (rng.uniform(0.5, 2, size=(n, 1)) / 448).astype("<f4")
    ref_write(d / "model.safetensors", {
        "model.embed_tokens.weight": ("BF16", [32, 32], bytes(2 * 32 * 32)),
        "model.layers.0.mlp.down_proj.weight": ("F8_E4M3", [n, k], codes.tobytes()),
        "model.layers.0.mlp.down_proj.weight_scale": ("F32", [1, n] if bad else [n, 1], scale.tobytes()),
        "model.layers.0.mlp.down_proj.input_scale": ("F32", [1], np.array([0.25], dtype="<f4").tobytes()),
    })
    w = {"num_bits": 8, "type": "float", "symmetric": True, "dynamic": False, "strategy": "channel"}
    (d / "config.json").write_text(json.dumps({"model_type": "llama", "quantization_config": {
        "quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"],
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": w}}}}))
    return n * k + 32 * 32


def _numpy_dequant(tensors):
    """{values name: float32 values} of every quantised weight, by numpy and
    ml_dtypes alone: the exact product in float64 rounded to float32 once."""
    out = {}
    for name, (dt, shape, data) in tensors.items():
        raw = np.frombuffer(data, dtype=np.uint8)
        if name.endswith("_blocks"):
            base = name[: -len("_blocks")]
            sc = np.frombuffer(tensors[base + "_scales"][2], dtype=np.uint8).view(E8M0).astype(np.float64)
            codes = e2m1(unpack(raw.reshape(shape))).astype(np.float64)  # [..., G, 32]
            v = codes * sc.reshape(*shape[:-1], 1)
            out[base] = v.reshape(*shape[:-2], shape[-2] * 32).astype(np.float32)
        elif dt == "U8" and name.endswith(".weight"):
            mod = name[: -len(".weight")]
            n, k = shape[0], 2 * shape[1]
            s = np.frombuffer(tensors[mod + ".weight_scale"][2], dtype=np.uint8).view(E4M3).astype(np.float64)
            g = np.frombuffer(tensors[mod + ".weight_scale_2"][2], dtype="<f4").astype(np.float64)[0]
            codes = e2m1(unpack(raw.reshape(shape))).astype(np.float64)
            out[name] = (codes * np.repeat(s.reshape(n, k // 16), 16, axis=1) * g).astype(np.float32)
        elif dt == "F8_E4M3" and name.endswith(".weight"):
            mod = name[: -len(".weight")]
            s = np.frombuffer(tensors[mod + ".weight_scale"][2], dtype="<f4").astype(np.float64)
            codes = raw.view(E4M3).astype(np.float64).reshape(shape)
            out[name] = (codes * s.reshape(shape[0], 1)).astype(np.float32)
    return out


@pytest.mark.parametrize("make", [_mxfp4_checkpoint, _nvfp4_checkpoint, _fp8_channel_checkpoint])
@pytest.mark.parametrize("dtype", ["bf16", "f16", "f32"])
def test_hub_layout_extract(ckpt, tmp_path, make, dtype):
    """extract --dtype bf16|f16|f32 of each scheme's hub-style checkpoint
    equals numpy/ml_dtypes dequantisation (float32 product, then nearest
    even to bf16 / f16), read back by the reference reader: an MXFP4 pair becomes one
    tensor X [..., G*32]; no scale companion is written; a weight whose
    scale has the wrong shape is refused (exit 1)."""
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.mkdir()
    bad.mkdir()
    make(good)
    make(bad, bad=True)
    src = ref_read(good / "model.safetensors")
    want = _numpy_dequant(src)
    assert want
    out = tmp_path / "out.safetensors"
    ckpt.run("extract", good, "--match", "**", "--dtype", dtype, "-o", out, "--progress", "none")
    got = ref_read(out)
    for name in got:
        assert not name.endswith(("_scales", "_blocks", "weight_scale", "weight_scale_2", "input_scale")), name
    npdt = {"bf16": ml_dtypes.bfloat16, "f16": np.float16, "f32": np.float32}[dtype]
    for name, v in want.items():
        gdt, gshape, gdata = got[name]
        assert gdt == dtype.upper(), name
        assert gshape == list(v.shape), name
        g = np.frombuffer(gdata, dtype=npdt).astype(np.float32).reshape(v.shape)
        assert_same_floats(g, v.astype(npdt).astype(np.float32), f"{name} extract --dtype {dtype}")
    p = ckpt.run("extract", bad, "--match", "**", "--dtype", dtype, "-o", tmp_path / "bad.safetensors", "--progress", "none", rc=1)
    assert "refusing to read it" in p.stderr
    assert not (tmp_path / "bad.safetensors").exists()


def _with(d, name, data):
    """Rewrites tensor name of d/model.safetensors with data (same dtype and
    shape) through the reference reader and writer."""
    tensors = ref_read(d / "model.safetensors")
    dt, shape, _ = tensors[name]
    tensors[name] = (dt, shape, np.ascontiguousarray(data).tobytes())
    ref_write(d / "model.safetensors", tensors)


_MX_S = "model.layers.0.mlp.experts.down_proj_scales"
_NV_G = "model.layers.0.mlp.down_proj.weight_scale_2"


@pytest.mark.parametrize("make,name,value,dtype", [
    (_mxfp4_checkpoint, _MX_S, 254, "bf16"),   # 2^127: codes >= 2 overflow float32
    (_mxfp4_checkpoint, _MX_S, 142, "f16"),    # 2^15: codes >= 2 overflow f16
    (_nvfp4_checkpoint, _NV_G, 3e37, "bf16"),  # a huge global scale
    (_nvfp4_checkpoint, _NV_G, 6e4, "f16"),
])
def test_hub_layout_extract_overflow(ckpt, tmp_path, make, name, value, dtype):
    """extract --dtype of an MXFP4 / NVFP4 weight whose finite scales make
    values overflow is refused (exit 1) counting as many values as numpy
    finds not finite in the dequantised (float32 product, then dtype)
    values, out of the weight's values; --allow-nonfinite writes them and
    reports the same count in JSON."""
    d = tmp_path / "src"
    d.mkdir()
    make(d)
    src = ref_read(d / "model.safetensors")
    dt, shape, _ = src[name]
    if dt == "U8":
        _with(d, name, np.full(shape, value, dtype=np.uint8))
    else:
        _with(d, name, np.array(value, dtype="<f4"))
    npdt = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}[dtype]
    with np.errstate(over="ignore"):
        (vname, v), = _numpy_dequant(ref_read(d / "model.safetensors")).items()
        count = int(np.count_nonzero(~np.isfinite(v.astype(npdt).astype(np.float32))))
    assert count > 0
    out = tmp_path / "out.safetensors"
    p = ckpt.run("extract", d, "--match", "**", "--dtype", dtype, "-o", out, "--progress", "none", rc=1)
    assert f": {count} of {v.size} values are finite but overflow to Inf when converted to {dtype.upper()}" in p.stderr, p.stderr
    assert not out.exists()
    doc = ckpt.json("extract", d, "--match", "**", "--dtype", dtype, "-o", out, "--progress", "none", "--allow-nonfinite")
    assert [(r["tensor"], r.get("overflow")) for r in doc["nonfinite"]] == [(vname + ("_blocks" if make is _mxfp4_checkpoint else ""), count)]


@pytest.mark.parametrize("make,name,value,want", [
    (_mxfp4_checkpoint, _MX_S, 0xFF, "(U8 read as F8_E8M0) has {n} NaN codes (0xff)"),
    (_nvfp4_checkpoint, _NV_G, np.nan, "(F32) has {n} NaN and 0 Inf"),
])
def test_hub_layout_extract_nan_scale(ckpt, tmp_path, make, name, value, want):
    """A NaN scale (E8M0 0xff, a NaN weight_scale_2) is refused by extract
    --dtype as a NaN FP8 scale is (exit 1, naming the scale and counting
    its NaN as numpy does)."""
    d = tmp_path / "src"
    d.mkdir()
    make(d)
    dt, shape, data = ref_read(d / "model.safetensors")[name]
    if dt == "U8":
        s = np.frombuffer(data, dtype=np.uint8).copy()
        s[::7] = value
        n = int(np.count_nonzero(s.view(E8M0).astype(np.float32) != s.view(E8M0).astype(np.float32)))
    else:
        s = np.array(value, dtype="<f4")
        n = int(np.count_nonzero(np.isnan(s)))
    _with(d, name, s)
    p = ckpt.run("extract", d, "--match", "**", "--dtype", "bf16", "-o", tmp_path / "o.safetensors", "--progress", "none", rc=1)
    assert f'tensor "{name}" ' + want.format(n=n) in p.stderr, p.stderr
