"""`ttnn.load_tensor` loads every file of a `ckpt cache build` of the tiny
Qwen3.5-style checkpoint (genfixture) to host, for both built-in profiles
with the default switches and with the DRAM width-sharded variants (main's
defaults include its fused-decode fp32 files): the loaded tensor must have
the plan's dtype, layout, shape, memory config and placement, and dumping
it again must give back ckpt's file byte for byte. test_mesh_load.py loads
the files of every switch setting onto mock mesh devices (the mock cluster
keeps no device memory, so the data is checked here)."""

import json
import os
import subprocess

import pytest
import ttnn

import ttlib

DRAMSHARD = ["--set", "proj_1d_decode=false", "--set", "mlp_1d_decode=false"]
MAIN = ["--profile", "qwen36@main-2026-10"]
VARIANTS = {
    "default": [],
    "dramshard": DRAMSHARD,
    "main": MAIN,
    "main-dramshard": MAIN + DRAMSHARD,
}


@pytest.fixture(scope="module")
def fixture_ckpt(genfixture, tmp_path_factory):
    out = tmp_path_factory.mktemp("fixture")
    subprocess.run([genfixture, "-size", "small", "-out", str(out)], check=True)
    return out / "base"


@pytest.fixture(scope="module", params=list(VARIANTS))
def built(request, ckpt_bin, fixture_ckpt, tmp_path_factory):
    out = tmp_path_factory.mktemp("cache-" + request.param)
    p = subprocess.run([ckpt_bin, "cache", "build", str(fixture_ckpt), "-o", str(out), "--fsync=false", "-q",
                        *VARIANTS[request.param]], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    folder = out / "P300" / "tensor_cache_bfp8_mesh1x2"
    with open(folder / "manifest.json") as f:
        manifest = json.load(f)
    return request.param, out, manifest


def _placements(tensor):
    topo = tensor.tensor_topology()
    return [str(p) for p in topo.placements()], list(topo.distribution_shape())


def test_every_file_loads(built, tmp_path):
    variant, root, manifest = built
    files = manifest["files"]
    assert len(files) > 50
    if variant.endswith("dramshard"):
        assert any(".dramshard" in f["path"] for f in files)
    if variant.startswith("main"):
        assert any("/neg_exp_A_fp32_dtype_FLOAT32_layout_TILE" in f["path"] for f in files)
        assert any("/dt_bias_fp32_dtype_FLOAT32_layout_TILE" in f["path"] for f in files)
    failures = []
    for f in files:
        path = os.path.join(root, f["path"])
        e = f["entry"]
        try:
            t = ttnn.load_tensor(path)
            assert t.dtype == ttlib.DTYPES[e["dtype"]], t.dtype
            assert t.layout == ttlib.LAYOUTS[e["layout"]], t.layout
            assert list(t.shape) == e["device_shape"], (list(t.shape), e["device_shape"])
            mc = t.memory_config()
            assert mc.buffer_type == ttnn.BufferType.DRAM
            if e["memory_config"]["kind"] == "dram_width_sharded":
                assert mc.memory_layout == ttnn.TensorMemoryLayout.WIDTH_SHARDED
                assert list(mc.shard_spec.shape) == e["memory_config"]["shard_shape"]
                assert list(mc.nd_shard_spec.shard_shape) == e["memory_config"]["shard_shape"]
            else:
                assert mc.memory_layout == ttnn.TensorMemoryLayout.INTERLEAVED
            placements, dist = _placements(t)
            if e["placement"] == "replicate":
                assert len(placements) == 1 and "Replicate" in placements[0], placements
            else:
                assert any("Shard" in p for p in placements), placements
                assert dist[-1] == 2, dist
            again = str(tmp_path / os.path.basename(path))
            ttnn.dump_tensor(again, t)
            with open(path, "rb") as a, open(again, "rb") as b:
                got, want = a.read(), b.read()
            diff = ttlib.first_difference(got, want)
            assert diff is None, "ttnn's dump of the loaded tensor differs: " + diff
        except Exception as ex:  # collect every failing file
            failures.append(f"{f['path']}: {type(ex).__name__}: {str(ex).splitlines()[0] if str(ex) else ''}")
    assert not failures, f"{len(failures)} of {len(files)} files:\n" + "\n".join(failures[:20])
