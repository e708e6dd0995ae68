"""pytest fixtures of the interop suite. run.sh builds the Go programs and
passes them in $CKPT_BIN, $CONVDUMP_BIN and $GENFIXTURE_BIN; run by hand
(pytest .ci/interop) the fixtures build them with `go build`."""

import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from stlib import Ckpt, versions  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def pytest_report_header(config):
    return "reference versions: " + ", ".join(f"{k} {v}" for k, v in versions().items())


def _binary(env, pkg, tmp_path_factory):
    if os.environ.get(env):
        return os.environ[env]
    out = str(tmp_path_factory.mktemp("bin") / os.path.basename(pkg))
    subprocess.run(["go", "build", "-o", out, pkg], cwd=REPO, check=True)
    return out


@pytest.fixture(scope="session")
def ckpt_bin(tmp_path_factory):
    return _binary("CKPT_BIN", "./cmd/ckpt", tmp_path_factory)


@pytest.fixture(scope="session")
def convdump(tmp_path_factory):
    return _binary("CONVDUMP_BIN", "./cmd/internal/convdump", tmp_path_factory)


@pytest.fixture(scope="session")
def ckpt(ckpt_bin):
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    # No hub is reachable: hf: sources are read from the local cache only.
    env["HF_ENDPOINT"] = "http://127.0.0.1:9"
    return Ckpt(ckpt_bin, env)


@pytest.fixture(scope="session")
def pair(tmp_path_factory):
    """The generated tiny Qwen3.5-style FP8 base and fine-tune (4 shards
    each, index, config with a block-FP8 quantization_config)."""
    gen = _binary("GENFIXTURE_BIN", "./cmd/internal/genfixture", tmp_path_factory)
    out = tmp_path_factory.mktemp("pair")
    subprocess.run([gen, "-size", "small", "-out", str(out)], check=True)
    return out / "base", out / "ft"


@pytest.fixture(scope="session")
def stdump(tmp_path_factory):
    """The stdump program: ckpt.Open over a directory of inputs, one JSON
    line each (test_differential.py)."""
    return _binary("STDUMP_BIN", "./cmd/internal/stdump", tmp_path_factory)
