"""Loads every file of ckpt cache folders onto a mock mesh device, in a
process of its own (the mock cluster is chosen once per process, by
TT_METAL_MOCK_CLUSTER_DESC_PATH): test_mesh_load.py runs it.

    python mesh_loader.py REPORT ROWSxCOLS FOLDER...

opens ttnn.open_mesh_device(MeshShape(ROWS, COLS)) (the compiler stand-in
of sfpi_standin.py must be the runtime root: TT_METAL_RUNTIME_ROOT), loads
each file the folder's manifest.json lists with ttnn.load_tensor(path,
device=mesh) and holds the device tensor against the manifest's plan entry:
device storage on every device of the mesh, dtype, layout, the per-device
shape (of the tensor and of each device's part), memory config (DRAM,
interleaved or width-sharded with the planned shard shape) and placement
(the mapper's placements, distribution shape and mesh coordinates). It
writes one JSON document to REPORT: per folder the files loaded and what
failed.
The mock cluster keeps no device memory, so the data is not read back
(test_load_cache.py checks it on the host load)."""

import json
import os
import re
import sys

import ttlib  # noqa: F401  (the mock cluster default; the caller's environment wins)
import ttnn

DTYPES, LAYOUTS = ttlib.DTYPES, ttlib.LAYOUTS


def expected_topology(placement, rows, cols):
    """(placements, distribution shape) a file of the manifest's placement
    has once loaded onto a rows x cols mesh."""
    n = rows * cols
    if placement == "replicate":
        return ["PlacementReplicate()"], [n]
    m = re.fullmatch(r"shard\(dim=(-?\d+)\)", placement)
    if m:
        return [f"PlacementShard({m.group(1)})"], [n]
    m = re.fullmatch(r"shard2d\(dim=(-?\d+), mesh=\[replicate, shard\]\)", placement)
    if m:
        return ["PlacementReplicate()", f"PlacementShard({m.group(1)})"], [rows, cols]
    raise ValueError(f"placement {placement!r} not known to the test")


def check(t, e, rows, cols):
    n = rows * cols
    assert t.storage_type() == ttnn.StorageType.DEVICE, t.storage_type()
    assert t.dtype == DTYPES[e["dtype"]], t.dtype
    assert t.layout == LAYOUTS[e["layout"]], t.layout
    assert list(t.shape) == e["device_shape"], (list(t.shape), e["device_shape"])
    parts = ttnn.get_device_tensors(t)
    assert len(parts) == n, f"{len(parts)} device tensors on {n} devices"
    for p in parts:
        assert p.storage_type() == ttnn.StorageType.DEVICE, p.storage_type()
        assert list(p.shape) == e["device_shape"], (list(p.shape), e["device_shape"])
    mc = t.memory_config()
    assert mc.buffer_type == ttnn.BufferType.DRAM, mc
    if e["memory_config"]["kind"] == "dram_width_sharded":
        assert mc.memory_layout == ttnn.TensorMemoryLayout.WIDTH_SHARDED, mc
        assert list(mc.shard_spec.shape) == e["memory_config"]["shard_shape"], mc
        assert list(mc.nd_shard_spec.shard_shape) == e["memory_config"]["shard_shape"], mc
    else:
        assert mc.memory_layout == ttnn.TensorMemoryLayout.INTERLEAVED, mc
    topo = t.tensor_topology()
    placements, dist = expected_topology(e["placement"], rows, cols)
    assert [str(p) for p in topo.placements()] == placements, [str(p) for p in topo.placements()]
    assert list(topo.distribution_shape()) == dist, list(topo.distribution_shape())
    coords = [str(c) for c in topo.mesh_coords()]
    assert coords == [f"MeshCoordinate([{r}, {c}])" for r in range(rows) for c in range(cols)], coords


def main(argv):
    out, argv = argv[0], argv[1:]
    rows, cols = (int(x) for x in argv[0].split("x"))
    mesh = ttnn.open_mesh_device(ttnn.MeshShape(rows, cols))
    report = {"mesh": [rows, cols], "devices": mesh.get_num_devices(), "folders": []}
    try:
        for folder in argv[1:]:
            with open(os.path.join(folder, "manifest.json")) as f:
                manifest = json.load(f)
            root = os.path.dirname(os.path.dirname(folder))  # manifest paths are relative to the cache root
            done = {"folder": folder, "files": 0, "names": [], "failures": []}
            for rec in manifest["files"]:
                try:
                    t = ttnn.load_tensor(os.path.join(root, rec["path"]), device=mesh)
                    try:
                        check(t, rec["entry"], rows, cols)
                    finally:
                        ttnn.deallocate(t)
                    done["files"] += 1
                    done["names"].append(os.path.basename(rec["path"]))
                except Exception as ex:  # every failing file is reported
                    first = str(ex).splitlines()[0] if str(ex) else ""
                    done["failures"].append(f"{rec['path']}: {type(ex).__name__}: {first}")
            report["folders"].append(done)
    finally:
        ttnn.close_mesh_device(mesh)
    with open(out, "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main(sys.argv[1:])
