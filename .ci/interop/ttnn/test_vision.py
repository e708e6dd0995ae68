"""The vision tower's files, as tt-metal's qwen36 demo writes them into
<device>/tensor_cache_bfp8 (no mesh suffix) beside the text model's folder:
the tiny vision towers of genfixture's small fixture (hidden 32, 2 heads of
16: hidden / 2 is not whole tiles, so the replicated variants) at 1x2 and of
its small4 fixture (synth.TinyVision: hidden 128, 8 heads of 16,
intermediate 130: the fractured variants, heads and MLP padded) at 1x2 and
1x4, built by `ckpt cache build` with the built-in profile. Every vision
file is made again here from the checkpoint's values the way the demo makes
it (numpy transcriptions of the torch code before each ttnn.as_tensor call,
cited below), turned into a ttnn.Tensor with ttnn's own mesh mapper
(ShardTensor2dMesh(dims=(None, d)) on the 1xN mesh, ReplicateTensorToMesh)
and written with ttnn.dump_tensor: ckpt's file must equal it byte for byte,
and the folder must hold exactly those files. Loading them onto a mock mesh
is test_mesh_load.py's.

Upstream (tenstorrent/tt-metal, models/demos/blackhole/qwen36/tt/vision/):
vision_attention.py@14f34ccb (pad_head_chunk, the per-device [q | k | v]
chunks of wqkv_col and wqkv_bias_col, wo_row's padded head columns,
wo_bias_frac / wo_bias_repl), vision_mlp.py@3b721b87 (pad_to_size to
hidden_dim, linear_fc{1,2}_*), vision_layernorm.py@0abb35c6 (the vector
expanded to [1, 32, dim], cache name prefix + "weight" / "bias"),
patch_merger.py@1a6b64e0, patch_embed.py@1c6e8f62 (proj.weight.reshape(
embed_dim, -1).t(), the bias [1, 1, 1, dim], pos_embed ROW_MAJOR),
vision_model_config.py@1a6b64e0 (hidden_dim: intermediate_size rounded up
to 32 * N; vision_replicated_acts: (hidden_size / N) % 32 != 0);
models/tt_transformers/tt/load_checkpoints.py@009c27a3 (split_hf_keys'
qkv split, convert_hf_qkv_to_meta_format's reverse_permute of q and k)."""

import json
import os
import subprocess

import numpy as np
import pytest
import ttnn

import ttlib
from test_moe import read_checkpoint, values

MESHES = {2: "P300", 4: "P150x4"}
CASES = [("small", 2), ("small4", 2), ("small4", 4)]


def mapper(dim, n):
    """ShardTensor2dMesh(mesh, dims=(None, dim), mesh_shape=(1, n)) as
    MeshMapperConfig([Replicate, Shard(dim)]) over the 1xN mesh, built
    without a device; None for ReplicateTensorToMesh, which as_tensor
    unwraps to no mapper."""
    if dim is None:
        return None
    mesh = ttnn.MeshShape(1, n)
    cfg = ttnn.MeshMapperConfig([ttnn.PlacementReplicate(), ttnn.PlacementShard(dim)], mesh)
    return ttnn.create_mesh_mapper(mesh, cfg)


def reverse_permute(t, n_heads):
    """load_checkpoints.reverse_permute: within each head, rotate-half rows
    to interleaved (view(n_heads, 2, hd/2, -1).transpose(1, 2))."""
    rows = t.shape[0]
    rest = t.shape[1:]
    return t.reshape(n_heads, 2, rows // n_heads // 2, *rest).swapaxes(1, 2).reshape(rows, *rest)


def pad_heads(t, n_local, hd, phd):
    """vision_attention.pad_head_chunk: each head's hd rows (of a weight
    chunk [n_local*hd, in], or a bias chunk [n_local*hd]) zero-padded to
    phd."""
    if hd == phd:
        return t
    if t.ndim == 2:
        t = t.reshape(n_local, hd, -1)
        return np.pad(t, ((0, 0), (0, phd - hd), (0, 0))).reshape(n_local * phd, -1)
    return np.pad(t.reshape(n_local, hd), ((0, 0), (0, phd - hd))).reshape(-1)


def pad_to(t, axis, size):
    """tt_transformers.common.pad_to_size: zeros at the end of axis."""
    w = [(0, 0)] * t.ndim
    w[axis] = (0, size - t.shape[axis])
    return np.pad(t, w)


def expected_files(ts, vc, n):
    """{file name: (logical array, dtype, layout, shard dim or None)} of every
    file the vision tower writes on a 1xN mesh."""
    v = lambda name: values(ts, "model.visual." + name, None)  # noqa: E731  (BF16: no block)
    D, nh = vc["hidden_size"], vc["num_heads"]
    hd = D // nh
    phd = (hd + 31) // 32 * 32
    nl = nh // n
    hidden_dim = (vc["intermediate_size"] + 32 * n - 1) // (32 * n) * (32 * n)
    repl = (D // n) % 32 != 0  # vision_replicated_acts
    frac = None if repl else -1
    out = {}

    def put(name, a, dtype, dim, layout="TILE"):
        out[f"{name}_dtype_{dtype}_layout_{layout}.tensorbin"] = (a, dtype, layout, dim)

    def norm(prefix, src):
        for wb in ("weight", "bias"):
            vec = v(f"{src}.{wb}")
            put(prefix + wb, np.broadcast_to(vec.reshape(1, 1, D), (1, 32, D)), "BFLOAT16", None)

    tp = f".tp{n}"
    for L in range(vc["depth"]):
        pre, blk = f"visual.blocks.{L}.", f"blocks.{L}."
        # split_hf_keys + convert_hf_qkv_to_meta_format
        q, k, vv = np.split(v(blk + "attn.qkv.weight"), 3, axis=0)
        bq, bk, bv = np.split(v(blk + "attn.qkv.bias"), 3, axis=0)
        q, k = reverse_permute(q, q.shape[0] // hd), reverse_permute(k, k.shape[0] // hd)
        bq, bk = reverse_permute(bq, bq.shape[0] // hd), reverse_permute(bk, bk.shape[0] // hd)
        qkv, bias = [], []
        for i in range(n):
            ch = lambda t: pad_heads(np.split(t, n, axis=0)[i], nl, hd, phd)  # noqa: E731
            qkv.append(np.concatenate([ch(q).T, ch(k).T, ch(vv).T], axis=-1))
            bias.append(np.concatenate([ch(bq), ch(bk), ch(bv)]))
        put(pre + "attention.wqkv_col" + tp, np.concatenate(qkv, axis=-1)[None, None], "BFLOAT8_B", -1)
        put(pre + "attention.wqkv_bias_col" + tp, np.concatenate(bias), "BFLOAT8_B", -1)
        wo = v(blk + "attn.proj.weight")  # [dim, n_heads*head_dim]
        wo = np.pad(wo.reshape(-1, nh, hd), ((0, 0), (0, 0), (0, phd - hd))).reshape(1, 1, -1, nh * phd).swapaxes(-1, -2)
        put(pre + "attention.wo_row" + tp, wo, "BFLOAT8_B", -2)
        put(pre + ("attention.wo_bias_repl" if repl else "attention.wo_bias_frac") + tp, v(blk + "attn.proj.bias"), "BFLOAT8_B", frac)
        put(pre + "feed_forward.linear_fc1_w_col" + tp, pad_to(v(blk + "mlp.linear_fc1.weight").T, -1, hidden_dim)[None, None], "BFLOAT8_B", -1)
        put(pre + "feed_forward.linear_fc1_b_col" + tp, pad_to(v(blk + "mlp.linear_fc1.bias"), -1, hidden_dim), "BFLOAT16", -1)
        put(pre + "feed_forward.linear_fc2_w_row" + tp, pad_to(v(blk + "mlp.linear_fc2.weight").T, -2, hidden_dim)[None, None], "BFLOAT8_B", -2)
        put(pre + ("feed_forward.linear_fc2_b_repl" if repl else "feed_forward.linear_fc2_b_frac") + tp, v(blk + "mlp.linear_fc2.bias"),
            "BFLOAT16", frac)
        norm(pre + "norm1", blk + "norm1")
        norm(pre + "norm2", blk + "norm2")
    norm("visual.merger.norm", "merger.norm")
    put("visual.merger.linear_fc1_w_col" + tp, v("merger.linear_fc1.weight").T[None, None], "BFLOAT8_B", -1)
    put("visual.merger.linear_fc1_b_col" + tp, v("merger.linear_fc1.bias"), "BFLOAT16", -1)
    put("visual.merger.linear_fc2_w_row" + tp, v("merger.linear_fc2.weight").T[None, None], "BFLOAT8_B", -2)
    put("visual.merger.linear_fc2_b_frac" + tp, v("merger.linear_fc2.bias"), "BFLOAT16", -1)
    w = v("patch_embed.proj.weight")
    put("visual.patch_embed_proj_w" + tp, w.reshape(w.shape[0], -1).T[None, None], "BFLOAT16", frac)
    put("visual.patch_embed_proj_b" + tp, v("patch_embed.proj.bias").reshape(1, 1, 1, -1), "BFLOAT16", frac)
    put("visual.pos_embed_w_rm" + tp, v("pos_embed.weight"), "BFLOAT16", frac, layout="ROW_MAJOR")
    return out, repl


def ttnn_bytes(a, dtype, layout, dim, n, path):
    t = ttnn.Tensor(np.ascontiguousarray(a, dtype=np.float32), ttlib.DTYPES[dtype], None, ttlib.LAYOUTS[layout],
                    ttnn.DRAM_MEMORY_CONFIG, mesh_mapper=mapper(dim, n))
    ttnn.dump_tensor(path, t)
    return open(path, "rb").read()


@pytest.fixture(scope="module")
def fixtures(genfixture, tmp_path_factory):
    out = {}
    for size in sorted({s for s, _ in CASES}):
        d = str(tmp_path_factory.mktemp("vision-" + size))
        subprocess.run([genfixture, "-size", size, "-out", d], check=True)
        out[size] = os.path.join(d, "base")
    return out


@pytest.mark.parametrize("size,n", CASES, ids=[f"{s}-1x{n}" for s, n in CASES])
def test_vision_files_equal_ttnn(size, n, fixtures, ckpt_bin, tmp_path):
    src = fixtures[size]
    out = str(tmp_path / "cache")
    p = subprocess.run([ckpt_bin, "cache", "build", src, "-o", out, "--mesh", f"1x{n}", "--fsync=false", "-q"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    folder = os.path.join(out, MESHES[n], "tensor_cache_bfp8")
    vc = json.load(open(os.path.join(src, "config.json")))["vision_config"]
    want, repl = expected_files(read_checkpoint(src), vc, n)
    assert repl == (size == "small"), "small: the replicated variants; small4: the fractured ones"
    assert len(want) == vc["depth"] * 12 + 9
    got_names = sorted(f for f in os.listdir(folder) if f.endswith(".tensorbin"))
    assert got_names == sorted(want), "the vision folder holds exactly the files the demo writes"
    for name, (a, dtype, layout, dim) in sorted(want.items()):
        got = open(os.path.join(folder, name), "rb").read()
        ref = ttnn_bytes(a, dtype, layout, dim, n, str(tmp_path / "ref.tensorbin"))
        diff = ttlib.first_difference(got, ref)
        assert diff is None, f"{name}: {diff}"
    m = json.load(open(os.path.join(folder, "manifest.json")))
    assert m["part"] == "vision" and m["companion"].endswith(f"tensor_cache_bfp8_mesh1x{n}"), (m.get("part"), m.get("companion"))
