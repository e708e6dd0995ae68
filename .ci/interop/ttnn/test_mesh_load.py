"""Every file of `ckpt cache build`, loaded onto a mock mesh device with
`ttnn.load_tensor(path, device=mesh)`: the tiny Qwen3.5-style checkpoint
(genfixture) built with both built-in profiles under every setting of their
switches (the defaults, the `.dramshard` ones, main's fused-decode files
and each combination; `ckpt map --list-profiles` names the switches), on a
1x2 mesh (P300, p300-mock-cluster.yaml) and on a 1x4 mesh (P150x4,
p150x4-mock-cluster.yaml; the small4 fixture, whose heads divide by 4),
and the tiny Qwen3.5-MoE fixture (genfixture -size moe: expert-parallel
experts, router, shared expert; its 2 KV heads replicated at 1x4) on both;
with each fixture's vision tower folder (<device>/tensor_cache_bfp8: the
replicated variants of small at 1x2, the fractured ones of small4 at
1x4).
mesh_loader.py loads them in a process of its own and checks each device
tensor against its manifest entry (storage on every device, dtype, layout,
per-device shape, memory config, placement). Opening a mesh needs the
compiler stand-in of sfpi_standin.py (run.sh installs it under a temporary
TT_METAL_RUNTIME_ROOT; run by hand, the fixture does) and writes
generated/fabric/*.yaml into the current directory: the loader runs in a
temporary one."""

import glob
import itertools
import json
import os
import subprocess
import sys

import pytest

import sfpi_standin

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
MESHES = {
    "1x2": (("small", "moe"), "P300", "p300-mock-cluster.yaml"),
    "1x4": (("small4", "moe"), "P150x4", "p150x4-mock-cluster.yaml"),
}


@pytest.fixture(scope="session")
def runtime_root(tmp_path_factory):
    if os.environ.get("TT_METAL_RUNTIME_ROOT"):
        return os.environ["TT_METAL_RUNTIME_ROOT"]
    import importlib.util
    root = str(tmp_path_factory.mktemp("tt-runtime") / "root")
    sfpi_standin.make_runtime_root(os.path.dirname(importlib.util.find_spec("ttnn").origin), root)
    return root


@pytest.fixture(scope="session")
def switch_settings(ckpt_bin):
    """Every setting of every built-in profile's switches: (profile,
    [--set NAME=VALUE ...]) for each combination of the variables that can
    be overridden."""
    p = subprocess.run([ckpt_bin, "map", "--list-profiles", "--format", "json"], capture_output=True, text=True, check=True)
    out = []
    for prof in json.loads(p.stdout)["profiles"]:
        names = [v["name"] for v in prof["variables"] if not v.get("unsupported")]
        for values in itertools.product([True, False], repeat=len(names)):
            out.append((prof["name"], [a for n, v in zip(names, values) for a in ("--set", f"{n}={str(v).lower()}")]))
    return out


def build_all(ckpt_bin, genfixture, work, size, mesh, device, settings):
    src = os.path.join(work, "fixture-" + size)
    subprocess.run([genfixture, "-size", size, "-out", src], check=True)
    folders = []
    for i, (profile, sets) in enumerate(settings):
        out = os.path.join(work, f"cache-{size}-{i}")
        p = subprocess.run([ckpt_bin, "cache", "build", os.path.join(src, "base"), "-o", out, "--profile", profile,
                            "--mesh", mesh, "--fsync=false", "-q", *sets], capture_output=True, text=True)
        assert p.returncode == 0, f"{profile} {sets}: {p.stdout}{p.stderr}"
        folders.append(os.path.join(out, device, f"tensor_cache_bfp8_mesh{mesh}"))
    # The vision tower's folder (no mesh suffix; the same files under every
    # setting of the text switches): the first build's, for a fixture that
    # has a tower.
    vision = os.path.join(work, f"cache-{size}-0", device, "tensor_cache_bfp8")
    return folders, [vision] if os.path.isdir(vision) else []


@pytest.mark.parametrize("mesh", list(MESHES))
def test_every_file_loads_onto_mesh(mesh, ckpt_bin, genfixture, runtime_root, switch_settings, tmp_path):
    sizes, device, desc = MESHES[mesh]
    folders, settings = [], []
    visions = 0
    for size in sizes:
        text, vision = build_all(ckpt_bin, genfixture, str(tmp_path), size, mesh, device, switch_settings)
        folders += text + vision
        settings += [(f"{size} {profile}", sets) for profile, sets in switch_settings] + [(f"{size} vision", [])] * len(vision)
        visions += len(vision)
    assert visions >= 1, "a fixture with a vision tower"
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    report = str(tmp_path / "report.json")
    env = {**os.environ, "TT_METAL_RUNTIME_ROOT": runtime_root, "TT_METAL_MOCK_CLUSTER_DESC_PATH": os.path.join(HERE, desc),
           "TT_LOGGER_LEVEL": "error", "PYTHONPATH": HERE}
    p = subprocess.run([sys.executable, os.path.join(HERE, "mesh_loader.py"), report, mesh, *folders],
                       cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    with open(report) as f:
        doc = json.load(f)
    assert doc["devices"] == int(mesh.split("x")[1])
    failures, names = [], set()
    assert len(doc["folders"]) == len(settings)
    for (profile, sets), done in zip(settings, doc["folders"]):
        with open(os.path.join(done["folder"], "manifest.json")) as f:
            planned = len(json.load(f)["files"])
        assert done["files"] + len(done["failures"]) == planned
        failures += [f"{profile} {' '.join(sets[1::2])}: {x}" for x in done["failures"]]
        names.update(done["names"])
    assert not failures, f"{len(failures)} files failed to load onto the {mesh} mesh:\n" + "\n".join(failures[:20])
    # What the settings cover: the .dramshard names, main's fused-decode
    # fp32 files and out.colpar, the MTP head's fc.
    for want in ("qkvzab.dramshard_dtype_BFLOAT8_B_layout_TILE.tensorbin", "mlp.gate_proj.weight.dramshard.tp_dtype_BFLOAT4_B_layout_TILE.tensorbin",
                 "dt_bias_fp32_dtype_FLOAT32_layout_TILE.tensorbin", "neg_exp_A_fp32_dtype_FLOAT32_layout_TILE.tensorbin",
                 "out.colpar_dtype_BFLOAT8_B_layout_TILE.tensorbin", "fc_dtype_BFLOAT8_B_layout_TILE.tensorbin",
                 "mlp.gate_up.weight.swiglu.tp_dtype_BFLOAT4_B_layout_TILE.tensorbin",
                 # the MoE fixture's expert-parallel experts, router and shared-expert gate
                 f"moe.experts.gate_proj_ep_swiglu{mesh[2:]}_dtype_BFLOAT4_B_layout_TILE.tensorbin",
                 f"moe.experts.down_proj_ep_swiglu{mesh[2:]}_dtype_BFLOAT8_B_layout_TILE.tensorbin",
                 "moe.router.weight_dtype_BFLOAT16_layout_TILE.tensorbin",
                 "moe.shared_expert_gate.weight_dtype_BFLOAT16_layout_TILE.tensorbin",
                 # the vision tower's files (test_vision.py holds their bytes)
                 f"visual.blocks.0.attention.wqkv_col.tp{mesh[2:]}_dtype_BFLOAT8_B_layout_TILE.tensorbin",
                 f"visual.blocks.0.attention.wo_row.tp{mesh[2:]}_dtype_BFLOAT8_B_layout_TILE.tensorbin",
                 f"visual.blocks.0.feed_forward.linear_fc1_w_col.tp{mesh[2:]}_dtype_BFLOAT8_B_layout_TILE.tensorbin",
                 f"visual.blocks.0.feed_forward.linear_fc1_b_col.tp{mesh[2:]}_dtype_BFLOAT16_layout_TILE.tensorbin",
                 "visual.blocks.0.norm1weight_dtype_BFLOAT16_layout_TILE.tensorbin",
                 "visual.merger.normbias_dtype_BFLOAT16_layout_TILE.tensorbin",
                 f"visual.merger.linear_fc2_w_row.tp{mesh[2:]}_dtype_BFLOAT8_B_layout_TILE.tensorbin",
                 f"visual.patch_embed_proj_w.tp{mesh[2:]}_dtype_BFLOAT16_layout_TILE.tensorbin",
                 f"visual.pos_embed_w_rm.tp{mesh[2:]}_dtype_BFLOAT16_layout_ROW_MAJOR.tensorbin"):
        assert want in names, want
    # Opening the mesh wrote tt-metal's fabric files into the loader's
    # current directory, not into the work tree.
    assert glob.glob(str(cwd / "generated" / "fabric" / "*.yaml")), "no generated/fabric/*.yaml in the loader's directory"
    assert not os.path.exists(os.path.join(REPO, "generated")), "a generated/ folder in the work tree"
