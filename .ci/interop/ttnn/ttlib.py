"""Helpers of the ttnn leg: the tensor cases, a small safetensors writer,
the mapping-profile rules that make `ckpt cache build` write each case, and
the same tensor written by the real ttnn (ttnn.Tensor + ttnn.dump_tensor,
the calls ttnn.as_tensor makes to fill its cache)."""

import json
import os
import struct
import subprocess
from dataclasses import dataclass, field

import numpy as np

# ttnn reads the cluster descriptor when it first converts a tensor; run.sh
# sets it, this is the default for a plain `pytest` run.
HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("TT_METAL_MOCK_CLUSTER_DESC_PATH", os.path.join(HERE, "p300-mock-cluster.yaml"))
os.environ.setdefault("TT_LOGGER_LEVEL", "error")

import ttnn  # noqa: E402

MESH = (1, 2)
DTYPES = {"BFLOAT16": ttnn.bfloat16, "BFLOAT8_B": ttnn.bfloat8_b, "BFLOAT4_B": ttnn.bfloat4_b, "FLOAT32": ttnn.float32}
LAYOUTS = {"TILE": ttnn.TILE_LAYOUT, "ROW_MAJOR": ttnn.ROW_MAJOR_LAYOUT}


@dataclass
class Case:
    """One cache file: a BF16 source matrix `src` (rows x cols), optionally
    transposed, reshaped to `shape`, placed over the 1x2 mesh and stored as
    dtype / layout / memory. `rule` is the placement and reshape of the
    mapping-profile rule (ckpt's side); `mapper` and `dim` say which ttnn
    mapper the serving code would use (ttnn's side)."""

    name: str
    src: tuple
    dtype: str
    layout: str
    mapper: str  # "replicate", "shard" (ShardTensorToMesh), "shard2d" (ShardTensor2dMesh dims=(None, dim))
    dim: int = 0
    split: str = ""  # source axis the sharded dim is ("rows" / "cols")
    transpose: bool = False
    reshape: list = field(default_factory=list)  # rule reshape expressions
    shape: tuple = ()  # the logical (full) tensor shape ttnn gets
    memory: str = "dram_interleaved"
    note: str = ""
    # The source's dtype in the checkpoint ("BF16", or "F32": full float32
    # significands), whether the rule rounds to bf16 first (shard_w's
    # .to(bfloat16); the fused-decode fp32 files do not), and "neg_exp" for
    # a rule that takes -exp of the values in float32 (neg_exp_A_fp32).
    src_dtype: str = "BF16"
    round: bool = True
    values: str = ""

    def target_shape(self):
        if self.shape:
            return self.shape
        return (self.src[1], self.src[0]) if self.transpose else self.src

    def device_shape(self):
        s = list(self.target_shape())
        if self.mapper != "replicate":
            s[self.dim] //= MESH[1]
        return s

    def file_name(self, dtype=None, layout=None):
        # ttnn.as_tensor's name: f"{cache_file_name}_dtype_{dtype.name}_layout_{layout.name}.tensorbin"
        dt, lay = dtype or DTYPES[self.dtype], layout or LAYOUTS[self.layout]
        return f"{self.name}_dtype_{dt.name}_layout_{lay.name}.tensorbin"

    def rule(self):
        steps = [{"op": "round", "dtype": "BF16"}] if self.round else []
        if self.values == "neg_exp":
            steps.append({"op": "neg_exp"})
        if self.transpose:
            steps.append({"op": "transpose"})
        if self.reshape:
            steps.append({"op": "reshape", "shape": self.reshape})
        if self.mapper == "replicate":
            pl = {"kind": "replicate"}
        else:
            pl = {"kind": "shard", "dim": self.dim, "split": self.split}
            if self.mapper == "shard2d":
                pl["mesh_axes"] = ["replicate", "shard"]
        return {"id": self.name, "target": self.name, "sources": ["src." + self.name], "transform": steps,
                "placement": pl, "dtype": self.dtype, "layout": self.layout, "memory": self.memory, "note": self.note}


# Every dtype, layout, placement, memory config and shape class of the
# built-in profiles' files (ckpt map --list-profiles; the 27B's target lists
# in mapping/testdata/*.targets, and the .dramshard variants of --set
# proj_1d_decode=false / mlp_1d_decode=false), at the 27B's own per-device
# widths where they are odd, on fewer rows.
CASES = [
    # GDN dt_bias / A_log: [1, 1, 48] -> [1, 1, 24] per device (partial tile, 3-D)
    Case("dt_bias", (48,), "BFLOAT16", "TILE", "shard", dim=-1, split="rows", reshape=["1", "1", "rows"], shape=(1, 1, 48)),
    # GDN tap0..3: [1, 1, 10240] -> [1, 1, 5120]
    Case("tap", (10240,), "BFLOAT16", "TILE", "shard", dim=-1, split="rows", reshape=["1", "1", "rows"], shape=(1, 1, 10240)),
    # GDN norm_w: replicated [1, 1, 128]
    Case("norm_w", (128,), "BFLOAT16", "TILE", "replicate", reshape=["1", "1", "rows"], shape=(1, 1, 128)),
    # layer norms: [1, 1, hidden/32, 32] ROW_MAJOR, replicated and [Replicate, Shard(2)]
    Case("input_layernorm", (5120,), "BFLOAT16", "ROW_MAJOR", "replicate", reshape=["1", "1", "rows/32", "32"], shape=(1, 1, 160, 32)),
    Case("input_layernorm_distributed", (5120,), "BFLOAT16", "ROW_MAJOR", "shard2d", dim=2, split="rows",
         reshape=["1", "1", "rows/32", "32"], shape=(1, 1, 160, 32)),
    # tok_embeddings: [1, 1, vocab, hidden] ROW_MAJOR, [Replicate, Shard(3)] (vocab 100 here: not a tile multiple)
    Case("tok_embeddings", (100, 5120), "BFLOAT16", "ROW_MAJOR", "shard2d", dim=3, split="cols",
         reshape=["1", "1", "rows", "cols"], shape=(1, 1, 100, 5120)),
    # qkvzab.il: BFLOAT8_B column-parallel, per device 8240 wide (257.5 tiles)
    Case("qkvzab.il", (16480, 64), "BFLOAT8_B", "TILE", "shard", dim=-1, split="rows", transpose=True),
    # qkvzab.dramshard: the same, DRAM width-sharded, shard [64, roundup(8240, 256)/8]
    Case("qkvzab.dramshard", (16480, 64), "BFLOAT8_B", "TILE", "shard", dim=-1, split="rows", transpose=True,
         memory="dram_width_sharded"),
    # wqkv_fused_qkvg .il / .dramshard: per device 7168 wide
    Case("wqkv_fused_qkvg.dramshard", (14336, 32), "BFLOAT8_B", "TILE", "shard", dim=-1, split="rows", transpose=True,
         memory="dram_width_sharded"),
    # out / wo / down_proj: BFLOAT8_B row-parallel (dim 0)
    Case("down_proj", (64, 256), "BFLOAT8_B", "TILE", "shard", dim=0, split="cols", transpose=True),
    # gate / up / swiglu: BFLOAT4_B column-parallel, per device 8704 (interleaved and DRAM width-sharded)
    Case("gate_proj.tp", (17408, 32), "BFLOAT4_B", "TILE", "shard", dim=-1, split="rows", transpose=True),
    Case("gate_proj.dramshard.tp", (17408, 32), "BFLOAT4_B", "TILE", "shard", dim=-1, split="rows", transpose=True,
         memory="dram_width_sharded"),
    # mtp/fc ([2H, H]) and main's out.colpar ([6144, 5120]): column-sharded -> [.., 2560]
    Case("mtp.fc", (5120, 64), "BFLOAT8_B", "TILE", "shard", dim=-1, split="rows", transpose=True),
    # partial tiles in both dims, BFLOAT4_B row-parallel: per device [40, 24]
    Case("partial", (24, 80), "BFLOAT4_B", "TILE", "shard", dim=0, split="cols", transpose=True),
    # a 4-D TILE tensor with outer dims > 1 (TILE pads each [40, 24] slice)
    Case("outer", (6, 960), "BFLOAT16", "TILE", "replicate", reshape=["2", "3", "40", "24"], shape=(2, 3, 40, 24)),
    # FLOAT32 TILE of bf16 values
    Case("fp32", (96,), "FLOAT32", "TILE", "shard", dim=-1, split="rows", reshape=["1", "1", "rows"], shape=(1, 1, 96)),
    # main's fused GDN decode files (gdn/tp.py@db6dc348 _shard_small_fp32): [1, 1, 48] -> [1, 1, 24] FLOAT32 TILE per
    # device, no bf16 rounding: dt_bias_fp32 of an F32 source (every significand bit in use) and neg_exp_A_fp32,
    # -exp(A_log) in float32, of a BF16 and of an F32 A_log
    Case("dt_bias_fp32", (48,), "FLOAT32", "TILE", "shard", dim=-1, split="rows", reshape=["1", "1", "rows"], shape=(1, 1, 48),
         src_dtype="F32", round=False),
    Case("neg_exp_A_fp32", (48,), "FLOAT32", "TILE", "shard", dim=-1, split="rows", reshape=["1", "1", "rows"], shape=(1, 1, 48),
         round=False, values="neg_exp"),
    Case("neg_exp_A_fp32.f32", (48,), "FLOAT32", "TILE", "shard", dim=-1, split="rows", reshape=["1", "1", "rows"], shape=(1, 1, 48),
         src_dtype="F32", round=False, values="neg_exp"),
]


def bf16_bits(shape, seed):
    """Random finite bf16 bit patterns of every magnitude (zeros, subnormals
    and the largest exponents included, so that the BFP face rows span
    shared exponents), as uint16."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 1 << 16, size=shape, dtype=np.uint32)
    exp = (bits >> 7) & 0xFF
    bits = np.where(exp == 0xFF, bits & ~np.uint32(1 << 7), bits)  # no Inf / NaN
    # a band of values around 1 and some exact zeros: typical weights
    typical = (rng.standard_normal(size=shape).astype(np.float32).view(np.uint32) >> 16)
    pick = rng.integers(0, 4, size=shape)
    bits = np.where(pick == 0, bits, typical)
    bits = np.where(rng.integers(0, 50, size=shape) == 0, 0, bits)
    return bits.astype(np.uint16)


def bits_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32_bits(shape, seed):
    """Random float32 values as uint32 bits, every significand bit in use,
    in A_log's range (-8, 4): -exp of them is finite and normal."""
    rng = np.random.default_rng(seed)
    return rng.uniform(-8, 4, size=shape).astype(np.float32).view(np.uint32)


def source_bits(case, seed):
    """The case's source values as stored: bf16 bits (uint16) or float32
    bits (uint32)."""
    return f32_bits(case.src, seed) if case.src_dtype == "F32" else bf16_bits(case.src, seed)


def source_f32(bits):
    """The float32 values of source bits (bf16 widened exactly, or float32)."""
    return bits.view(np.float32) if bits.dtype == np.uint32 else bits_to_f32(bits)


def neg_exp(a):
    """-exp(a) for float32 a as ckpt computes it: in float64, rounded to
    float32. (torch's float32 exp differs from this in the last bit for
    about 1 % of inputs; this is ckpt's formula, so the test holds the
    writer, not the formula, against ttnn.)"""
    with np.errstate(over="ignore"):  # a large A_log gives -inf, as in ckpt
        return (-np.exp(a.astype(np.float64))).astype(np.float32)


def write_safetensors(path, tensors):
    """tensors: {name: (dtype, array)}; a plain little-endian safetensors file."""
    hdr, blobs, off = {}, [], 0
    for name, (dt, a) in tensors.items():
        b = np.ascontiguousarray(a).tobytes()
        hdr[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def build_cases(ckpt_bin, work, cases, sources, extra=()):
    """Writes one checkpoint holding every case's source, a profile with one
    rule per case, and runs `ckpt cache build` on it. Returns the cache
    folder and the completed process."""
    src = os.path.join(work, "src")
    os.makedirs(src, exist_ok=True)
    write_safetensors(os.path.join(src, "model.safetensors"),
                      {"src." + c.name: (c.src_dtype, sources[c.name]) for c in cases})
    with open(os.path.join(src, "config.json"), "w") as f:
        json.dump({}, f)
    rules = os.path.join(work, "rules.json")
    with open(rules, "w") as f:
        json.dump({"name": "ttnn-interop", "device": "P300", "tag": "bfp8", "rules": [c.rule() for c in cases]}, f)
    out = os.path.join(work, "cache")
    p = subprocess.run([ckpt_bin, "cache", "build", src, "-o", out, "--rules", rules, "--mesh", "1x2",
                        "--fsync=false", "-q", *extra], capture_output=True, text=True)
    return os.path.join(out, "P300", "tensor_cache_bfp8_mesh1x2"), p


def dram_sharded_memory_config(k, n):
    """The WIDTH_SHARDED DRAM config of a per-device [k, n] weight as the
    qwen36 model code asks for it (tp_common.create_dram_sharded_mem_config):
    the 8 DRAM banks (cores (0,0)-(7,0)), shard [k, roundup(n, 256) / 8],
    row-major."""
    banks = 8
    w = (n + 32 * banks - 1) // (32 * banks) * (32 * banks) // banks
    grid = ttnn.CoreRangeSet({ttnn.CoreRange(ttnn.CoreCoord(0, 0), ttnn.CoreCoord(banks - 1, 0))})
    return ttnn.MemoryConfig(ttnn.TensorMemoryLayout.WIDTH_SHARDED, ttnn.BufferType.DRAM,
                             ttnn.ShardSpec(grid, [k, w], ttnn.ShardOrientation.ROW_MAJOR))


def mesh_mapper(case):
    """The mapper the serving code passes, built without a device:
    ReplicateTensorToMesh is unwrapped to no mapper by as_tensor;
    ShardTensorToMesh(mesh, d) is MeshMapperConfig([Shard(d)]) with the
    mesh shape overridden by the device count; ShardTensor2dMesh(dims=(None,
    d)) is [Replicate, Shard(d)] over the 1x2 mesh."""
    if case.mapper == "replicate":
        return None
    mesh = ttnn.MeshShape(*MESH)
    if case.mapper == "shard":
        cfg = ttnn.MeshMapperConfig([ttnn.PlacementShard(case.dim)], ttnn.MeshShape([MESH[0] * MESH[1]]))
    else:
        cfg = ttnn.MeshMapperConfig([ttnn.PlacementReplicate(), ttnn.PlacementShard(case.dim)], mesh)
    return ttnn.create_mesh_mapper(mesh, cfg)


def ttnn_input(case, bits):
    """The logical tensor the serving code hands ttnn: the source in
    float32 (bf16 widened exactly), -exp of it for a neg_exp case,
    transposed and reshaped like the rule."""
    a = source_f32(bits)
    if case.values == "neg_exp":
        a = neg_exp(a)
    if a.ndim == 1:
        a = a.reshape(a.shape[0], 1)
    if case.transpose:
        a = a.T
    return np.ascontiguousarray(a.reshape(case.target_shape()))


def ttnn_tensor(case, bits):
    """The host tensor ttnn.as_tensor(..., device=None) caches for the case."""
    a = ttnn_input(case, bits)
    dt, lay, mapper = DTYPES[case.dtype], LAYOUTS[case.layout], mesh_mapper(case)
    if case.memory == "dram_width_sharded":
        k, n = case.device_shape()
        mc = dram_sharded_memory_config(k, n)
        if dt == ttnn.float32:
            return ttnn.Tensor(a, dt, None, lay, mc, mesh_mapper=mapper)
        # ttnn's numpy import cannot convert to a block-float dtype under a
        # sharded memory config (it goes through a torch bf16 tensor there):
        # build the float32 tensor and convert it on the host. The tests
        # check that this gives the same data as the direct conversion.
        return ttnn.to_dtype(ttnn.Tensor(a, ttnn.float32, None, lay, mc, mesh_mapper=mapper), dt)
    return ttnn.Tensor(a, dt, None, lay, ttnn.DRAM_MEMORY_CONFIG, mesh_mapper=mapper)


def write_ttnn(case, bits, directory):
    path = os.path.join(directory, case.file_name())
    ttnn.dump_tensor(path, ttnn_tensor(case, bits))
    return path


def header_size(b):
    return struct.unpack_from("<Q", b, 0)[0]


def first_difference(got, want):
    """None when equal, else where the first difference is: header (byte
    offset) or data (shard-relative tile index), and the sizes."""
    if got == want:
        return None
    n = min(len(got), len(want))
    i = next((i for i in range(n) if got[i] != want[i]), n)
    hs = 8 + header_size(want) if len(want) >= 8 else 0
    where = f"header byte {i}" if i < hs else f"data byte {i - hs}"
    return f"{where} differs (sizes {len(got)} / {len(want)}, ckpt header {8 + header_size(got) if len(got) >= 8 else '?'} / ttnn {hs})"
