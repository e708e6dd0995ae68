"""A real Hugging Face cache, written by huggingface_hub from a loopback hub
(hubserver.py), read offline by ckpt's hf: source: revisions and commits
resolved as huggingface_hub resolves them, an interrupted download named,
LFS SHA-256 checked by verify --read-data. The same hub serves ckpt's hf://
reader, checked against huggingface_hub's own header parser."""

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from huggingface_hub import HfApi, hf_hub_download, scan_cache_dir, snapshot_download

from hubserver import Hub
from stlib import ref_parse, ref_serialize

REPO = "interop-org/tiny-fp8"
FOLDER = "models--interop-org--tiny-fp8"
BIG_SHARD = "model-00004-of-00004.safetensors"


def files_of(d):
    return {p.name: p.read_bytes() for p in sorted(Path(d).iterdir())}


def dev_files(ft):
    """The fine-tune with a 12 MiB tensor added to its last shard (more than
    one 10 MiB download chunk of huggingface_hub, so that an interrupted
    download leaves bytes in its .incomplete file)."""
    files = dict(ft)
    tensors = ref_parse(files[BIG_SHARD])
    tensors["pad.dev"] = ("F32", [3 << 20], np.zeros(3 << 20, np.float32).tobytes())
    files[BIG_SHARD] = ref_serialize(tensors, {"format": "pt"})
    index = json.loads(files["model.safetensors.index.json"])
    index["weight_map"]["pad.dev"] = BIG_SHARD
    index["metadata"]["total_size"] += 12 << 20
    files["model.safetensors.index.json"] = json.dumps(index, indent=2).encode()
    return files


class Cache:
    """What the module fixture built."""


@pytest.fixture(scope="module")
def hf(pair, tmp_path_factory):
    base, ft = pair
    c = Cache()
    c.base, c.ft = base, ft
    c.hub = hub = Hub()
    c.files = {"v1.0": files_of(base), "main": files_of(ft)}
    c.files["dev"] = dev_files(c.files["main"])
    c.commit = {rev: hub.add(REPO, c.files[rev], refs=[rev], message=rev) for rev in ("v1.0", "main", "dev")}
    c.root = tmp_path_factory.mktemp("hf") / "hub"
    c.repo_dir = c.root / FOLDER
    kw = {"cache_dir": str(c.root), "endpoint": hub.url}

    # v1.0: the whole snapshot at once; main: file by file
    c.v1_path = snapshot_download(REPO, revision="v1.0", **kw)
    c.main_paths = {f: hf_hub_download(REPO, f, revision="main", **kw) for f in c.files["main"]}

    # dev: index and config first (as loaders do), then the shards; the
    # last one stalls half-way and the process is killed.
    order = ["model.safetensors.index.json", "config.json"] + sorted(f for f in c.files["dev"] if f.startswith("model-"))
    hub.stall(c.files["dev"][BIG_SHARD])
    code = ("import sys\nfrom huggingface_hub import hf_hub_download\n"
            f"for f in {order!r}:\n"
            f"    hf_hub_download({REPO!r}, f, revision='dev', cache_dir={str(c.root)!r}, endpoint={hub.url!r})\n")
    env = dict(os.environ, HF_HUB_DISABLE_PROGRESS_BARS="1", HF_HUB_DISABLE_TELEMETRY="1")
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    c.incomplete = None
    while time.monotonic() < deadline and proc.poll() is None:
        inc = list((c.repo_dir / "blobs").glob("*.incomplete"))
        if inc and inc[0].stat().st_size >= 10 << 20:
            c.incomplete = inc[0]
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    hub.release()
    assert c.incomplete is not None, f"no partial download appeared: {proc.stderr.read().decode()[-2000:]}"
    c.requests_after_download = len(hub.requests)
    yield c
    hub.close()


def cache_env(hf):
    return {"HF_HUB_CACHE": str(hf.root)}


def without_source(doc):
    # generated_by names when each document was written
    return {k: v for k, v in doc.items() if k not in ("source", "base", "ft", "bytes_read", "generated_by")}


def test_the_cache_is_huggingface_hubs(hf):
    """What the fixture claims: three refs, shared blobs, the tree cache of
    huggingface_hub 2, a snapshot without its last shard, one .incomplete."""
    refs = {p.name: p.read_text() for p in (hf.repo_dir / "refs").iterdir()}
    assert refs == hf.commit
    assert Path(hf.v1_path) == hf.repo_dir / "snapshots" / hf.commit["v1.0"]
    dev = hf.repo_dir / "snapshots" / hf.commit["dev"]
    assert not (dev / BIG_SHARD).exists() and (dev / "model.safetensors.index.json").exists()
    assert hf.incomplete.name.startswith(hashlib.sha256(hf.files["dev"][BIG_SHARD]).hexdigest())
    info = {r.repo_id: r for r in scan_cache_dir(hf.root).repos}[REPO]
    assert {rv.commit_hash: set(rv.refs) for rv in info.revisions} == {c: {r} for r, c in hf.commit.items()}
    # unchanged shards of the fine-tune link to the base's blobs
    links = {os.readlink(p) for rev in ("v1.0", "main") for p in (hf.repo_dir / "snapshots" / hf.commit[rev]).iterdir()}
    assert len(links) < len(hf.files["v1.0"]) + len(hf.files["main"])


@pytest.mark.parametrize("rev,side", [("v1.0", "base"), ("main", "ft"), ("", "ft"), ("commit:v1.0", "base"),
                                      ("commit:main", "ft")])
def test_inspect_resolves_revisions(ckpt, hf, rev, side):
    if rev.startswith("commit:"):
        rev = hf.commit[rev[len("commit:"):]]
    src = f"hf:{REPO}" + (f"@{rev}" if rev else "")
    local = ckpt.json("inspect", getattr(hf, side))
    got = ckpt.json("inspect", src, env=cache_env(hf))
    assert got["source"] == src
    assert without_source(got) == without_source(local)
    assert len(hf.hub.requests) == hf.requests_after_download, "hf: must not touch the network"


def test_verify_offline_with_lfs_sha256(ckpt, hf):
    for rev in ("v1.0", "main"):
        r = ckpt.json("verify", f"hf:{REPO}@{rev}", "--read-data", "--progress", "none", env=cache_env(hf))
        checks = {}
        for ch in r["findings"]:
            checks.setdefault(ch["id"], []).append(ch)
        assert r["ok"], [c for c in r["findings"] if c["status"] == "fail"]
        sha = checks["cache.sha256"]
        assert [c["status"] for c in sha] == ["pass"] and "4 files match" in sha[0]["message"], sha
        # dev's interrupted download is in the shared blobs/: named, not failed
        part = checks["cache.partial"]
        assert [c["status"] for c in part] == ["warn"] and hf.incomplete.name in part[0]["message"], part
    assert len(hf.hub.requests) == hf.requests_after_download


def test_verify_read_data_catches_a_corrupt_blob(ckpt, hf, tmp_path):
    """A copy of the cache with one data byte of a shared LFS blob flipped:
    headers still parse, verify passes without --read-data and fails with it,
    naming the shard and both digests."""
    root = tmp_path / "hub"
    shutil.copytree(hf.root, root, symlinks=True)
    snap = root / FOLDER / "snapshots" / hf.commit["v1.0"]
    shard = snap / "model-00001-of-00004.safetensors"
    blob = (shard.parent / os.readlink(shard)).resolve()
    raw = bytearray(blob.read_bytes())
    raw[-3] ^= 0x20
    blob.write_bytes(bytes(raw))
    env = {"HF_HUB_CACHE": str(root)}
    r = ckpt.json("verify", f"hf:{REPO}@v1.0", "--progress", "none", env=env)
    assert r["ok"]
    r = ckpt.json("verify", f"hf:{REPO}@v1.0", "--read-data", "--progress", "none", env=env, rc=1)
    bad = [c for c in r["findings"] if c["id"] == "cache.sha256" and c["status"] == "fail"]
    assert bad and shard.name in bad[0]["message"] and blob.name in bad[0]["message"], r["findings"]


def test_diff_between_revisions(ckpt, hf):
    local = ckpt.json("diff", hf.base, hf.ft, "--progress", "none", rc=1)
    got = ckpt.json("diff", f"hf:{REPO}@v1.0", f"hf:{REPO}@{hf.commit['main']}", "--progress", "none",
                    env=cache_env(hf), rc=1)
    assert without_source(got) == without_source(local)
    assert got["summary"]["changed"] > 0 and got["summary"]["identical"] > 0


def test_partial_download_is_named(ckpt, hf):
    for cmd in (["inspect"], ["diff", f"hf:{REPO}@main", "--progress", "none"]):
        p = ckpt.run(cmd[0], f"hf:{REPO}@dev", *cmd[1:], env=cache_env(hf), rc=2)
        assert "partial download" in p.stderr and BIG_SHARD in p.stderr, p.stderr
        assert hf.incomplete.name in p.stderr, p.stderr
    # verify reports it among its findings
    r = ckpt.json("verify", f"hf:{REPO}@dev", "--progress", "none", env=cache_env(hf), rc=1)
    failed = {c["id"]: c["message"] for c in r["findings"] if c["status"] == "fail"}
    assert BIG_SHARD in failed["index.shard_missing"], failed
    assert hf.incomplete.name in failed["cache.partial"], failed


def test_unknown_revision(ckpt, hf):
    p = ckpt.run("inspect", f"hf:{REPO}@v9", env=cache_env(hf), rc=2)
    assert "v9" in p.stderr and "dev, main, v1.0" in p.stderr, p.stderr


@pytest.mark.parametrize("rev,side", [("v1.0", "base"), ("main", "ft")])
def test_hub_over_http(ckpt, hf, rev, side):
    """hf:// against the same hub (LFS files through its 302 to the CDN), and
    huggingface_hub's own header parser on the same files."""
    env = {"HF_ENDPOINT": hf.hub.url}
    local = ckpt.json("inspect", getattr(hf, side))
    got = ckpt.json("inspect", f"hf://{REPO}@{rev}", env=env)
    assert without_source(got) == without_source(local)
    meta = HfApi(endpoint=hf.hub.url).get_safetensors_metadata(REPO, revision=rev)
    theirs = {(name, f, t.dtype, tuple(t.shape), t.data_offsets[1] - t.data_offsets[0])
              for f, fm in meta.files_metadata.items() for name, t in fm.tensors.items()}
    ours = {(t["name"], t["file"], t["dtype"], tuple(t["shape"]), t["bytes"]) for t in got["tensors"]}
    assert ours == theirs


def test_diff_over_http_matches_local(ckpt, hf):
    env = {"HF_ENDPOINT": hf.hub.url}
    local = ckpt.json("diff", hf.base, hf.ft, "--progress", "none", rc=1)
    got = ckpt.json("diff", f"hf://{REPO}@v1.0", f"hf://{REPO}@main", "--progress", "none", env=env, rc=1)
    assert without_source(got) == without_source(local)
