"""ckpt's float conversions against numpy and ml_dtypes: every F8 code and
every 16-bit pattern decoded, float32 → bf16 / f16 / F8_E4M3 on a dense sweep
(ties, subnormals, ±448 overflow, infinities, NaN), block quantisation and
block dequantisation with F32, BF16 and F16 scales.

Conversions that a command performs are checked through that command
(`ckpt extract --dtype`); float32 → F8_E4M3, which no command writes, through
the convdump helper (cmd/internal/convdump)."""

import json
import subprocess

import ml_dtypes
import numpy as np
import pytest

from stlib import NP, assert_same_floats, ref_read, ref_write, values

TARGET = {"bf16": "BF16", "f16": "F16", "f32": "F32"}

E4M3 = ml_dtypes.float8_e4m3fn
BF16 = ml_dtypes.bfloat16


def sweep_bits():
    """uint32 patterns of a dense float32 sweep: both signs, every exponent
    (zero/subnormals, normals, infinities/NaN), the top 11 mantissa bits
    exhaustively and the low 12 bits as 0, 1, 0x800 and 0xfff — which makes
    exact ties, values just above and just below them for bf16 (rounding at
    bit 16), F8_E4M3 (bit 20, and every subnormal quantum) and f16."""
    sign = np.array([0, 1], dtype=np.uint32)[:, None, None, None] << 31
    exp = np.arange(256, dtype=np.uint32)[None, :, None, None] << 23
    hi = np.arange(2048, dtype=np.uint32)[None, None, :, None] << 12
    lo = np.array([0, 1, 0x800, 0xFFF], dtype=np.uint32)[None, None, None, :]
    return (sign | exp | hi | lo).ravel()


@pytest.fixture(scope="module")
def sweep():
    return sweep_bits().view(np.float32)


def extract_values(ckpt, tmp_path, dtype, data, mode, name="x"):
    """Writes one tensor with the reference writer, runs ckpt extract --dtype
    MODE on it and returns what the reference reader finds in the output."""
    src, out = tmp_path / f"src-{name}.safetensors", tmp_path / f"out-{name}-{mode}.safetensors"
    n = len(data) * 8 // {"F64": 64, "F32": 32, "F16": 16, "BF16": 16}.get(dtype, 8)
    ref_write(src, {name: (dtype, [n], bytes(data))})
    ckpt.run("extract", src, "--match", "**", "--dtype", mode, "--out", out, "--progress", "none", "--allow-nonfinite")
    dt, shape, raw = ref_read(out)[name]
    assert shape == [n]
    return dt, values(dt, raw)


def convdump_decode(convdump, tmp_path, dtype, codes):
    src, out = tmp_path / f"in.{dtype}", tmp_path / f"out-{dtype}.f32"
    src.write_bytes(codes.tobytes())
    subprocess.run([convdump, "decode", dtype, src, out], check=True)
    return np.fromfile(out, dtype=np.float32)


def extract_scaled_e4m3(ckpt, tmp_path, codes, mode):
    """Extracts a [1, 256] F8_E4M3 weight with a weight_scale_inv of 1 (no
    config: 128x128 blocks) with --dtype MODE: its values are its codes'."""
    src, out = tmp_path / "src-scaled.safetensors", tmp_path / f"out-scaled-{mode}.safetensors"
    ref_write(src, {"x.weight": ("F8_E4M3", [1, len(codes)], codes.tobytes()),
                    "x.weight_scale_inv": ("F32", [1, 2], np.ones(2, dtype=np.float32).tobytes())})
    r = ckpt.json("extract", src, "--match", "**", "--dtype", mode, "--out", out, "--progress", "none", "--allow-nonfinite")
    assert r["summary"]["dequantized"] == 1
    dt, shape, raw = ref_read(out)["x.weight"]
    return dt, values(dt, raw)


@pytest.mark.parametrize("dtype", ["F8_E4M3", "F8_E5M2", "F8_E8M0"])
def test_decode_every_fp8_code(ckpt, convdump, tmp_path, dtype):
    codes = np.arange(256, dtype=np.uint8)
    want = codes.view(NP[dtype]).astype(np.float32)
    assert_same_floats(convdump_decode(convdump, tmp_path, dtype, codes), want, f"{dtype} → float32 (numfmt.DecodeFloat32)")
    if dtype == "F8_E5M2":
        # Quantised codes without a scale: extract refuses to read them.
        src = tmp_path / "src-e5m2.safetensors"
        ref_write(src, {"x": (dtype, [256], codes.tobytes())})
        p = ckpt.run("extract", src, "--match", "**", "--dtype", "f32", "--out", tmp_path / "no.safetensors", "--progress", "none", rc=1)
        assert '"x" (F8_E5M2)' in p.stderr and "has no scale" in p.stderr
        return
    for mode, ref in (("f32", np.float32), ("bf16", BF16)):  # every code is exact in bf16 as well
        if dtype == "F8_E4M3":
            dt, got = extract_scaled_e4m3(ckpt, tmp_path, codes, mode)
        else:  # F8_E8M0 is a scale format, read as it is
            dt, got = extract_values(ckpt, tmp_path, dtype, codes.tobytes(), mode)
        assert dt == TARGET[mode]
        assert_same_floats(got, want.astype(ref), f"{dtype} → {mode}")


def test_decode_e4m3_table():
    """The table itself, against ml_dtypes: 0x7f/0xff NaN, ±448, subnormals."""
    v = np.arange(256, dtype=np.uint8).view(E4M3).astype(np.float32)
    assert np.isnan(v[0x7F]) and np.isnan(v[0xFF]) and np.isnan(v).sum() == 2
    assert v[0x7E] == 448 and v[0xFE] == -448
    assert v[0x01] == 2.0**-9 and v[0x08] == 2.0**-6


@pytest.mark.parametrize("dtype", ["F16", "BF16"])
def test_decode_every_16bit_pattern(ckpt, tmp_path, dtype):
    codes = np.arange(65536, dtype=np.uint16)
    want = codes.view(NP[dtype]).astype(np.float32)
    dt, got = extract_values(ckpt, tmp_path, dtype, codes.tobytes(), "f32")
    assert_same_floats(got, want, f"{dtype} → float32")


@pytest.mark.parametrize("mode,ref", [("bf16", BF16), ("f16", np.float16)])
def test_float32_sweep_round_nearest_even(ckpt, tmp_path, sweep, mode, ref):
    with np.errstate(all="ignore"):
        want = sweep.astype(ref)
    dt, got = extract_values(ckpt, tmp_path, "F32", sweep.tobytes(), mode)
    assert_same_floats(got, want, f"float32 → {mode} ({sweep.size} values)")


def test_float64_goes_through_float32(ckpt, tmp_path):
    """--dtype rounds F64 to float32 first (as torch's .to(torch.bfloat16)
    does), then to the target."""
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.standard_normal(20000) * 10.0 ** rng.integers(-40, 40, 20000),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1e300, -1e-300, 3.4028235677973366e38]])
    with np.errstate(all="ignore"):
        f32 = x.astype(np.float32)
    for mode, ref in (("f32", np.float32), ("bf16", BF16), ("f16", np.float16)):
        with np.errstate(all="ignore"):
            want = f32.astype(ref)
        dt, got = extract_values(ckpt, tmp_path, "F64", x.tobytes(), mode)
        assert_same_floats(got, want, f"float64 → {mode}")


def convdump_e4m3(convdump, tmp_path, x):
    src, out = tmp_path / "in.f32", tmp_path / "out.e4m3"
    np.ascontiguousarray(x, dtype=np.float32).tofile(src)
    subprocess.run([convdump, "e4m3", src, out], check=True)
    return np.fromfile(out, dtype=np.uint8)


def e4m3_satfinite(x):
    """float32 → F8_E4M3 with ml_dtypes, saturating: ml_dtypes rounds to
    nearest even and sends overflow (and ±inf) to NaN, as torch does; ckpt's
    contract saturates to ±448 (the satfinite mode of the CUDA conversion), so
    the input is clamped first. NaN stays NaN with its sign."""
    with np.errstate(all="ignore"):
        return np.clip(x, -448, 448).astype(E4M3).view(np.uint8)


def test_float32_sweep_to_e4m3(convdump, tmp_path, sweep):
    got = convdump_e4m3(convdump, tmp_path, sweep)
    want = e4m3_satfinite(sweep)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (
        f"{bad.size} of {sweep.size} codes differ; first: "
        + ", ".join(f"{sweep.view(np.uint32)[i]:#010x}→{got[i]:#04x} (ml_dtypes {want[i]:#04x})" for i in bad[:8]))


@pytest.mark.parametrize("x,code", [
    (0.0, 0x00), (-0.0, 0x80), (2.0**-11, 0x00), (-(2.0**-11), 0x80),  # sign of zero kept
    (2.0**-10, 0x00), (3 * 2.0**-10, 0x02), (-(2.0**-10) * 1.0001, 0x81),  # subnormal ties to even
    (448.0, 0x7E), (-448.0, 0xFE), (464.0, 0x7E), (464.1, 0x7E), (1e6, 0x7E), (-1e30, 0xFE),  # satfinite
    (np.inf, 0x7E), (-np.inf, 0xFE), (np.nan, 0x7F), (-np.nan, 0xFF),
    (17.0, 0x58), (18.0, 0x59), (19.0, 0x5A),  # 17 ties to 16, 19 to 20
])
def test_e4m3_edges(convdump, tmp_path, x, code):
    got = convdump_e4m3(convdump, tmp_path, np.array([x], dtype=np.float32))[0]
    assert got == code, f"{x!r} → {got:#04x}, want {code:#04x}"
    assert e4m3_satfinite(np.array([x], dtype=np.float32))[0] == code


def numpy_quantise(w, bm, bn, sdt):
    """The recipe of the command contract in numpy: per block s = float32(amax)
    / 448 in float32, stored in the scale dtype (nearest even); code =
    e4m3(w / s) in float32, saturating; a zero scale gives zero codes."""
    rows, cols = w.shape
    sr, sc = -(-rows // bm), -(-cols // bn)
    codes = np.zeros(w.shape, dtype=np.uint8)
    scales = np.zeros((sr, sc), dtype=np.float32)
    for i in range(sr):
        for j in range(sc):
            blk = w[i * bm:(i + 1) * bm, j * bn:(j + 1) * bn]
            s = (np.abs(blk).max() / np.float32(448)).astype(np.float32).astype(NP[sdt]).astype(np.float32)
            scales[i, j] = s
            if s != 0:
                codes[i * bm:(i + 1) * bm, j * bn:(j + 1) * bn] = e4m3_satfinite((blk / s).astype(np.float32))
    return codes, scales


def block_weights(rng, rows, cols, bm, bn):
    """float32 weights whose blocks span magnitudes from f16-subnormal scales
    to large ones, with a zero block and values on E4M3 ties."""
    w = rng.standard_normal((rows, cols)).astype(np.float32)
    mags = 10.0 ** rng.uniform(-8, 4, (-(-rows // bm), -(-cols // bn)))
    w *= np.repeat(np.repeat(mags, bm, 0), bn, 1)[:rows, :cols].astype(np.float32)
    w[:bm, bn:2 * bn] = 0
    w[bm:2 * bm, :bn] = np.round(w[bm:2 * bm, :bn] * 8) / 8
    return w


@pytest.mark.parametrize("sdt", ["F32", "BF16", "F16"])
def test_block_quantise_recipe(convdump, tmp_path, sdt):
    rng = np.random.default_rng({"F32": 1, "BF16": 2, "F16": 3}[sdt])
    rows, cols, bm, bn = 200, 330, 32, 64  # partial blocks on both axes
    w = block_weights(rng, rows, cols, bm, bn)
    src, cf, sf = tmp_path / "w.f32", tmp_path / "codes", tmp_path / "scales"
    w.tofile(src)
    subprocess.run([convdump, "quant", *map(str, (rows, cols, bm, bn)), sdt, src, cf, sf], check=True)
    codes = np.fromfile(cf, dtype=np.uint8).reshape(rows, cols)
    scales = np.fromfile(sf, dtype=np.float32).reshape(-(-rows // bm), -(-cols // bn))
    with np.errstate(all="ignore"):
        want_codes, want_scales = numpy_quantise(w, bm, bn, sdt)
    assert_same_floats(scales, want_scales, f"{sdt} block scales")
    bad = np.argwhere(codes != want_codes)
    assert bad.size == 0, f"{len(bad)} codes differ, first at {bad[:4].tolist()}"


F32 = np.float32


def ceil_pow2(x):
    """2^ceil(log2 x) with log2 rounded to float32 first, as torch's float32
    log2 (numpy's float64 log2 rounded once is the correctly rounded one)."""
    return np.float32(2.0 ** np.ceil(np.log2(np.float64(x)).astype(np.float32)))


def numpy_block_recipe(recipe, blk, sdt):
    """One block of the named recipe (docs/formats.md): its stored scale and
    its codes, in numpy float32 arithmetic (every operation rounded)."""
    amax = F32(np.abs(blk).max())
    div = True
    if recipe in ("transformers", "transformers-ue8m0"):
        m, inv = (F32(F32(1) / amax) * F32(448), None) if amax > 0 else (F32(1), F32(1))
        inv = F32(F32(1) / m) if amax > 0 else F32(1)
        if recipe == "transformers":
            return inv, e4m3_satfinite((blk * m).astype(F32))
        s = ceil_pow2(max(inv, F32(2.0 ** -126)))
        return s, e4m3_satfinite((blk * F32(F32(1) / s)).astype(F32))
    if recipe == "compressed-tensors":
        s = F32((amax / F32(448)).astype(F32).astype(NP[sdt]))
        if s == 0:
            s = F32({"F32": 2.0 ** -23, "BF16": 2.0 ** -7, "F16": 2.0 ** -10}[sdt])  # the dtype's machine epsilon
        return s, e4m3_satfinite((blk / s).astype(F32).astype(NP[sdt]).astype(F32))
    floor = F32(1e-10) if recipe.startswith("vllm-group") else F32(1e-4)
    s = F32(max(amax, floor) / F32(448))
    if recipe == "deepseek-v3-ue8m0":
        s = ceil_pow2(s)
    elif recipe == "vllm-group-ue8m0":
        s = ceil_pow2(max(s, F32(1e-10)))
    elif recipe == "vllm-block":
        return s, e4m3_satfinite((blk * F32(F32(1) / s)).astype(F32))
    return s, e4m3_satfinite((blk / s).astype(F32))


RECIPES = [("transformers", "F32"), ("transformers-ue8m0", "F8_E8M0"), ("compressed-tensors", "F32"),
           ("compressed-tensors", "BF16"), ("compressed-tensors", "F16"), ("deepseek-v3", "F32"),
           ("deepseek-v3-ue8m0", "F32"), ("vllm-block", "F32"), ("vllm-group", "F32"), ("vllm-group-ue8m0", "F32")]


@pytest.mark.parametrize("recipe,sdt", RECIPES)
def test_block_quantise_named_recipes(convdump, tmp_path, recipe, sdt):
    """Every block-FP8 recipe of the ecosystem (numfmt quant_fp8.go) against
    the same arithmetic in numpy, on bf16 weights whose blocks span 1e-45
    (subnormal amax, below every floor) to 1e4, with a zero block and
    E4M3 ties: every stored scale and code equal."""
    rng = np.random.default_rng(17)
    rows, cols, bm, bn = 160, 256, 32, 32
    w = block_weights(rng, rows, cols, bm, bn).astype(BF16).astype(np.float32)
    w[2 * bm:3 * bm, :bn] = np.float32(1e-40) * rng.standard_normal((bm, bn)).astype(np.float32)
    w[3 * bm:4 * bm, :bn] *= np.float32(1e-6)
    src, cf, sf = tmp_path / "w.f32", tmp_path / "codes", tmp_path / "scales"
    w.tofile(src)
    subprocess.run([convdump, "quant", *map(str, (rows, cols, bm, bn)), sdt, src, cf, sf, recipe], check=True)
    codes = np.fromfile(cf, dtype=np.uint8).reshape(rows, cols)
    scales = np.fromfile(sf, dtype=np.float32).reshape(rows // bm, cols // bn)
    want_codes = np.zeros_like(codes)
    want_scales = np.zeros_like(scales)
    with np.errstate(all="ignore"):
        for i in range(rows // bm):
            for j in range(cols // bn):
                s, c = numpy_block_recipe(recipe, w[i * bm:(i + 1) * bm, j * bn:(j + 1) * bn], sdt)
                want_scales[i, j] = s
                want_codes[i * bm:(i + 1) * bm, j * bn:(j + 1) * bn] = c
    assert_same_floats(scales, want_scales, f"{recipe} {sdt} block scales")
    same = (codes == want_codes) | (((codes & 0x7F) == 0x7F) & ((want_codes & 0x7F) == 0x7F))
    bad = np.argwhere(~same)
    assert bad.size == 0, f"{len(bad)} codes differ, first at {bad[:4].tolist()}"


def write_fp8_checkpoint(d, tensors, bm, bn):
    """A block-FP8 checkpoint directory written by the reference writer."""
    d.mkdir()
    ref_write(d / "model.safetensors", tensors, {"format": "pt"})
    cfg = {"model_type": "interop", "quantization_config": {
        "quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [bm, bn]}}
    (d / "config.json").write_text(json.dumps(cfg))


@pytest.mark.parametrize("sdt", ["F32", "BF16", "F16"])
def test_block_dequantise(ckpt, tmp_path, sdt):
    """extract --dtype dequantises code × scale as numpy with ml_dtypes does:
    float32 product, rounded once to the target."""
    rng = np.random.default_rng(7)
    bm, bn = 16, 32
    tensors, parts = {}, {}
    for name, (rows, cols) in {"a.weight": (70, 45), "b.weight": (64, 96), "c.weight": (1, 33)}.items():
        codes = rng.integers(0, 256, (rows, cols), dtype=np.uint8)
        codes[(codes & 0x7F) == 0x7F] = 0x3C  # no NaN codes
        scales = (2.0 ** rng.uniform(-20, 6, (-(-rows // bm), -(-cols // bn)))).astype(np.float32).astype(NP[sdt])
        tensors[name] = ("F8_E4M3", [rows, cols], codes.tobytes())
        tensors[name + "_scale_inv"] = (sdt, list(scales.shape), scales.tobytes())
        parts[name] = (codes, scales)
    src = tmp_path / "src"
    write_fp8_checkpoint(src, tensors, bm, bn)
    for mode, ref in (("f32", np.float32), ("bf16", BF16), ("f16", np.float16)):
        out = tmp_path / f"out-{mode}.safetensors"
        ckpt.run("extract", src, "--match", "**", "--dtype", mode, "--out", out, "--progress", "none", "--allow-nonfinite")
        got = ref_read(out)
        assert sorted(got) == sorted(parts)
        for name, (codes, scales) in parts.items():
            full = np.repeat(np.repeat(scales.astype(np.float32), bm, 0), bn, 1)[: codes.shape[0], : codes.shape[1]]
            with np.errstate(all="ignore"):
                want = (codes.view(E4M3).astype(np.float32) * full).astype(ref)
            dt, shape, raw = got[name]
            assert shape == list(codes.shape)
            assert_same_floats(values(dt, raw, shape), want, f"{name} ({sdt} scales) → {mode}")


@pytest.mark.parametrize("sdt", ["F32", "BF16"])
def test_requant_identical_matches_numpy_recipe(ckpt, tmp_path, sdt):
    """diff calls a bf16 fine-tune weight requant_identical exactly when the
    numpy + ml_dtypes recipe quantises it to the base's FP8 codes and scales;
    each code changed in the base is one requant mismatch."""
    rng = np.random.default_rng(11)
    bm, bn, rows, cols = 32, 32, 96, 80
    w = block_weights(rng, rows, cols, bm, bn).astype(BF16)
    with np.errstate(all="ignore"):
        codes, scales = numpy_quantise(w.astype(np.float32), bm, bn, sdt)
    s = scales.astype(NP[sdt])
    ft = tmp_path / "ft"
    ft.mkdir()
    ref_write(ft / "model.safetensors", {"l.weight": ("BF16", [rows, cols], w.tobytes())}, {"format": "pt"})
    (ft / "config.json").write_text(json.dumps({"model_type": "interop"}))
    bad = codes.copy()
    flip = [(0, 0), (40, 17), (95, 79)]
    for i, j in flip:
        bad[i, j] ^= 1
    for name, c, want_rel, mismatches in (("same", codes, "requant_identical", 0), ("bad", bad, "dtype_changed", len(flip))):
        base = tmp_path / f"base-{name}"
        write_fp8_checkpoint(base, {"l.weight": ("F8_E4M3", [rows, cols], c.tobytes()),
                                    "l.weight_scale_inv": (sdt, list(s.shape), s.tobytes())}, bm, bn)
        r = ckpt.json("diff", base, ft, "--progress", "none", rc=1)
        t = {x["name"]: x for x in r["tensors"]}["l.weight"]
        assert t["relation"] == want_rel, t
        assert t.get("requant_mismatch_elems", 0) == mismatches, t


ORDER = ["ckpt", "transformers", "transformers-ue8m0", "compressed-tensors", "deepseek-v3", "deepseek-v3-ue8m0",
         "vllm-block", "vllm-group", "vllm-group-ue8m0"]


@pytest.mark.parametrize("recipe,sdt", [r for r in RECIPES if r[0] != "compressed-tensors"])
def test_requant_identical_names_numpy_recipe(ckpt, tmp_path, recipe, sdt):
    """A block-FP8 base quantised by each recipe in numpy against its bf16
    weights: diff calls the weight requant_identical with requant_recipe the
    first recipe, in diff's order, whose numpy arithmetic gives the same
    codes and scales (the recipe itself unless an earlier one agrees on
    every block); one code flipped makes it dtype_changed with the counting
    recipe's counts."""
    rng = np.random.default_rng(23)
    bm, bn, rows, cols = 32, 32, 96, 128
    w = block_weights(rng, rows, cols, bm, bn).astype(BF16)
    wf = w.astype(np.float32)

    def quant(name):
        codes = np.zeros((rows, cols), dtype=np.uint8)
        scales = np.zeros((rows // bm, cols // bn), dtype=np.float32)
        with np.errstate(all="ignore"):
            for i in range(rows // bm):
                for j in range(cols // bn):
                    blk = wf[i * bm:(i + 1) * bm, j * bn:(j + 1) * bn]
                    if name == "ckpt":
                        c, s = numpy_quantise(blk, bm, bn, sdt)
                        s = s[0, 0]
                    else:
                        s, c = numpy_block_recipe(name, blk, sdt)
                    scales[i, j] = s
                    codes[i * bm:(i + 1) * bm, j * bn:(j + 1) * bn] = c
        return codes, scales

    codes, scales = quant(recipe)

    def stores(name):
        return name == "transformers-ue8m0" if sdt == "F8_E8M0" else name not in ("transformers-ue8m0", "compressed-tensors")

    def same(a, b):
        return (np.all((a[0] == b[0]) | (((a[0] & 0x7F) == 0x7F) & ((b[0] & 0x7F) == 0x7F)))
                and np.array_equal(a[1].view(np.uint32), b[1].view(np.uint32)))

    want = next(n for n in ORDER if stores(n) and same(quant(n), (codes, scales)))
    s = scales.astype(NP[sdt])
    ft = tmp_path / "ft"
    ft.mkdir()
    ref_write(ft / "model.safetensors", {"l.weight": ("BF16", [rows, cols], w.tobytes())}, {"format": "pt"})
    (ft / "config.json").write_text(json.dumps({"model_type": "interop"}))
    bad = codes.copy()
    bad[40, 17] ^= 1
    for name, c, rel in (("same", codes, "requant_identical"), ("bad", bad, "dtype_changed")):
        base = tmp_path / f"base-{name}"
        write_fp8_checkpoint(base, {"l.weight": ("F8_E4M3", [rows, cols], c.tobytes()),
                                    "l.weight_scale_inv": (sdt, list(s.shape), s.tobytes())}, bm, bn)
        r = ckpt.json("diff", base, ft, "--progress", "none", rc=1)
        t = {x["name"]: x for x in r["tensors"]}["l.weight"]
        assert t["relation"] == rel, t
        if rel == "requant_identical":
            assert t["requant_recipe"] == want, t
        else:
            assert t["requant_recipe"] == ("transformers-ue8m0" if sdt == "F8_E8M0" else "ckpt"), t
