"""NaN with --allow-nonfinite. BF16 sources carry NaNs of every kind
(0xFFFF, 0x7FC0, a negative one with payload, a signalling one); their
bits only go through .to(bfloat16), so ckpt keeps them under both --nan
styles. Block-float files: ttnn packs the same values (as float32, exact)
into the same bytes, NaN face rows included. BFLOAT16 files: ttnn's own
float32 -> bf16 conversion turns every NaN into 0x7FC0, which the serving
stack never asks of it (it hands ttnn a bf16 torch tensor); the files must
differ exactly there, ckpt holding the source's bits."""

import os
import struct

import numpy as np
import pytest

import ttlib
from ttlib import Case

CASES = [
    Case("nan_bfp8", (64, 96), "BFLOAT8_B", "TILE", "shard", dim=-1, split="rows", transpose=True),
    Case("nan_bfp4", (64, 96), "BFLOAT4_B", "TILE", "shard", dim=0, split="cols", transpose=True),
    Case("nan_bfp8_dramshard", (512, 64), "BFLOAT8_B", "TILE", "shard", dim=-1, split="rows", transpose=True,
         memory="dram_width_sharded"),
    Case("nan_bf16", (40, 72), "BFLOAT16", "TILE", "shard", dim=-1, split="cols"),
    Case("nan_rm", (1, 256), "BFLOAT16", "ROW_MAJOR", "replicate", reshape=["1", "1", "cols/32", "32"], shape=(1, 1, 8, 32)),
]
NANS = np.array([0xFFFF, 0x7FC0, 0xFFC1, 0x7F81], dtype=np.uint16)


@pytest.fixture(scope="module")
def sources():
    out = {}
    for i, c in enumerate(CASES):
        b = ttlib.bf16_bits(c.src, 50 + i)
        flat = b.reshape(-1)
        flat[::37] = NANS[np.arange(len(flat[::37])) % len(NANS)]
        out[c.name] = b
    return out


@pytest.mark.parametrize("style", ["vector", "scalar"])
def test_nan_files(style, ckpt_bin, sources, tmp_path):
    folder, p = ttlib.build_cases(ckpt_bin, str(tmp_path), CASES, sources, extra=["--allow-nonfinite", "--nan", style])
    assert p.returncode == 0, p.stdout + p.stderr
    for c in CASES:
        with open(os.path.join(folder, c.file_name()), "rb") as f:
            got = f.read()
        with open(ttlib.write_ttnn(c, sources[c.name], str(tmp_path)), "rb") as f:
            want = f.read()
        if c.dtype != "BFLOAT16":
            assert ttlib.first_difference(got, want) is None, f"{c.name}: {ttlib.first_difference(got, want)}"
            continue
        # Same header; data equal except at the NaNs: ttnn 0x7FC0, ckpt the source's bits.
        off = 8 + ttlib.header_size(want)
        assert got[:off] == want[:off], c.name
        g = np.frombuffer(got[off:], dtype=np.uint16)
        w = np.frombuffer(want[off:], dtype=np.uint16)
        nan = (w & 0x7FFF) > 0x7F80
        assert nan.sum() > 0
        assert (g[~nan] == w[~nan]).all(), c.name
        assert (w[nan] == 0x7FC0).all()
        assert sorted(set(g[nan].tolist())) == sorted(NANS.tolist()), f"{c.name}: ckpt keeps every source NaN's bits"
