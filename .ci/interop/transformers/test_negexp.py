"""main's fused GDN decode constant layers.N/tp/neg_exp_A_fp32 is
-torch.exp(A_log.float()) in float32 (_shard_small_fp32, gdn/tp.py of the
qwen36 main line, see docs/tensor-cache-layout.md "Values"). torch's float32
exp is not correctly rounded; ckpt's -exp (float64, rounded once) is. These
tests write the stack's values with torch's own -torch.exp into copies of
ckpt-built caches and hold ckpt's data comparisons (cache compare, cache
identify --source) to them: equal within 1 ulp, named so, never
"identical"; 2 ulp is a difference. They also show that torch's values do
differ from ckpt's on some inputs, so that the tolerance is tested, not
assumed.

What this relies on (torch 2.15.0, the installed package): torch.exp of a
float32 CPU tensor (the same values under its DEFAULT, AVX2 and AVX-512
kernels); the TILE layout of a FLOAT32 file stores whole float32 elements
(mapping/tile), so a file of x and a file of -exp(x) built by the same rule
hold each input and its result at the same byte."""

import json
import os
import shutil
import struct

import torch
from safetensors.torch import load_file, save_file

MAIN = "qwen36@main-2026-10"
FOLDER = os.path.join("P300", "tensor_cache_bfp8_mesh1x2")
NEG_EXP = "layers.0/tp/neg_exp_A_fp32_dtype_FLOAT32_layout_TILE.tensorbin"


def data_region(path):
    """(offset, bytes) of the data of a .tensorbin file: after the u64
    header size and the header."""
    b = open(path, "rb").read()
    (hs,) = struct.unpack_from("<Q", b, 0)
    return 8 + hs, b[8 + hs:]


def every_finite_bf16():
    """Every finite bfloat16 value, once (65,280: the 65,536 codes but the
    256 with an all-ones exponent)."""
    v = torch.arange(0, 1 << 16, dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    return v[torch.isfinite(v.float())]


def ulps(a, b):
    """Distance in ulps of two float32 tensors of finite or matching
    values, on their bits as ordered integers (-0 and +0 equal)."""
    def ordered(t):
        i = t.contiguous().view(torch.int32).to(torch.int64)
        return torch.where(i < 0, -(i & 0x7FFFFFFF), i)
    return (ordered(a) - ordered(b)).abs()


def rules(path, neg_exp):
    """A profile of one rule: the checkpoint's tensor A_log_all as main's
    neg_exp_A_fp32 file of layer 0 (FLOAT32 TILE, replicated), with the
    neg_exp op or without it (the inputs in float32, exactly)."""
    steps = [{"op": "neg_exp"}] if neg_exp else []
    json.dump({"name": "negexp-every-bf16" if neg_exp else "inputs-every-bf16", "description": "every finite bf16 A_log",
               "arch": "blackhole", "tag": "bfp8",
               "rules": [{"id": "all", "target": "layers.0/tp/neg_exp_A_fp32", "sources": ["A_log_all"], "required": True,
                          "transform": steps, "placement": {"kind": "replicate"}, "dtype": "FLOAT32", "layout": "TILE",
                          "memory": "dram_interleaved"}]}, open(path, "w"))
    return path


def test_neg_exp_every_bf16_within_1_ulp(ckpt, tmp_path):
    """Every finite bf16 A_log value (65,280, and 256 of them again to fill
    whole 32x32 tiles: no padding) through ckpt's neg_exp, against the
    same file holding torch's -torch.exp(A_log.float()): torch differs on
    some inputs, by 1 ulp and never more, and cache compare and cache
    identify --source pass the file, naming it equal within 1 ulp."""
    fin = every_finite_bf16()
    assert fin.numel() == 65280
    x = torch.cat([fin, fin[:65536 - fin.numel()]]).reshape(256, 256).contiguous()
    src = tmp_path / "src"
    src.mkdir()
    save_file({"A_log_all": x}, str(src / "model.safetensors"))
    (src / "config.json").write_text(json.dumps({"model_type": "qwen3_5"}))
    ours, inputs = tmp_path / "ours", tmp_path / "inputs"
    neg = rules(tmp_path / "negexp.json", True)
    ckpt.run("cache", "build", src, "--rules", neg, "--mesh", "1x2", "--out", ours, "--fsync=false", "--progress", "none")
    ckpt.run("cache", "build", src, "--rules", rules(tmp_path / "inputs.json", False), "--mesh", "1x2", "--out", inputs,
             "--fsync=false", "--progress", "none")
    off, ckpt_bytes = data_region(ours / FOLDER / NEG_EXP)
    _, in_bytes = data_region(inputs / FOLDER / NEG_EXP)
    assert len(ckpt_bytes) == len(in_bytes) == 65536 * 4
    stored_x = torch.frombuffer(bytearray(in_bytes), dtype=torch.float32)
    # The inputs file holds every input once per element (no padding).
    assert sorted(set(stored_x.view(torch.int32).tolist())) == sorted(set(fin.float().view(torch.int32).tolist()))
    theirs = -torch.exp(stored_x)  # A_log.float() of a bf16 A_log is exact: stored_x is it
    ours_v = torch.frombuffer(bytearray(ckpt_bytes), dtype=torch.float32)

    # Not vacuous: torch differs from ckpt on some of the 65,280 inputs,
    # each time by one ulp (the infinities and zeros of overflow and
    # underflow agree bit for bit).
    differ = theirs.view(torch.int32) != ours_v.view(torch.int32)
    distinct = {int(v) for v in stored_x[differ].view(torch.int32)}
    assert len(distinct) > 0, "torch's -exp equals ckpt's on every bf16 input: nothing is tested"
    finite = torch.isfinite(theirs) & torch.isfinite(ours_v)
    assert bool((finite | ~differ).all()), "a NaN or infinity differs"
    assert int(ulps(theirs[differ], ours_v[differ]).max()) == 1
    print(f"torch {torch.__version__}: -exp differs from ckpt's in the last bit for {len(distinct)} of 65,280 finite bf16 inputs")

    # The stack's cache: ckpt's file with torch's values, no ckpt manifest.
    stack = tmp_path / "stack"
    shutil.copytree(ours, stack)
    os.remove(stack / FOLDER / "manifest.json")
    f = stack / FOLDER / NEG_EXP
    b = bytearray(f.read_bytes())
    b[off:] = theirs.numpy().tobytes()
    f.write_bytes(bytes(b))
    n = int(differ.sum())

    out = ckpt.run("cache", "compare", ours / FOLDER, stack / FOLDER, "--format", "text", "--progress", "none").stdout
    assert f"within 1 ulp (neg_exp): {NEG_EXP}: {n} element(s) differ, by at most 1 ulp\n" in out, out
    assert "1 in both, 0 identical, 1 equal within a tolerance" in out, out
    assert ": equal within tolerance, not identical; the data of 1 file(s) equal within 1 ulp, not bit for bit (neg_exp:" in out, out
    doc = ckpt.json("cache", "compare", ours / FOLDER, stack / FOLDER, "--progress", "none")
    assert doc["same"] and doc["differences"] == []
    [tol] = doc["within_tolerance"]
    assert (tol["file"], tol["differing_elements"], tol["max_ulp"], tol["tolerance"]["op"]) == (NEG_EXP, n, 1, "neg_exp")

    out = ckpt.run("cache", "identify", stack, "--source", src, "--rules", neg, "--progress", "none").stdout
    assert "exactly negexp-every-bf16, by names, headers and data (" in out, out
    assert "; the data of 1 file(s) equal within 1 ulp, not bit for bit (neg_exp:" in out, out

    # One element 2 ulp from ckpt's: a data difference naming its byte.
    k = int(torch.nonzero(differ)[0])
    o, t = int(ours_v.view(torch.int32)[k]), int(theirs.view(torch.int32)[k])
    assert abs(t - o) == 1
    two = o + 2 * (t - o)  # torch's direction, one ulp further
    struct.pack_into("<i", b, off + 4 * k, two)
    f.write_bytes(bytes(b))
    doc = ckpt.json("cache", "compare", ours / FOLDER, stack / FOLDER, "--progress", "none", rc=1)
    [d] = doc["differences"]
    assert (d["kind"], d["file"], d["first_byte"], d["tolerance"]["op"]) == ("data", NEG_EXP, 4 * k, "neg_exp"), d
    assert "2 ulp apart" in d["message"], d
    ckpt.run("cache", "identify", stack, "--source", src, "--rules", neg, "--progress", "none", rc=1)


def test_neg_exp_real_file_within_1_ulp(ckpt, zoo, tmp_path):
    """A Qwen3.5 save by transformers whose A_log values are inputs torch's
    -exp rounds differently, built with main's built-in profile: its
    layers.N/tp/neg_exp_A_fp32 files, with torch's values written in (as
    _shard_small_fp32 writes -torch.exp(A_log.float())), differ from
    ckpt's, and cache compare and cache identify --source pass them within
    1 ulp; every other file is identical."""
    # Inputs where torch's float32 -exp is not float32(-exp) computed in
    # float64 (what ckpt does).
    fin = every_finite_bf16().float()
    wrong = fin[(-torch.exp(fin)).view(torch.int32) != (-torch.exp(fin.double())).float().view(torch.int32)]
    wrong = wrong[torch.isfinite(-torch.exp(wrong))]
    assert wrong.numel() >= 8, wrong
    src = tmp_path / "src"
    shutil.copytree(zoo.save("qwen3_5").dir, src)
    names, used = [], 0
    for st in sorted(str(p) for p in src.glob("*.safetensors")):
        sd = load_file(st)
        mine = sorted(k for k in sd if k.endswith("linear_attn.A_log"))
        for name in mine:
            n = sd[name].numel()
            sd[name] = wrong[used:used + n].to(sd[name].dtype).reshape(sd[name].shape)
            used += n
            names.append((name, sd[name]))
        if mine:
            save_file(sd, st, metadata={"format": "pt"})
    assert names
    ours = tmp_path / "ours"
    ckpt.run("cache", "build", src, "--profile", MAIN, "--mesh", "1x2", "--out", ours, "--fsync=false", "--progress", "none")
    stack = tmp_path / "stack"
    shutil.copytree(ours, stack)
    os.remove(stack / FOLDER / "manifest.json")

    # Each file: [1, 1, heads/2] per device, one 32x32 FLOAT32 tile per
    # shard, the heads at the first elements of face 0 (row 0).
    files = 0
    differing = 0
    for name, a_log in names:
        layer = name.split(".layers.")[1].split(".")[0]
        rel = f"layers.{layer}/tp/neg_exp_A_fp32_dtype_FLOAT32_layout_TILE.tensorbin"
        f = stack / FOLDER / rel
        off, data = data_region(f)
        a = a_log.float()
        per = a.numel() // 2
        tile = 32 * 32 * 4
        assert len(data) == 2 * tile, len(data)
        b = bytearray(f.read_bytes())
        for dev in range(2):
            want = -torch.exp(a[dev * per:(dev + 1) * per])
            at = off + dev * tile
            got = torch.frombuffer(bytearray(b[at:at + 4 * per]), dtype=torch.float32)
            # ckpt's bytes are its correctly rounded -exp of these inputs
            # (so the offsets are right), and torch's differ.
            assert torch.equal(got, (-torch.exp(a[dev * per:(dev + 1) * per].double())).float())
            differing += int((got.view(torch.int32) != want.view(torch.int32)).sum())
            b[at:at + 4 * per] = want.numpy().tobytes()
        f.write_bytes(bytes(b))
        files += 1
    assert differing > 0

    out = ckpt.run("cache", "compare", ours / FOLDER, stack / FOLDER, "--format", "text", "--progress", "none").stdout
    assert out.count("within 1 ulp (neg_exp): layers.") == files, out
    assert f"{files} equal within a tolerance" in out, out
    assert "equal within tolerance, not identical" in out, out
    doc = ckpt.json("cache", "compare", ours / FOLDER, stack / FOLDER, "--progress", "none")
    assert doc["same"] and doc["identical"] == doc["common"] - files
    assert sum(t["differing_elements"] for t in doc["within_tolerance"]) == differing
    out = ckpt.run("cache", "identify", stack, "--source", src, "--progress", "none").stdout
    assert f"exactly {MAIN}, by names, headers and data (" in out, out
    assert f"; the data of {files} file(s) equal within 1 ulp, not bit for bit (neg_exp:" in out, out
