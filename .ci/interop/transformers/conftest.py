"""pytest fixtures of the transformers leg. run.sh builds ckpt and passes it
in $CKPT_BIN; run by hand (pytest .ci/interop/transformers) the fixture
builds it with `go build`. Every checkpoint is made by code (tflib) once per
session, in the session's temporary directory (zoo)."""

import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def pytest_report_header(config):
    import safetensors
    import torch
    import transformers
    return f"transformers {transformers.__version__}, torch {torch.__version__}, safetensors {safetensors.__version__}"


class Ckpt:
    """Runs the ckpt binary."""

    def __init__(self, binary):
        self.binary = binary
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
        self.env["HF_ENDPOINT"] = "http://127.0.0.1:9"  # no hub

    def run(self, *args, rc=0):
        p = subprocess.run([self.binary, *map(str, args)], capture_output=True, text=True, env=self.env, timeout=300)
        want = rc if isinstance(rc, (tuple, list)) else (rc,)
        assert p.returncode in want, (
            f"ckpt {' '.join(map(str, args))}: exit {p.returncode}, want {want}\n"
            f"stdout: {p.stdout[-3000:]}\nstderr: {p.stderr[-3000:]}")
        return p

    def json(self, *args, rc=0):
        return json.loads(self.run(*args, "--format", "json", rc=rc).stdout)


@pytest.fixture(scope="session")
def ckpt(tmp_path_factory):
    binary = os.environ.get("CKPT_BIN")
    if not binary:
        binary = str(tmp_path_factory.mktemp("bin") / "ckpt")
        subprocess.run(["go", "build", "-o", binary, "./cmd/ckpt"], cwd=REPO, check=True)
    return Ckpt(binary)


@pytest.fixture(scope="session")
def zoo(tmp_path_factory):
    """The session's checkpoints, each made once on first use (zoo.Zoo)."""
    import zoo as z
    return z.Zoo(tmp_path_factory.mktemp("zoo"))
