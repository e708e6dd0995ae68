"""pytest fixtures of the ttnn leg. run.sh builds the Go programs and passes
them in $CKPT_BIN and $GENFIXTURE_BIN; run by hand (pytest
.ci/interop/ttnn) the fixtures build them with `go build`."""

import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import ttlib  # noqa: E402  (sets the mock cluster descriptor before ttnn starts)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def pytest_report_header(config):
    import numpy
    import ttnn
    return (f"ttnn {ttnn.__version__ if hasattr(ttnn, '__version__') else '?'}, numpy {numpy.__version__}, "
            f"cluster {os.environ['TT_METAL_MOCK_CLUSTER_DESC_PATH']}")


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
def genfixture(tmp_path_factory):
    return _binary("GENFIXTURE_BIN", "./cmd/internal/genfixture", tmp_path_factory)
