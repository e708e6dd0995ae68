"""Every kind of file the built-in profiles write, written once by `ckpt
cache build` (a one-rule-per-case profile over a checkpoint of BF16 and
F32 sources, so the bytes come from the build's own code) and once by the
real ttnn from the same values with ttnn's own mappers and memory configs:
the two files must be equal, whole file, byte for byte. The FLOAT32 TILE
cases include main's fused-decode files (dt_bias_fp32, neg_exp_A_fp32:
float32 values that are not bf16 values)."""

import os

import numpy as np
import pytest
import ttnn

import ttlib
from ttlib import CASES, Case

SEEDS = {c.name: i + 1 for i, c in enumerate(CASES)}


@pytest.fixture(scope="module")
def sources():
    return {c.name: ttlib.source_bits(c, SEEDS[c.name]) for c in CASES}


@pytest.fixture(scope="module")
def ckpt_cache(ckpt_bin, tmp_path_factory, sources):
    work = str(tmp_path_factory.mktemp("cases"))
    folder, p = ttlib.build_cases(ckpt_bin, work, CASES, sources)
    assert p.returncode == 0, p.stderr
    return folder


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_file_equals_ttnn(case, ckpt_cache, sources, tmp_path):
    got_path = os.path.join(ckpt_cache, case.file_name())
    assert os.path.isfile(got_path), f"ckpt wrote no {case.file_name()} (as_tensor's name for the case)"
    want_path = ttlib.write_ttnn(case, sources[case.name], str(tmp_path))
    with open(got_path, "rb") as f:
        got = f.read()
    with open(want_path, "rb") as f:
        want = f.read()
    diff = ttlib.first_difference(got, want)
    assert diff is None, f"{case.name}: {diff}"


@pytest.mark.parametrize("case", [c for c in CASES if c.memory == "dram_width_sharded"], ids=lambda c: c.name)
def test_sharded_conversion_route(case, sources, tmp_path):
    """The width-sharded files are made float32 first and converted on the
    host (ttnn's numpy import cannot convert under a sharded config): their
    data must equal ttnn's direct conversion of the same tensor."""
    sharded = ttlib.write_ttnn(case, sources[case.name], str(tmp_path))
    il = Case(**{**case.__dict__, "name": case.name + ".il", "memory": "dram_interleaved"})
    direct = ttlib.write_ttnn(il, sources[case.name], str(tmp_path))
    with open(sharded, "rb") as f:
        a = f.read()
    with open(direct, "rb") as f:
        b = f.read()
    assert a[8 + ttlib.header_size(a):] == b[8 + ttlib.header_size(b):]
    assert ttlib.header_size(a) > ttlib.header_size(b), "the sharded header records the shard specs"


def test_width_sharded_tile_height(ckpt_bin, tmp_path):
    """ttnn refuses a DRAM width-sharded TILE tensor whose per-device height
    is not a multiple of 32; ckpt's plan refuses it too (exit 1, naming the
    target) instead of writing a file the stack could not have written."""
    case = Case("odd_height", (512, 40), "BFLOAT8_B", "TILE", "shard", dim=-1, split="rows", transpose=True,
                memory="dram_width_sharded")
    bits = ttlib.bf16_bits(case.src, 99)
    with pytest.raises(RuntimeError, match="must be tile"):
        ttlib.ttnn_tensor(case, bits)
    folder, p = ttlib.build_cases(ckpt_bin, str(tmp_path), [case], {case.name: bits})
    assert p.returncode == 1, p.stdout + p.stderr
    assert ("problem (config): target odd_height: DRAM width sharding of a TILE tensor needs a per-device height "
            "that is a multiple of 32") in p.stdout
    assert "has 1 problem(s)" in p.stdout + p.stderr
    assert not os.path.exists(os.path.join(folder, case.file_name()))


def test_names_are_as_tensor_names():
    """ckpt names files with the dtype and layout enum names ttnn.as_tensor
    puts in its cache file names."""
    for name, dt in ttlib.DTYPES.items():
        assert dt.name == name
    for name, lay in ttlib.LAYOUTS.items():
        assert lay.name == name
