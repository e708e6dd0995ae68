"""A loopback Hugging Face hub for the interop suite: enough of the hub's
protocol for huggingface_hub's hf_hub_download and snapshot_download (and
for ckpt's hf:// reader), over repositories held in memory.

Routes (ENDPOINT = http://127.0.0.1:PORT):

  GET  /api/models/{repo}/revision/{rev}   repo info: id, sha, siblings
  GET  /api/models/{repo}/tree/{rev}[/dir]  the file listing (oid, size, lfs)
  HEAD|GET /{repo}/resolve/{rev}/{path}     a file of a revision: regular files
       are served with ETag = their git blob id; LFS files (*.safetensors)
       answer 302 to the CDN with X-Linked-Etag = their SHA-256 and
       X-Linked-Size, as the hub does. Both carry X-Repo-Commit.
  GET  CDN /lfs/{sha256}                    the LFS content, on another
       loopback host (127.0.0.2) so that clients treat it as off-hub.

A revision is a branch or tag name or a 40-hex commit. Range requests
(single range) are honoured everywhere. stall() makes a GET of an LFS object
send all but its last 64 KiB (at most half) and then hang until release(), to leave a
real interrupted download behind.
"""

import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

LFS_PATTERN = re.compile(r"\.safetensors$")


def git_blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(data):
    return (f"version https://git-lfs.github.com/spec/v1\noid sha256:{hashlib.sha256(data).hexdigest()}\n"
            f"size {len(data)}\n").encode()


class Repo:
    def __init__(self, repo_id):
        self.id = repo_id
        self.commits = {}  # sha → {path: bytes}
        self.refs = {}  # branch or tag → sha

    def commit(self, files, refs=(), message=""):
        """Adds a commit holding files ({path: bytes}); returns its sha."""
        h = hashlib.sha1(message.encode())
        for p in sorted(files):
            h.update(p.encode() + b"\0" + hashlib.sha256(files[p]).digest())
        sha = h.hexdigest()
        self.commits[sha] = dict(files)
        for r in refs:
            self.refs[r] = sha
        return sha

    def resolve(self, rev):
        if rev in self.refs:
            return self.refs[rev]
        if rev in self.commits:
            return rev
        return None


class Hub:
    """The hub and its CDN, each a ThreadingHTTPServer on a loopback address."""

    def __init__(self):
        self.repos = {}
        self.lfs = {}  # sha256 → bytes
        self.requests = []
        self._stall = set()
        self._released = threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler(cdn=False))
        self.cdn = ThreadingHTTPServer(("127.0.0.2", 0), self._handler(cdn=True))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.cdn_url = f"http://127.0.0.2:{self.cdn.server_address[1]}"
        for s in (self.server, self.cdn):
            s.daemon_threads = True
            threading.Thread(target=s.serve_forever, daemon=True).start()

    def close(self):
        self.release()
        for s in (self.server, self.cdn):
            s.shutdown()
            s.server_close()

    def repo(self, repo_id):
        return self.repos.setdefault(repo_id, Repo(repo_id))

    def add(self, repo_id, files, refs=(), message=""):
        for p, data in files.items():
            if LFS_PATTERN.search(p):
                self.lfs[hashlib.sha256(data).hexdigest()] = data
        return self.repo(repo_id).commit(files, refs, message)

    def stall(self, data):
        """GETs of this LFS content send all but its last 64 KiB (at least
        half of it), then hang until release()."""
        self._stall.add(hashlib.sha256(data).hexdigest())

    def release(self):
        self._released.set()

    def _handler(self, cdn):
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_HEAD(self):
                self.route(head=True)

            def do_GET(self):
                self.route(head=False)

            def route(self, head):
                path = unquote(urlsplit(self.path).path)
                hub.requests.append((self.command, ("cdn" if cdn else "hub"), path, self.headers.get("Range")))
                if cdn:
                    m = re.fullmatch(r"/lfs/([0-9a-f]{64})", path)
                    if not m or m.group(1) not in hub.lfs:
                        return self.error(404, "EntryNotFound")
                    return self.send_data(hub.lfs[m.group(1)], head, {"ETag": f'"{m.group(1)}"'},
                                          stall=m.group(1) in hub._stall)
                m = re.fullmatch(r"/api/models/([^/]+/[^/]+)/(revision|tree)/([^/]+)(/.*)?", path)
                if m:
                    return self.api(*m.groups(), head=head)
                m = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
                if m:
                    return self.resolve(*m.groups(), head=head)
                self.error(404, "RepoNotFound")

            def error(self, code, xcode, msg=None):
                body = json.dumps({"error": msg or xcode}).encode()
                self.send_response(code)
                self.send_header("X-Error-Code", xcode)
                self.send_header("X-Error-Message", msg or xcode)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def lookup(self, repo_id, rev):
                repo = hub.repos.get(repo_id)
                if repo is None:
                    self.error(404, "RepoNotFound", "Repository not found")
                    return None, None
                sha = repo.resolve(rev)
                if sha is None:
                    self.error(404, "RevisionNotFound", f"Invalid rev id: {rev}")
                    return None, None
                return repo, sha

            def api(self, repo_id, kind, rev, sub, head):
                repo, sha = self.lookup(repo_id, rev)
                if repo is None:
                    return
                files = repo.commits[sha]
                if kind == "revision":
                    doc = {"id": repo_id, "modelId": repo_id, "sha": sha, "private": False,
                           "siblings": [{"rfilename": p} for p in sorted(files)]}
                else:
                    prefix = (sub or "").strip("/")
                    doc = []
                    for p in sorted(files):
                        if prefix and not p.startswith(prefix + "/"):
                            continue
                        data = files[p]
                        e = {"type": "file", "path": p, "size": len(data)}
                        if LFS_PATTERN.search(p):
                            ptr = lfs_pointer(data)
                            e["oid"] = git_blob_id(ptr)
                            e["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data),
                                        "pointerSize": len(ptr)}
                        else:
                            e["oid"] = git_blob_id(data)
                        doc.append(e)
                body = json.dumps(doc).encode()
                self.send_data(body, head, {"Content-Type": "application/json"})

            def resolve(self, repo_id, rev, name, head):
                repo, sha = self.lookup(repo_id, rev)
                if repo is None:
                    return
                data = repo.commits[sha].get(name)
                if data is None:
                    return self.error(404, "EntryNotFound", f"{name} does not exist at {rev}")
                if LFS_PATTERN.search(name):
                    digest = hashlib.sha256(data).hexdigest()
                    self.send_response(302)
                    self.send_header("Location", f"{hub.cdn_url}/lfs/{digest}")
                    self.send_header("X-Repo-Commit", sha)
                    self.send_header("ETag", f'"{git_blob_id(lfs_pointer(data))}"')
                    self.send_header("X-Linked-Etag", f'"{digest}"')
                    self.send_header("X-Linked-Size", str(len(data)))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_data(data, head, {"X-Repo-Commit": sha, "ETag": f'"{git_blob_id(data)}"'})

            def send_data(self, data, head, headers, stall=False):
                size, start, end, status = len(data), 0, len(data) - 1, 200
                rng = self.headers.get("Range")
                if rng:
                    m = re.fullmatch(r"bytes=(\d*)-(\d*)", rng.strip())
                    if not m or (m.group(1) == "" and m.group(2) == ""):
                        return self.error(416, "RangeNotSatisfiable")
                    if m.group(1) == "":
                        start = max(size - int(m.group(2)), 0)
                    else:
                        start = int(m.group(1))
                        if m.group(2) != "":
                            end = min(int(m.group(2)), size - 1)
                    if start >= size or end < start:
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{size}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    status = 206
                body = data[start:end + 1]
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Accept-Ranges", "bytes")
                if status == 206:
                    self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if head:
                    return
                if stall and not hub._released.is_set():
                    self.wfile.write(body[: max(len(body) // 2, len(body) - (64 << 10))])
                    self.wfile.flush()
                    hub._released.wait(60)
                    self.close_connection = True
                    return
                self.wfile.write(body)

        return Handler
