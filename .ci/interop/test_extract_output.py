"""Files written by `ckpt extract` are read by the reference implementation
(safetensors: its Rust core through deserialize and safe_open, and the numpy
load_file): same names, dtypes, shapes, metadata and bytes, and the same
bytes the reference writer produces for those tensors."""

import json

import ml_dtypes
import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import load_file

from stlib import (BITS, CKPT_FLOAT, NP, SPEC, assert_same_floats, assert_same_layout, handmade_write, nbytes, ref_read,
                   ref_read_dir, ref_serialize, ref_write, values)

META = {"format": "np", "origin": "interop suite"}
# dtypes safe_open(framework="np") turns into arrays. safetensors 0.8.0 looks
# the F8 kinds up as numpy attributes that do not exist (upstream
# safetensors/safetensors#682, open) and has none for F4 and F6: their bytes
# are checked through deserialize and their dtype and shape through get_slice.
NP_LOADABLE = {"BOOL", "U8", "I8", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "C64", "F64", "I64", "U64"}
TARGET = {"bf16": "BF16", "f16": "F16", "f32": "F32"}


def random_bytes(rng, dtype, shape):
    n = nbytes(dtype, shape)
    if dtype == "BOOL":
        return rng.integers(0, 2, n, dtype=np.uint8).tobytes()
    return rng.integers(0, 256, n, dtype=np.uint8).tobytes()


@pytest.fixture(scope="module")
def alltypes(tmp_path_factory):
    """A two-shard checkpoint holding every safetensors dtype: shard 1 is
    written by the reference writer (20 dtypes), shard 2 (F6_E2M3, F6_E3M2,
    which the Python API cannot write) by a hand-made writer in the
    reference layout. Returns (dir, {name: (dtype, shape, bytes)})."""
    rng = np.random.default_rng(16)
    d = tmp_path_factory.mktemp("alltypes")
    ref, hand = {}, {}
    for dt in BITS:
        t = (dt, [5, 12], random_bytes(rng, dt, [5, 12]))
        (hand if dt not in SPEC else ref)[f"t.{dt}"] = t
    ref["s.scalar"] = ("F32", [], np.float32(-2.5).tobytes())
    ref["s.empty"] = ("F16", [0, 5], b"")
    ref["s.cube"] = ("BF16", [2, 3, 4], random_bytes(rng, "BF16", [2, 3, 4]))
    ref["s.vec.I64"] = ("I64", [3], np.array([-1, 0, 2**62], dtype=np.int64).tobytes())
    names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    ref_write(d / names[0], ref, META)
    handmade_write(d / names[1], hand, META)
    assert ref_read(d / names[1]) == hand  # the reference reader accepts the hand-made shard
    weight_map = {n: names[0] for n in ref} | {n: names[1] for n in hand}
    index = {"metadata": {"total_size": sum(len(t[2]) for t in (ref | hand).values())}, "weight_map": weight_map}
    (d / "model.safetensors.index.json").write_text(json.dumps(index))
    return d, ref | hand


def check_file(path, want, metadata):
    """path holds exactly want ({name: (dtype, shape, bytes)}) for the
    reference reader, with metadata, laid out as the reference writer would."""
    got = ref_read(path)
    assert sorted(got) == sorted(want)
    for n, (dt, shape, data) in want.items():
        g = got[n]
        assert (g[0], g[1]) == (dt, list(shape)), n
        assert g[2] == data, f"{n}: bytes differ"
    with safe_open(str(path), framework="np") as f:
        assert sorted(f.keys()) == sorted(want)
        assert f.metadata() == metadata
        for n, (dt, shape, data) in want.items():
            s = f.get_slice(n)
            assert (s.get_dtype(), s.get_shape()) == (dt, list(shape)), n
            if dt in NP_LOADABLE:
                a = f.get_tensor(n)
                assert a.dtype == np.dtype(NP[dt]) and list(a.shape) == list(shape), n
                assert a.tobytes() == data, n
    if all(dt in NP_LOADABLE for dt, _, _ in want.values()):
        loaded = load_file(str(path))
        assert sorted(loaded) == sorted(want)
        for n, (dt, shape, data) in want.items():
            assert loaded[n].tobytes() == data and list(loaded[n].shape) == list(shape), n
    raw = path.read_bytes()
    if all(dt in SPEC for dt, _, _ in want.values()):
        assert_same_layout(raw, ref_serialize(want, metadata), f"{path.name} (vs the reference writer)")
    else:
        ref = path.with_suffix(".handmade")
        handmade_write(ref, want, metadata)
        assert_same_layout(raw, ref.read_bytes(), f"{path.name} (vs the reference layout)")


def check_index(out, want, metadata):
    """A sharded output: the index maps every tensor to the shard holding it,
    total_size is the payload, every shard passes check_file."""
    index = json.loads((out / "model.safetensors.index.json").read_text())
    wm = index["weight_map"]
    assert sorted(wm) == sorted(want)
    assert index["metadata"]["total_size"] == sum(len(t[2]) for t in want.values())
    shards = sorted(set(wm.values()))
    assert len(shards) > 1
    assert shards == [f"model-{k:05d}-of-{len(shards):05d}.safetensors" for k in range(1, len(shards) + 1)]
    for s in shards:
        check_file(out / s, {n: want[n] for n in wm if wm[n] == s}, metadata)


def test_keep_single_file_every_dtype(ckpt, alltypes, tmp_path):
    src, want = alltypes
    out = tmp_path / "all.safetensors"
    r = ckpt.json("extract", src, "--match", "**", "--out", out, "--progress", "none", "--allow-nonfinite")
    assert r["summary"]["tensors"] == len(want) and r["summary"]["copied"] == len(want)
    assert {t["dtype"] for t in r["tensors"]} == set(BITS)
    check_file(out, want, META)


def test_keep_sharded_every_dtype(ckpt, alltypes, tmp_path):
    src, want = alltypes
    out = tmp_path / "sharded"
    r = ckpt.json("extract", src, "--match", "**", "--max-shard-size", "200B", "--out", out, "--progress", "none", "--allow-nonfinite")
    assert r["sharded"] and r["summary"]["files"] > 1
    check_index(out, want, META)


def test_keep_numpy_dtypes_load_file(ckpt, alltypes, tmp_path):
    src, want = alltypes
    out = tmp_path / "np.safetensors"
    args = ["--exclude", "t.F8_*", "--exclude", "t.F4", "--exclude", "t.F6_*"]
    ckpt.run("extract", src, "--match", "**", *args, "--out", out, "--progress", "none", "--allow-nonfinite")
    sub = {n: t for n, t in want.items() if t[0] in NP_LOADABLE}
    check_file(out, sub, META)


def converted(dtype, shape, data, target):
    """What --dtype TARGET makes of a tensor with no block scale, by numpy and
    ml_dtypes: floats go through float32 (F64 too) and are rounded to the
    target, nearest even; other dtypes are copied."""
    if dtype not in CKPT_FLOAT or dtype == target:
        return dtype, shape, data
    f = values(dtype, data).astype(np.float32)
    return target, shape, f.astype(NP[target]).tobytes()


# Quantised codes: without a scale, --dtype refuses them (a quantised
# weight is its codes plus its scale).
CODES = {"F8_E4M3", "F8_E5M2", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F4", "F6_E2M3", "F6_E3M2"}


@pytest.mark.parametrize("mode", ["bf16", "f16", "f32"])
def test_convert_every_dtype(ckpt, alltypes, tmp_path, mode):
    src, want = alltypes
    target = TARGET[mode]
    out = tmp_path / f"{mode}.safetensors"
    for n, t in want.items():
        if t[0] in CODES:
            p = ckpt.run("extract", src, "--match", n, "--dtype", mode, "--out", tmp_path / "no.safetensors", "--progress", "none", rc=1)
            assert f'"{n}" ({t[0]})' in p.stderr and "has no scale" in p.stderr, p.stderr
    want = {n: t for n, t in want.items() if t[0] not in CODES}
    with np.errstate(all="ignore"):
        expect = {n: converted(*t, target) for n, t in want.items()}
    excl = [a for n in sorted(alltypes[1]) if alltypes[1][n][0] in CODES for a in ("--exclude", n)]
    r = ckpt.json("extract", src, "--match", "**", *excl, "--dtype", mode, "--out", out, "--progress", "none", "--allow-nonfinite")
    assert r["summary"]["converted"] == sum(1 for t in want.values() if t[0] in CKPT_FLOAT and t[0] != target)
    got = ref_read(out)
    assert sorted(got) == sorted(expect)
    for n, (dt, shape, data) in expect.items():
        assert (got[n][0], got[n][1]) == (dt, list(shape)), n
        if dt == target and want[n][0] != target:
            assert_same_floats(values(dt, got[n][2]), values(dt, data), f"{n} {want[n][0]}→{dt}")
        else:
            assert got[n][2] == data, n
    # NaN payloads aside, the file is the reference writer's.
    check_file(out, got, META)


def fp8_expected(src_dir, target):
    """The tensors of a block-FP8 checkpoint dequantised by numpy and
    ml_dtypes: code (float8_e4m3fn → float32) × its block's scale (→ float32),
    a float32 product rounded once to the target; scales dropped; other
    floats rounded to the target."""
    cfg = json.loads((src_dir / "config.json").read_text())
    bm, bn = cfg["quantization_config"]["weight_block_size"]
    tensors = ref_read_dir(src_dir)
    out = {}
    for n, (dt, shape, data) in tensors.items():
        if n.endswith("_scale_inv") and n[: -len("_scale_inv")] in tensors:
            continue
        s = tensors.get(n + "_scale_inv")
        if dt == "F8_E4M3" and s is not None:
            w = values(dt, data, shape).astype(np.float32)
            sc = values(s[0], s[2], s[1]).astype(np.float32)
            full = np.repeat(np.repeat(sc, bm, axis=0), bn, axis=1)[: shape[0], : shape[1]]
            out[n] = (target, shape, (w * full).astype(NP[target]).tobytes())
        else:
            out[n] = converted(dt, shape, data, target)
    return out, tensors


@pytest.mark.parametrize("mode", ["bf16", "f32", "f16"])
def test_dequantise_fp8_checkpoint(ckpt, pair, tmp_path, mode):
    base, _ = pair
    out = tmp_path / mode
    r = ckpt.json("extract", base, "--match", "**", "--dtype", mode, "--out", out, "--progress", "none", "--allow-nonfinite")
    want, src = fp8_expected(base, TARGET[mode])
    assert r["summary"]["dequantized"] == sum(1 for n, t in src.items() if t[0] == "F8_E4M3")
    got = ref_read(out / "model.safetensors")
    assert sorted(got) == sorted(want)
    for n, (dt, shape, data) in want.items():
        assert (got[n][0], got[n][1]) == (dt, list(shape)), n
        assert_same_floats(values(dt, got[n][2]), values(dt, data), n)
    check_file(out / "model.safetensors", want, {"format": "pt"})
    cfg = json.loads((out / "config.json").read_text())
    assert "quantization_config" not in cfg and "quantization_config" not in cfg.get("text_config", {})
    if mode == "bf16":
        # what a user does next: the numpy loader takes it whole
        loaded = load_file(str(out / "model.safetensors"))
        assert all(a.dtype == ml_dtypes.bfloat16 for a in loaded.values())


def test_keep_fp8_with_scales_sharded(ckpt, pair, tmp_path):
    base, _ = pair
    src = ref_read_dir(base)
    out = tmp_path / "mtp"
    r = ckpt.json("extract", base, "--match", "mtp.**", "--exclude", "**.weight_scale_inv", "--with-scales",
                  "--max-shard-size", "64KiB", "--out", out, "--progress", "none", "--allow-nonfinite")
    want = {n: t for n, t in src.items() if n.startswith("mtp.")}
    fp8 = [n for n, t in want.items() if t[0] == "F8_E4M3"]
    assert fp8 and all(n + "_scale_inv" in want for n in fp8)
    assert r["summary"]["tensors"] == len(want)
    check_index(out, want, {"format": "pt"})
    # FP8 weights stay with their scales, in one shard
    wm = json.loads((out / "model.safetensors.index.json").read_text())["weight_map"]
    assert all(wm[n] == wm[n + "_scale_inv"] for n in fp8)
    # the source's config, and the selection it holds (ckpt_subset: verify
    # of the output then expects only the selected tensors)
    cfg = json.loads((out / "config.json").read_text())
    assert cfg.pop("ckpt_subset") == {"match": ["mtp.**"], "exclude": ["**.weight_scale_inv"]}
    assert cfg == json.loads((base / "config.json").read_text())
    ckpt.run("verify", out)  # verify of the extracted head passes (exit 0)


def test_keep_whole_fp8_checkpoint_single_file(ckpt, pair, tmp_path):
    base, _ = pair
    out = tmp_path / "all.safetensors"
    ckpt.run("extract", base, "--match", "**", "--out", out, "--progress", "none", "--allow-nonfinite")
    check_file(out, ref_read_dir(base), {"format": "pt"})
