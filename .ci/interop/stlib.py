"""Helpers shared by the interop tests: dtype tables, writing files through
the reference implementation (the Rust core of the `safetensors` package),
reading them back, and running the ckpt binary."""

import json
import os
import struct

import ml_dtypes
import numpy as np
import safetensors
from safetensors import TensorSpec, deserialize, serialize, serialize_file

from ckptrun import Ckpt  # noqa: F401  (the runner, shared with the ctools and transformers legs)

# Every safetensors dtype and its element size in bits (the format's table).
BITS = {
    "BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "U8": 8, "I8": 8,
    "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32,
    "C64": 64, "F64": 64, "I64": 64, "U64": 64,
}

# numpy / ml_dtypes types of the dtypes that have one.
NP = {
    "BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "I16": np.int16, "U16": np.uint16,
    "F16": np.float16, "BF16": ml_dtypes.bfloat16, "I32": np.int32, "U32": np.uint32,
    "F32": np.float32, "C64": np.complex64, "F64": np.float64, "I64": np.int64, "U64": np.uint64,
    "F8_E4M3": ml_dtypes.float8_e4m3fn, "F8_E5M2": ml_dtypes.float8_e5m2,
    "F8_E8M0": ml_dtypes.float8_e8m0fnu, "F8_E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
    "F8_E5M2FNUZ": ml_dtypes.float8_e5m2fnuz,
}

# The dtype names the reference writer's TensorSpec takes (F4 is written as
# packed pairs, "float4_e2m1fn_x2"). F6_E2M3 and F6_E3M2 have none: the
# Python API of safetensors cannot write them.
SPEC = {
    "BOOL": "bool", "U8": "uint8", "I8": "int8", "I16": "int16", "U16": "uint16",
    "F16": "float16", "BF16": "bfloat16", "I32": "int32", "U32": "uint32", "F32": "float32",
    "C64": "complex64", "F64": "float64", "I64": "int64", "U64": "uint64",
    "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2", "F8_E8M0": "float8_e8m0fnu",
    "F8_E4M3FNUZ": "float8_e4m3fnuz", "F8_E5M2FNUZ": "float8_e5m2fnuz", "F4": "float4_e2m1fn_x2",
}

# The dtypes ckpt decodes as floats (numfmt.DType.IsFloat).
CKPT_FLOAT = ("BF16", "F16", "F32", "F64", "F8_E4M3", "F8_E5M2", "F8_E8M0")


def nbytes(dtype, shape):
    n = 1
    for d in shape:
        n *= d
    assert n * BITS[dtype] % 8 == 0, (dtype, shape)
    return n * BITS[dtype] // 8


def _specs(tensors, keep):
    """TensorSpecs for {name: (dtype, shape, bytes)}; keep holds the buffers."""
    specs = {}
    for name, (dtype, shape, data) in tensors.items():
        buf = np.frombuffer(bytes(data), dtype=np.uint8).copy()
        keep.append(buf)
        assert buf.nbytes == nbytes(dtype, shape), (name, dtype, shape, buf.nbytes)
        shape = list(shape)
        if dtype == "F4":  # the constructor doubles the last (packed) dimension
            assert shape and shape[-1] % 2 == 0
            shape[-1] //= 2
        specs[name] = TensorSpec(dtype=SPEC[dtype], shape=shape, data_ptr=buf.ctypes.data, data_len=buf.nbytes)
    return specs


def ref_serialize(tensors, metadata=None):
    """The bytes the reference writer produces for {name: (dtype, shape, bytes)}."""
    keep = []
    return bytes(serialize(_specs(tensors, keep), metadata=metadata))


def ref_write(path, tensors, metadata=None):
    """Writes {name: (dtype, shape, bytes)} with the reference writer."""
    keep = []
    serialize_file(_specs(tensors, keep), str(path), metadata=metadata)


def ref_parse(raw):
    """{name: (dtype, shape, bytes)} of a file's bytes as the reference reader sees them."""
    return {name: (v["dtype"], list(v["shape"]), bytes(v["data"])) for name, v in deserialize(raw)}


def ref_read(path):
    """ref_parse of a file."""
    with open(path, "rb") as f:
        return ref_parse(f.read())


def ref_read_dir(d):
    """ref_read of every .safetensors file of a checkpoint directory, merged."""
    out = {}
    for p in sorted(d.glob("*.safetensors")):
        out.update(ref_read(p))
    return out


def handmade_write(path, tensors, metadata=None):
    """Writes a file for dtypes the reference writer cannot take (F6_*),
    laid out as it would: dtype alignment descending, then name; header
    padded with spaces to 8 bytes."""
    order = list(BITS)
    names = sorted(tensors, key=lambda n: (-order.index(tensors[n][0]), n))
    hdr, off, body = {}, 0, b""
    if metadata is not None:
        hdr["__metadata__"] = metadata
    for n in names:
        dtype, shape, data = tensors[n]
        assert len(data) == nbytes(dtype, shape)
        hdr[n] = {"dtype": dtype, "shape": list(shape), "data_offsets": [off, off + len(data)]}
        off += len(data)
        body += data
    h = json.dumps(hdr, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + body)


def _split(raw):
    n = struct.unpack("<Q", raw[:8])[0]
    h = raw[8:8 + n]
    text = h.rstrip(b" ")
    pairs = json.loads(text, object_pairs_hook=lambda kv: kv)
    pairs = [(k, sorted(v) if k == "__metadata__" else v) for k, v in pairs]
    return n, len(h) - len(text), pairs, raw[8 + n:]


def assert_same_layout(got, want, what):
    """got and want are the same safetensors file byte for byte, except for
    the order of the __metadata__ keys (the reference writer keeps them in a
    hash map: their order changes from run to run)."""
    if got == want:
        return
    g, w = _split(got), _split(want)
    assert g[0] == w[0], f"{what}: header length {g[0]}, want {w[0]}"
    assert g[1] == w[1], f"{what}: {g[1]} padding bytes, want {w[1]}"
    assert g[2] == w[2], f"{what}: headers differ (entries in file order):\n{g[2]}\n{w[2]}"
    assert g[3] == w[3], f"{what}: data differs"
    assert len(got) == len(want)


def header(path):
    """(header length, parsed header) of a safetensors file."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return n, json.loads(f.read(n))


def values(dtype, data, shape=None):
    """A numpy view of raw little-endian data."""
    a = np.frombuffer(data, dtype=NP[dtype])
    return a if shape is None else a.reshape(shape)


def f32_bits(a):
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


def assert_same_floats(got, want, what):
    """Bitwise equality of two float arrays, except that any NaN matches any
    NaN of the same sign (payloads are not compared)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    gn, wn = np.isnan(got.astype(np.float32)), np.isnan(want.astype(np.float32))
    width = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[got.dtype.itemsize]
    gb, wb = got.view(width), want.view(width)
    sign = width(1) << width(8 * got.dtype.itemsize - 1)
    bad = np.flatnonzero(((gb != wb) & ~(gn & wn)) | (gn != wn) | ((gb & sign) != (wb & sign)))
    if bad.size:
        i = bad[:8]
        raise AssertionError(
            f"{what}: {bad.size} of {got.size} values differ; first at {i.tolist()}: "
            f"got {[hex(int(x)) for x in gb.ravel()[i]]}, want {[hex(int(x)) for x in wb.ravel()[i]]}")


def versions():
    import huggingface_hub
    return {"safetensors": safetensors.__version__, "numpy": np.__version__,
            "ml_dtypes": ml_dtypes.__version__, "huggingface_hub": huggingface_hub.__version__}
