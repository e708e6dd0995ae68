"""Files written by the reference implementation are read by ckpt: `inspect`
gives the names, dtypes, shapes, offsets and sizes of the reference header;
`contract --read-data` hashes the same bytes the reference reader returns;
`verify` passes them and counts NaN/Inf as numpy does; `diff` finds the
changes numpy finds, with the same statistics."""

import json

import ml_dtypes
import numpy as np
import pytest
import xxhash
from huggingface_hub import split_state_dict_into_shards_factory
from safetensors.numpy import save_file

from stlib import BITS, CKPT_FLOAT, NP, SPEC, header, nbytes, ref_read, ref_write, values

BM, BN = 4, 8  # weight_block_size of the reference checkpoints
# Quantised codes: without a scale, diff in values mode refuses them (a
# quantised weight is its codes plus its scale); bytes mode compares them.
CODES = {"F8_E4M3", "F8_E5M2", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F4", "F6_E2M3", "F6_E3M2"}
CONFIG = {"model_type": "interop", "quantization_config": {
    "quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [BM, BN]}}


def finite_values(rng, dtype, shape):
    """Random finite data of a dtype (no NaN code in any float format)."""
    n = int(np.prod(shape))
    if dtype == "BOOL":
        return rng.integers(0, 2, n).astype(np.bool_).tobytes()
    if dtype in ("F4", "F6_E2M3", "F6_E3M2"):  # no NaN or Inf in these formats
        return rng.integers(0, 256, nbytes(dtype, shape), dtype=np.uint8).tobytes()
    if dtype == "F8_E8M0":
        return rng.integers(100, 150, n, dtype=np.uint8).tobytes()
    t = NP[dtype]
    if np.issubdtype(np.dtype(t), np.integer):
        info = np.iinfo(t)
        return rng.integers(info.min, info.max, n, dtype=t, endpoint=True).tobytes()
    if dtype == "C64":
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64).tobytes()
    x = rng.standard_normal(n) * 4
    if dtype in ("F8_E4M3FNUZ", "F8_E5M2FNUZ"):
        x[x == 0] = 1  # -0 is their NaN code
    return x.astype(t).tobytes()


def reference_tensors(seed):
    """Every dtype the reference writer takes, in shapes of every rank, and a
    block-FP8 weight (F8_E4M3 with a weight_scale_inv) per scale dtype."""
    rng = np.random.default_rng(seed)
    out = {}
    for i, dt in enumerate(SPEC):
        shape = [[6, 8], [48], [2, 3, 8], [3, 2, 2, 4]][i % 4]
        if dt == "F8_E4M3":
            continue
        out[f"t.{dt}"] = (dt, shape, finite_values(rng, dt, shape))
    for sdt, (r, c) in (("F32", (9, 20)), ("BF16", (8, 16)), ("F16", (1, 7))):
        w = f"fp8.{sdt}.weight"
        out[w] = ("F8_E4M3", [r, c], finite_values(rng, "F8_E4M3", [r, c]))
        s = (2.0 ** rng.uniform(-12, 0, (-(-r // BM), -(-c // BN)))).astype(NP[sdt])
        out[w + "_scale_inv"] = (sdt, list(s.shape), s.tobytes())
    out["s.scalar"] = ("F64", [], np.float64(np.pi).tobytes())
    out["s.empty"] = ("F32", [4, 0], b"")
    return out


@pytest.fixture(scope="module")
def refdir(tmp_path_factory):
    """One file written through safetensors.serialize_file (every dtype it
    takes, F4 included), with a config.json."""
    d = tmp_path_factory.mktemp("ref")
    tensors = reference_tensors(1)
    ref_write(d / "model.safetensors", tensors, {"format": "pt", "writer": "safetensors"})
    (d / "config.json").write_text(json.dumps(CONFIG))
    return d, tensors


@pytest.fixture(scope="module")
def npsharded(tmp_path_factory):
    """A sharded checkpoint as a Python user writes one: numpy / ml_dtypes
    arrays split by huggingface_hub's shard planner, each shard written by
    safetensors.numpy.save_file, the index as huggingface_hub lays it out."""
    rng = np.random.default_rng(2)
    sd = {}
    for dt in ("BOOL", "U8", "I8", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "C64", "F64", "I64", "U64",
               "F8_E5M2", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ"):
        shape = (16, 24)
        sd[f"layers.{len(sd)}.{dt.lower()}"] = np.frombuffer(finite_values(rng, dt, shape), dtype=NP[dt]).reshape(shape)
    for i in range(3):
        w = np.frombuffer(finite_values(rng, "F8_E4M3", (16, 24)), dtype=ml_dtypes.float8_e4m3fn).reshape(16, 24)
        sd[f"layers.fp8.{i}.weight"] = w
        sd[f"layers.fp8.{i}.weight_scale_inv"] = (2.0 ** rng.uniform(-8, 0, (4, 3))).astype(np.float32)
    split = split_state_dict_into_shards_factory(sd, get_storage_size=lambda a: a.nbytes,
                                                 filename_pattern="model{suffix}.safetensors", max_shard_size=3000)
    assert split.is_sharded
    d = tmp_path_factory.mktemp("npsharded")
    for fname, names in split.filename_to_tensors.items():
        save_file({n: sd[n] for n in names}, str(d / fname), metadata={"format": "np"})
    index = {"metadata": split.metadata, "weight_map": split.tensor_to_filename}
    (d / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    (d / "config.json").write_text(json.dumps(CONFIG))
    tensors = {n: (dt, shape, data) for f in split.filename_to_tensors for n, (dt, shape, data) in ref_read(d / f).items()}
    return d, tensors, split


def check_inspect(ckpt, src, files):
    """ckpt inspect == the headers: per file its size and header length, per
    tensor dtype, shape, absolute offset and byte count."""
    r = ckpt.json("inspect", src)
    want_t, want_f = {}, {}
    for f in files:
        n, hdr = header(src / f if src.is_dir() else src)
        want_f[f] = {"size": (src / f if src.is_dir() else src).stat().st_size, "header_bytes": n,
                     "tensors": len([k for k in hdr if k != "__metadata__"])}
        for name, e in hdr.items():
            if name != "__metadata__":
                b, end = e["data_offsets"]
                want_t[name] = {"dtype": e["dtype"], "shape": e["shape"], "file": f, "offset": 8 + n + b, "bytes": end - b}
    got_f = {f["path"]: {k: f[k] for k in ("size", "header_bytes", "tensors")} for f in r["files"]}
    assert got_f == want_f
    got_t = {t["name"]: {k: t[k] for k in ("dtype", "shape", "file", "offset", "bytes")} for t in r["tensors"]}
    assert got_t == want_t
    return r


def test_inspect_reference_file(ckpt, refdir):
    d, tensors = refdir
    r = check_inspect(ckpt, d / "model.safetensors", ["model.safetensors"])
    assert {t["dtype"] for t in r["tensors"]} == set(SPEC)


def test_inspect_numpy_sharded(ckpt, npsharded):
    d, tensors, split = npsharded
    r = check_inspect(ckpt, d, sorted(split.filename_to_tensors))
    assert r["sharded"]


@pytest.mark.parametrize("which", ["refdir", "npsharded"])
def test_contract_hashes_the_reference_bytes(ckpt, request, tmp_path, which):
    d, tensors = request.getfixturevalue(which)[:2]
    out = tmp_path / "contract.json"
    ckpt.run("contract", d, "--read-data", "-o", out, "--progress", "none")
    c = json.loads(out.read_text())
    got = {t["name"]: (t["dtype"], t["shape"], t["xxh3"]) for t in c["tensors"]}
    want = {n: (dt, list(s), xxhash.xxh3_64_hexdigest(data)) for n, (dt, s, data) in tensors.items()}
    assert got == want


@pytest.mark.parametrize("which", ["refdir", "npsharded"])
def test_verify_passes(ckpt, request, which):
    d = request.getfixturevalue(which)[0]
    for extra in ([], ["--read-data"]):
        r = ckpt.json("verify", d, *extra, "--progress", "none")
        failed = [c for c in r["findings"] if c["status"] == "fail"]
        assert r["ok"] and not failed, failed
        ids = {c["id"] for c in r["findings"] if c["status"] == "pass"}
        assert {"file.size", "header.lint", "fp8.scale_shape", "fp8.scale_dtype"} <= ids
        if extra:
            assert {"data.fp8_nan", "data.float_nonfinite", "data.hash"} <= ids


def test_verify_counts_nan_like_numpy(ckpt, tmp_path):
    rng = np.random.default_rng(3)
    tensors, want = {}, {}
    for dt in ("F32", "F16", "BF16", "F64"):
        x = rng.standard_normal(300)
        x[rng.choice(300, 17, replace=False)] = np.nan
        x[rng.choice(300, 5, replace=False)] *= -1
        inf = rng.choice(300, 9, replace=False)
        x[inf] = np.where(rng.random(9) < 0.5, np.inf, -np.inf)
        a = x.astype(NP[dt])
        tensors[f"n.{dt}"] = (dt, [300], a.tobytes())
        f = a.astype(np.float64)
        want[f"n.{dt}"] = (int(np.isnan(f).sum()), int(np.isinf(f).sum()))
    codes = rng.integers(0, 256, 400, dtype=np.uint8)
    tensors["n.e4m3"] = ("F8_E4M3", [20, 20], codes.tobytes())
    nan_codes = int(np.isnan(codes.view(ml_dtypes.float8_e4m3fn).astype(np.float32)).sum())
    assert nan_codes > 0
    src = tmp_path / "nan.safetensors"
    ref_write(src, tensors)
    r = ckpt.json("verify", src, "--read-data", "--progress", "none", rc=1)
    msgs = {c["tensors"][0]: c["message"] for c in r["findings"]
            if c["id"] in ("data.float_nonfinite", "data.fp8_nan") and c["status"] == "fail"}
    for name, (nan, inf) in want.items():
        assert f"{nan} NaN and {inf} Inf of 300 values" in msgs[name], msgs.get(name)
    assert f"{nan_codes} of 400 F8_E4M3 codes are NaN" in msgs["n.e4m3"]


def perturbed(tensors, seed):
    """A copy of tensors with about a tenth of the elements of each changed
    (block scales kept): floats by value (F64 partly below float32
    precision), other dtypes by flipping bits."""
    rng = np.random.default_rng(seed)
    out = {}
    for n, (dt, shape, data) in tensors.items():
        if not data or n.endswith("_scale_inv"):
            out[n] = (dt, shape, data)
            continue
        if dt in CKPT_FLOAT:
            a = values(dt, data).astype(np.float64)
            idx = rng.choice(a.size, max(1, a.size // 10), replace=False)
            if dt == "F64":
                a[idx[::2]] *= 1 + 1e-12  # invisible in float32
                a[idx[1::2]] += rng.standard_normal(idx[1::2].size)
            elif dt == "F8_E8M0":
                a[idx] *= 2.0
            else:
                a[idx] += rng.standard_normal(idx.size)
            out[n] = (dt, shape, a.astype(NP[dt]).tobytes())
            continue
        b = bytearray(data)
        for i in rng.choice(len(b), max(1, len(b) // 10), replace=False):
            b[i] ^= 1 << int(rng.integers(0, 7 if dt != "BOOL" else 1))
        if dt in ("F8_E4M3FNUZ", "F8_E5M2FNUZ"):  # keep clear of their NaN code 0x80
            b = bytes(0x81 if x == 0x80 else x for x in b)
        out[n] = (dt, shape, bytes(b))
    return out


def as_values(tensors, n):
    dt, shape, data = tensors[n]
    v = values(dt, data, shape).astype(np.float32)
    s = tensors.get(n + "_scale_inv")
    if dt == "F8_E4M3" and s is not None:
        sc = values(s[0], s[2], s[1]).astype(np.float32)
        v = v * np.repeat(np.repeat(sc, BM, 0), BN, 1)[: shape[0], : shape[1]]
    return v.astype(np.float64).ravel()


def changed_elements(dt, a, b):
    w = BITS[dt] // 8
    ea = np.frombuffer(a, np.uint8).reshape(-1, w)
    eb = np.frombuffer(b, np.uint8).reshape(-1, w)
    return int((ea != eb).any(axis=1).sum())


@pytest.mark.parametrize("which", ["refdir", "npsharded"])
def test_diff_matches_numpy(ckpt, request, tmp_path, which):
    d, base = request.getfixturevalue(which)[:2]
    ft = perturbed(base, 9)
    (tmp_path / "ft").mkdir()
    ref_write(tmp_path / "ft" / "model.safetensors", ft, {"format": "pt"})
    (tmp_path / "ft" / "config.json").write_text(json.dumps(CONFIG))
    codes = sorted(n for n, t in base.items() if t[0] in CODES)
    assert codes
    p = ckpt.run("diff", d, tmp_path / "ft", "--progress", "none", rc=1)
    assert "has no scale" in p.stderr and any(f'"{n}"' in p.stderr for n in codes), p.stderr
    excl = [a for n in codes for a in ("--exclude", n)]
    r = ckpt.json("diff", d, tmp_path / "ft", *excl, "--progress", "none", rc=1)
    got = {t["name"]: t for t in r["tensors"]}
    kept = {n: t for n, t in base.items() if n not in codes}
    assert sorted(got) == sorted(kept)
    checked = 0
    for n, (dt, shape, data) in kept.items():
        t = got[n]
        assert (t["base_dtype"], t["ft_dtype"], t["shape"]) == (dt, dt, list(shape)), n
        same = data == ft[n][2]
        assert t["relation"] == ("identical" if same else "changed"), t
        if dt in CKPT_FLOAT:
            a, b = as_values(base, n), as_values(ft, n)
            # changed_elems counts stored elements that differ (an F64 change
            # below float32 precision counts; the statistics do not see it)
            assert t["changed_elems"] == changed_elements(dt, data, ft[n][2]), t
            if a.size:
                diff = np.abs(a - b)
                assert t["max_abs_diff"] == diff.max(), t
                if not same:
                    assert t["rel_l2"] == pytest.approx(np.linalg.norm(a - b) / np.linalg.norm(a), rel=1e-9), t
                    assert t["cosine"] == pytest.approx(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)), rel=1e-9), t
            checked += 1
        elif BITS[dt] >= 8 and "changed_elems" in t:
            assert t["changed_elems"] == changed_elements(dt, data, ft[n][2]), t
            checked += 1
    assert checked == len(kept)  # every float, and every integer of whole bytes, reports changed elements
    rb = ckpt.json("diff", d, tmp_path / "ft", "--mode", "bytes", "--progress", "none", rc=1)
    for t in rb["tensors"]:
        assert t["relation"] == ("identical" if base[t["name"]][2] == ft[t["name"]][2] else "changed"), t


def test_diff_reference_against_extract(ckpt, npsharded, tmp_path):
    """A reference checkpoint and ckpt's single-file extract of it hold the
    same tensors: every relation is identical, in values and bytes modes."""
    d, tensors, _ = npsharded
    out = tmp_path / "copy"
    ckpt.run("extract", d, "--match", "**", "--out", out, "--progress", "none", "--allow-nonfinite")
    codes = [n for n, t in tensors.items() if t[0] in CODES]
    assert codes
    r = ckpt.json("diff", d, out, "--mode", "bytes", "--progress", "none")
    assert r["summary"]["identical"] == len(tensors), r["summary"]
    r = ckpt.json("diff", d, out, "--mode", "values", *[a for n in codes for a in ("--exclude", n)], "--progress", "none")
    assert r["summary"]["identical"] == len(tensors) - len(codes), r["summary"]
