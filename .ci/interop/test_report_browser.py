"""`ckpt diff --by layer --format html -o r.html` rendered by a real browser:
headless Chromium (Debian's `chromium`; .ci/interop/chromium.sh finds
it, `.ci/run` installs it) loads the page of a 64-layer pair from a file://
URL with networking off, and the test checks the DOM it built (a heatmap row
for every decoder layer and the MTP layer, in both heatmaps; the summary and
config sections) and the screenshot (decoded here with zlib: not blank, the
heatmap's colours present over the area of its cells). Skipped, saying why,
when no Chromium can be found."""

import os
import re
import struct
import subprocess
import tempfile
import zlib

import pytest

from conftest import REPO, _binary

LAYERS = 64
HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def chromium():
    p = subprocess.run(["bash", os.path.join(HERE, "chromium.sh")], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip("no headless Chromium: " + p.stderr.strip())
    return p.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def deep_pair(tmp_path_factory):
    gen = _binary("GENFIXTURE_BIN", "./cmd/internal/genfixture", tmp_path_factory)
    out = tmp_path_factory.mktemp("deep")
    subprocess.run([gen, "-size", "small", "-layers", str(LAYERS), "-out", str(out)], check=True, cwd=REPO)
    return out / "base", out / "ft"


def run_chromium(chromium, page, *args):
    """Runs headless Chromium on the page with networking and background
    services off, in a fresh profile; returns its stdout."""
    with tempfile.TemporaryDirectory() as profile:
        p = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                            "--no-first-run", "--disable-background-networking", "--disable-component-update",
                            "--disable-sync", "--user-data-dir=" + profile, *args, "file://" + str(page)],
                           capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"chromium exit {p.returncode}: {p.stderr[-2000:]}"
    return p.stdout


def png_pixels(path):
    """Decodes an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium's
    --screenshot writes) into (width, height, rows of RGB tuples)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = ihdr
    assert depth == 8 and ctype in (2, 6) and interlace == 0, ihdr
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(h):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 0xFF
            elif f == 2:
                line[x] = (line[x] + b) & 0xFF
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 0xFF
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pr) & 0xFF
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, bpp)])
        prev = line
    return w, h, rows


def hexrgb(s):
    return tuple(int(s[i:i + 2], 16) for i in (1, 3, 5))


def test_html_report_renders_in_chromium(ckpt, deep_pair, chromium, tmp_path):
    base, ft = deep_pair
    page = tmp_path / "r.html"
    p = ckpt.run("diff", base, ft, "--by", "layer", "--format", "html", "-o", page, "--progress", "none", rc=1)
    assert p.stdout == ""
    assert f"wrote the diff report to {page}" in p.stderr
    src = page.read_text()
    # The colours of the page's own stylesheet (the cells' classes).
    css = dict(re.findall(r"^\.(same|l[1-4]|rq) \{ background: (#[0-9a-f]{6});", src, re.M))
    assert set(css) == {"same", "l1", "l2", "l3", "l4", "rq"}, css

    dom = run_chromium(chromium, page, "--dump-dom")
    assert "<table" in dom and 'id="verdict">differences found<' in dom
    decoder = dom[dom.index("<h3>decoder layers</h3>"):]
    decoder = decoder[:decoder.index("</section>")]
    for i in range(LAYERS):
        assert decoder.count(f'<tr data-layer="{i}"><th class="rl">{i}</th>') == 2, f"layer {i}: in both heatmaps"
    assert decoder.count('<tr data-layer="mtp 0">') == 2
    assert len(re.findall(r'<tr data-layer="(\d+)">', decoder)) == 2 * LAYERS
    assert "<h3>visual: model.visual.blocks</h3>" in dom
    for section in ('id="summary"', 'id="heatmaps"', 'id="layers"', 'id="groups"', 'id="config"',
                    "quantization_config.modules_to_not_convert"):
        assert section in dom, section

    shot = tmp_path / "r.png"
    run_chromium(chromium, page, "--screenshot=" + str(shot), "--window-size=1400,2000", "--hide-scrollbars")
    w, h, rows = png_pixels(shot)
    assert (w, h) == (1400, 2000)
    counts = {}
    for r in rows:
        for px in r:
            counts[px] = counts.get(px, 0) + 1
    white = counts.get((255, 255, 255), 0)
    assert white < 0.97 * w * h, "the page is (nearly) blank"
    assert len(counts) > 50, f"only {len(counts)} colours"
    # The decoder heatmaps: 65 rows x 20 kinds x 2 maps, most cells
    # "no difference" (22 x 16 px each); the fine-tune's changes and the MTP
    # head's re-quantised weights in their colours.
    same = counts.get(hexrgb(css["same"]), 0)
    assert same > 2 * LAYERS * 12 * 22 * 14, f"{same} pixels of the no-difference colour"
    assert counts.get(hexrgb(css["rq"]), 0) > 2 * 7 * 22 * 14, "the MTP layer's requant_identical cells"
    changed = sum(counts.get(hexrgb(css[k]), 0) for k in ("l1", "l2", "l3", "l4"))
    assert changed > 2 * 22 * 14, "the changed cells"
