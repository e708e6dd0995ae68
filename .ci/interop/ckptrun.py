"""Running the ckpt binary from the interop suites: one runner for the main
suite (stlib re-exports it) and the ctools and transformers legs, whose
conftests import it from this folder. Standard library only, so that every
leg's venv can import it."""

import json
import os
import subprocess

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def hubless_env():
    """The environment without the HF_ variables, and a hub that nobody
    answers (port 9, discard): hf: sources come from the local cache only,
    and nothing reaches the network."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env["HF_ENDPOINT"] = "http://127.0.0.1:9"
    return env


def build(tmp_path_factory, env_var="CKPT_BIN", pkg="./cmd/ckpt"):
    """The binary $env_var names (run.sh builds it), else one built from
    pkg with go build into the session's temporary directory."""
    binary = os.environ.get(env_var)
    if binary:
        return binary
    binary = str(tmp_path_factory.mktemp("bin") / os.path.basename(pkg))
    subprocess.run(["go", "build", "-o", binary, pkg], cwd=REPO, check=True)
    return binary


class Ckpt:
    """Runs the ckpt binary: run checks the exit code (one or several
    allowed) and returns the finished process; json adds --format json and
    parses stdout."""

    def __init__(self, binary, env=None):
        self.binary = binary
        self.env = dict(os.environ if env is None else env)

    def run(self, *args, rc=0, env=None):
        e = dict(self.env)
        e.update(env or {})
        p = subprocess.run([self.binary, *map(str, args)], capture_output=True, text=True, env=e, timeout=300)
        want = rc if isinstance(rc, (tuple, list)) else (rc,)
        assert p.returncode in want, (
            f"ckpt {' '.join(map(str, args))}: exit {p.returncode}, want {want}\n"
            f"stdout: {p.stdout[-3000:]}\nstderr: {p.stderr[-3000:]}")
        return p

    def json(self, *args, rc=0, env=None):
        return json.loads(self.run(*args, "--format", "json", rc=rc, env=env).stdout)
