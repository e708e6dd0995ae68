"""The files of a Qwen3.5-MoE checkpoint and of KV heads replicated over a
mesh wider than them, as tt-metal's qwen36 loader writes them: the tiny MoE
fixture (genfixture -size moe: 8 experts, a shared expert, 2 KV heads) in
both expert layouts (fused mlp.experts.gate_up_proj / down_proj, and one
tensor per expert as transformers saves them), bf16 and block FP8, built
by `ckpt cache build` with the built-in profile at 1x2 and 1x4. Each MoE
file, and the attention in-projection whose KV heads are replicated at 1x4,
is made again here from the checkpoint's values the way the loader makes
it (numpy transcriptions of the preprocess functions it hands
ttnn.as_tensor, cited below), turned into a ttnn.Tensor with ttnn's own mesh
mapper and written with ttnn.dump_tensor: ckpt's file must equal it byte
for byte. Loading the files onto a mock mesh is test_mesh_load.py's.

Upstream (tenstorrent/tt-metal, models/demos/blackhole/qwen36/tt/):
moe/weights.py@09c98eda (load_expert_weights, _stack_per_expert, _gate,
_up, _down: ShardTensorToMesh(dim=1)), moe/router.py@09c98eda,
moe/shared.py@19273ca2, mlp.py@db6dc348 (the shared expert's Qwen36MLP),
attention/tp.py@db6dc348 and tp_common.py (replicate_kv_weight,
prepare_attn_qkv_deint, shard_w), weight_mapping.py@1b43246c (FP8:
dequant_fp8_block per expert for a 3-D stack)."""

import json
import os
import subprocess

import numpy as np
import pytest
import ttnn

import ttlib

LAYOUTS = {"fused": [], "per-expert": ["-per-expert"]}
WEIGHTS = {"fp8": [], "bf16": ["-bf16"]}
MESHES = {2: "P300", 4: "P150x4"}


def read_checkpoint(d):
    """Every tensor of a checkpoint directory as (safetensors dtype, numpy
    array of the stored values: uint16 bits for BF16, uint8 codes for
    F8_E4M3, float32 for F32)."""
    idx = os.path.join(d, "model.safetensors.index.json")
    files = sorted(set(json.load(open(idx))["weight_map"].values())) if os.path.exists(idx) else ["model.safetensors"]
    out = {}
    for fn in files:
        raw = open(os.path.join(d, fn), "rb").read()
        n = int.from_bytes(raw[:8], "little")
        hdr = json.loads(raw[8:8 + n])
        for name, e in hdr.items():
            if name == "__metadata__":
                continue
            a, b = e["data_offsets"]
            dt = {"BF16": np.uint16, "F8_E4M3": np.uint8, "F32": np.float32}[e["dtype"]]
            out[name] = (e["dtype"], np.frombuffer(raw[8 + n + a:8 + n + b], dtype=dt).reshape(e["shape"]))
    return out


def e4m3_table():
    """float32 value of every F8_E4M3 code (OCP FP8, finite-only: 0x7F and
    0xFF are NaN)."""
    t = np.zeros(256, np.float32)
    for c in range(256):
        s, e, m = c >> 7, (c >> 3) & 0xF, c & 7
        v = (m / 8.0) * 2.0 ** -6 if e == 0 else (1 + m / 8.0) * 2.0 ** (e - 7)
        t[c] = np.float32(-v if s else v)
    t[0x7F] = t[0xFF] = np.nan
    return t


def round_bf16(a):
    """float32 -> bf16 nearest-even, as float32 (torch's .to(bfloat16))."""
    u = a.astype(np.float32).view(np.uint32)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def values(ts, name, block):
    """A tensor as the loader hands it over: bf16 (exact), or FP8 codes
    times their block scale (one block grid per expert of a 3-D stack),
    rounded to bf16 — tp_common.dequant_fp8_block multiplies in bf16 after
    casting both to bf16, which equals the float32 product rounded once for
    bf16 scales."""
    dt, a = ts[name]
    if dt == "BF16":
        return ttlib.bits_to_f32(a)
    assert dt == "F8_E4M3", (name, dt)
    sdt, s = ts[name + "_scale_inv"]
    s = ttlib.bits_to_f32(s) if sdt == "BF16" else s.astype(np.float32)
    codes = e4m3_table()[a]
    bm, bn = block
    if a.ndim == 2:
        sc = np.repeat(np.repeat(s, bm, axis=0), bn, axis=1)[:a.shape[0], :a.shape[1]]
    else:
        sc = np.repeat(np.repeat(s, bm, axis=1), bn, axis=2)[:, :a.shape[1], :a.shape[2]]
    return round_bf16(codes * sc)


def mapper(dim, n):
    """ShardTensorToMesh(mesh, dim) of a 1xN mesh as as_tensor uses it
    (MeshMapperConfig([Shard(dim)]) with the mesh shape overridden by the
    device count), built without a device; None for ReplicateTensorToMesh,
    which as_tensor unwraps to no mapper."""
    if dim is None:
        return None
    cfg = ttnn.MeshMapperConfig([ttnn.PlacementShard(dim)], ttnn.MeshShape([n]))
    return ttnn.create_mesh_mapper(ttnn.MeshShape(1, n), cfg)


def ttnn_file(a, dtype, dim, n, path):
    t = ttnn.Tensor(np.ascontiguousarray(a, dtype=np.float32), ttlib.DTYPES[dtype], None, ttnn.TILE_LAYOUT,
                    ttnn.DRAM_MEMORY_CONFIG, mesh_mapper=mapper(dim, n))
    ttnn.dump_tensor(path, t)
    return open(path, "rb").read()


def replicate_kv_weight(w, n_kv, tp, hd):
    """tp_common.replicate_kv_weight: device d gets KV head (d*n_kv)//tp."""
    if tp <= n_kv:
        return w
    chunks = w.reshape(n_kv, hd, -1)
    return np.concatenate([chunks[(d * n_kv) // tp] for d in range(tp)], axis=0).reshape(tp * hd, -1)


def prepare_attn_qkv_deint(q, k, v, nh_local, hd, kv_per, tp):
    """tp_common.prepare_attn_qkv_deint: per device [all q | k | v | all
    gate] rows (q_proj holds [q_h | gate_h] per head)."""
    parts = []
    for d in range(tp):
        base = d * nh_local * 2 * hd
        parts += [q[base + h * 2 * hd: base + h * 2 * hd + hd] for h in range(nh_local)]
        parts += [k[d * kv_per:(d + 1) * kv_per], v[d * kv_per:(d + 1) * kv_per]]
        parts += [q[base + h * 2 * hd + hd: base + (h + 1) * 2 * hd] for h in range(nh_local)]
    return np.concatenate(parts, axis=0)


def expected_files(ts, cfg, n):
    """{cache-relative path: (logical array, dtype, shard dim or None)} of
    the MoE files of every layer (and the MTP layer's, under mtp/) and of
    the full-attention in-projections, as the loader makes them."""
    tc = cfg["text_config"]
    block = cfg.get("quantization_config", {}).get("weight_block_size", [128, 128])
    E, I, H = tc["num_experts"], tc["moe_intermediate_size"], tc["hidden_size"]
    out = {}
    layers = [(f"layers.{i}", f"model.language_model.layers.{i}.") for i in range(tc["num_hidden_layers"])]
    first_full = tc["layer_types"].index("full_attention")
    layers.append((f"mtp/layers.{first_full}", "mtp.layers.0."))
    for li, (dirn, pre) in enumerate(layers):
        mlp = pre + "mlp."
        v = lambda name: values(ts, name, block)  # noqa: E731
        if mlp + "experts.gate_up_proj" in ts:
            gate_up, down = v(mlp + "experts.gate_up_proj"), v(mlp + "experts.down_proj")
        else:  # moe/weights.py _stack_per_expert
            gate_up = np.stack([np.concatenate([v(f"{mlp}experts.{e}.gate_proj.weight"), v(f"{mlp}experts.{e}.up_proj.weight")])
                                for e in range(E)])
            down = np.stack([v(f"{mlp}experts.{e}.down_proj.weight") for e in range(E)])
        ep = f"_ep_swiglu{n}"
        out[f"{dirn}/moe.experts.gate_proj{ep}_dtype_BFLOAT4_B_layout_TILE.tensorbin"] = (
            gate_up[:, :I, :].transpose(0, 2, 1)[None], "BFLOAT4_B", 1)  # _gate
        out[f"{dirn}/moe.experts.up_proj{ep}_dtype_BFLOAT4_B_layout_TILE.tensorbin"] = (
            gate_up[:, I:, :].transpose(0, 2, 1)[None], "BFLOAT4_B", 1)  # _up
        out[f"{dirn}/moe.experts.down_proj{ep}_dtype_BFLOAT8_B_layout_TILE.tensorbin"] = (
            down.transpose(0, 2, 1)[None], "BFLOAT8_B", 1)  # _down
        out[f"{dirn}/moe.router.weight_dtype_BFLOAT16_layout_TILE.tensorbin"] = (v(mlp + "gate.weight").T[None, None], "BFLOAT16", None)
        out[f"{dirn}/moe.shared_expert_gate.weight_dtype_BFLOAT16_layout_TILE.tensorbin"] = (
            v(mlp + "shared_expert_gate.weight").T[None, None], "BFLOAT16", None)
        se = mlp + "shared_expert."
        for p, dt, dim in (("gate_proj", "BFLOAT4_B", -1), ("up_proj", "BFLOAT4_B", -1), ("down_proj", "BFLOAT8_B", 0)):
            out[f"{dirn}/shared_expert/mlp.{p}.weight.tp_dtype_{dt}_layout_TILE.tensorbin"] = (v(se + p + ".weight").T, dt, dim)  # shard_w
        if dirn.startswith("mtp/") or tc["layer_types"][li] == "full_attention":
            sa = pre + "self_attn."
            nh, nkv, hd = tc["num_attention_heads"], tc["num_key_value_heads"], tc["head_dim"]
            k = replicate_kv_weight(v(sa + "k_proj.weight"), nkv, n, hd)
            vv = replicate_kv_weight(v(sa + "v_proj.weight"), nkv, n, hd)
            fused = prepare_attn_qkv_deint(v(sa + "q_proj.weight"), k, vv, nh // n, hd, max(1, nkv // n) * hd, n)
            out[f"{dirn}/tp/wqkv_fused_qkvg.il_dtype_BFLOAT8_B_layout_TILE.tensorbin"] = (fused.T, "BFLOAT8_B", -1)
    return out


@pytest.fixture(scope="module")
def fixtures(genfixture, tmp_path_factory):
    out = {}
    for lay, lflags in LAYOUTS.items():
        for w, wflags in WEIGHTS.items():
            d = str(tmp_path_factory.mktemp(f"moe-{lay}-{w}"))
            subprocess.run([genfixture, "-size", "moe", "-out", d, *lflags, *wflags], check=True)
            out[(lay, w)] = os.path.join(d, "base")
    return out


@pytest.mark.parametrize("n", list(MESHES))
@pytest.mark.parametrize("weights", list(WEIGHTS))
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_moe_files_equal_ttnn(layout, weights, n, fixtures, ckpt_bin, tmp_path):
    src = fixtures[(layout, weights)]
    out = str(tmp_path / "cache")
    p = subprocess.run([ckpt_bin, "cache", "build", src, "-o", out, "--mesh", f"1x{n}", "--fsync=false", "-q"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    folder = os.path.join(out, MESHES[n], f"tensor_cache_bfp8_mesh1x{n}")
    cfg = json.load(open(os.path.join(src, "config.json")))
    want = expected_files(read_checkpoint(src), cfg, n)
    tc = cfg["text_config"]
    # 4 layers and the MTP layer, each 8 MoE files, and 2 in-projections.
    assert len(want) == (tc["num_hidden_layers"] + 1) * 8 + 2
    if n == 4:
        assert tc["num_key_value_heads"] < n, "the fixture replicates KV heads at 1x4"
    for rel, (a, dtype, dim) in sorted(want.items()):
        got_path = os.path.join(folder, rel)
        assert os.path.isfile(got_path), f"ckpt wrote no {rel}"
        got = open(got_path, "rb").read()
        ref = ttnn_file(a, dtype, dim, n, str(tmp_path / "ref.tensorbin"))
        diff = ttlib.first_difference(got, ref)
        assert diff is None, f"{rel}: {diff}"
    # No dense MLP file on a MoE layer.
    for root, _, fs in os.walk(folder):
        if os.path.basename(root) != "shared_expert":
            assert not [f for f in fs if f.startswith("mlp.")], f"dense MLP files in {root}"


@pytest.mark.parametrize("n", list(MESHES))
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_moe_dramshard_files_equal_ttnn(layout, n, fixtures, ckpt_bin, tmp_path):
    """The .dramshard switches (proj_1d_decode=false, mlp_1d_decode=false):
    the KV-replicating in-projection wqkv_fused_qkvg.dramshard and the
    shared expert's mlp.{gate,up}_proj.weight.dramshard.tp, DRAM
    width-sharded as tp_common.create_dram_sharded_mem_config asks
    (ttlib.dram_sharded_memory_config; made float32 and converted on the
    host, the route test_tensorbin_bytes.py holds equal to the direct one)."""
    src = fixtures[(layout, "fp8")]
    out = str(tmp_path / "cache")
    p = subprocess.run([ckpt_bin, "cache", "build", src, "-o", out, "--mesh", f"1x{n}", "--fsync=false", "-q",
                        "--set", "proj_1d_decode=false", "--set", "mlp_1d_decode=false"], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    folder = os.path.join(out, MESHES[n], f"tensor_cache_bfp8_mesh1x{n}")
    cfg = json.load(open(os.path.join(src, "config.json")))
    checked = 0
    for rel, (a, dtype, dim) in sorted(expected_files(read_checkpoint(src), cfg, n).items()):
        if dim != -1:
            continue
        rel = rel.replace("wqkv_fused_qkvg.il", "wqkv_fused_qkvg.dramshard").replace(".weight.tp_", ".weight.dramshard.tp_")
        got = open(os.path.join(folder, rel), "rb").read()
        k, w = a.shape[0], a.shape[1] // n
        t = ttnn.Tensor(np.ascontiguousarray(a, dtype=np.float32), ttnn.float32, None, ttnn.TILE_LAYOUT,
                        ttlib.dram_sharded_memory_config(k, w), mesh_mapper=mapper(dim, n))
        path = str(tmp_path / "ref.tensorbin")
        ttnn.dump_tensor(path, ttnn.to_dtype(t, ttlib.DTYPES[dtype]))
        diff = ttlib.first_difference(got, open(path, "rb").read())
        assert diff is None, f"{rel}: {diff}"
        checked += 1
    assert checked == (cfg["text_config"]["num_hidden_layers"] + 1) * 2 + 2
