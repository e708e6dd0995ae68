"""Differential test of ckpt's reading against the reference readers, on
generated and mutated inputs (seeded), the hostile and edge-case corpus of
ckpt/ckpttest, and the cases of issue #27:

- safetensors headers: ckpt (ckpt.Open, through the stdump program, which
  reads a whole directory of inputs in one process) against
  safetensors 0.8.0 (`deserialize`, and `safe_open` for the metadata);
- indexes: ckpt against the reading transformers and vLLM do, modelled
  here (transformers is not installed, it is heavy): `json.load` of the
  file (UTF-8), then `["weight_map"]`, a dict whose values must be shard
  file names (`set(index["weight_map"].values())`, then joined to the
  folder).

Every input the reference refuses, ckpt refuses; every input it accepts,
ckpt reads with the same tensors, dtypes, shapes, bytes and metadata (for
an index: every tensor from the shard the weight map names), or refuses
for one of the reasons docs/formats.md lists where ckpt is deliberately
stricter, which the test checks independently in the input."""

import json
import os
import struct
import subprocess

import numpy as np
import xxhash
from safetensors import deserialize, safe_open

from stlib import BITS

N_HEADERS = 1400
N_INDEXES = 400
DTYPES = list(BITS)


def ckpt_read(stdump, d):
    p = subprocess.run([stdump, "read", str(d)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return {r["entry"]: r for r in map(json.loads, p.stdout.splitlines())}


# ---------------------------------------------------------------- headers

NAME_PARTS = ["model", "layers", "0", "17", "mlp", "up_proj", "weight", "weight_scale_inv", "é", "ß", "層",
              "😀", "a b", 'q"uote', "back\\slash", "tab\t", "nul\x00", "\x7f", "/", "__metadata__x", ""]


def jstr(s, rng):
    """s as a JSON string literal, characters escaped at random (non-BMP
    ones as surrogate pairs), as a writer might."""
    out = ['"']
    for ch in s:
        c = ord(ch)
        r = rng.random()
        if ch in '"\\' or c < 0x20:
            simple = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t"}
            out.append(simple[ch] if ch in simple and r < 0.5 else f"\\u{c:04x}")
        elif r < 0.15:
            if c > 0xFFFF:
                c -= 0x10000
                out.append(f"\\u{0xD800 + (c >> 10):04x}\\u{0xDC00 + (c & 0x3FF):04X}")
            else:
                out.append(f"\\u{c:04x}")
        elif r < 0.18 and ch == "/":
            out.append("\\/")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def ws(rng):
    return "" if rng.random() < 0.7 else "".join(rng.choice([" ", "\n", "\t", "\r"], rng.integers(1, 4)))


def rand_value(rng, depth):
    """A random JSON value (text) nested at most depth levels."""
    r = rng.random()
    if depth <= 0 or r < 0.3:
        return str(rng.choice(["1", "-2", "0.5", "1e-400", "12345678901234567890123", "true", "false", "null", '"x"', '"\\u00e9"', "[]", "{}"]))
    if r < 0.65:
        return "[" + ",".join(rand_value(rng, depth - 1) for _ in range(rng.integers(0, 3))) + "]"
    keys = ["k", "k", "dtype", "x"]  # repeated keys: serde ignores unknown fields, repeated or not
    return "{" + ",".join(f'"{rng.choice(keys)}":{rand_value(rng, depth - 1)}' for _ in range(rng.integers(0, 3))) + "}"


def nested(depth):
    return "[" * depth + "]" * depth


def rand_shape(rng, dtype):
    bits = BITS[dtype]
    while True:
        rank = int(rng.integers(0, 4))
        shape = [int(rng.integers(0, 5)) for _ in range(rank)]
        n = int(np.prod(shape)) if shape else 1
        if n * bits % 8 == 0:
            return shape, n * bits // 8


def gen_header(rng):
    """A valid header (as pieces to render) and its data section."""
    n = int(rng.integers(0, 6))
    names = []
    while len(names) < n:
        k = rng.integers(1, 4)
        name = ".".join(str(rng.choice(NAME_PARTS)) for _ in range(k))
        if name not in names and name != "__metadata__":
            names.append(name)
    tensors = []
    for name in names:
        dt = str(rng.choice(DTYPES))
        shape, nb = rand_shape(rng, dt)
        tensors.append({"name": name, "dtype": dt, "shape": shape, "nbytes": nb})
    order = rng.permutation(len(tensors))  # data laid out in any order
    off = 0
    for i in order:
        t = tensors[i]
        t["offsets"] = [off, off + t["nbytes"]]
        off += t["nbytes"]
    data = rng.integers(0, 256, off, dtype=np.uint8).tobytes()
    meta = None
    r = rng.random()
    if r < 0.3:
        meta = {str(rng.choice(["format", "k", "é", "😀"])): str(rng.choice(["pt", "", "v\\", "x"])) for _ in range(rng.integers(0, 3))}
    elif r < 0.4:
        meta = "null"
    return {"tensors": tensors, "meta": meta, "data": data}


def render_entry(t, rng, mut):
    fields = [("dtype", jstr(t["dtype"], rng)), ("shape", "[" + ",".join(map(str, t["shape"])) + "]"),
              ("data_offsets", "[" + ",".join(map(str, t["offsets"])) + "]")]
    if "dtype_map" in mut:
        fields[0] = ("dtype", "{" + jstr(t["dtype"], rng) + ":null}")
    if "seq" in mut:
        items = [v for _, v in fields]
        if "seq_len" in mut:
            items = items[:2] if rng.random() < 0.5 else items + ["1"]
        return "[" + ",".join(items) + "]"
    if rng.random() < 0.3:
        rng.shuffle(fields)
    if "unknown" in mut or rng.random() < 0.2:
        fields.insert(int(rng.integers(0, len(fields) + 1)), (str(rng.choice(["extra", "x", "DTYPE", "Shape", "offsets"])), rand_value(rng, 3)))
    if "dup_field" in mut:
        k = str(rng.choice(["dtype", "shape", "data_offsets"]))
        v = dict(fields)[k]
        fields.insert(int(rng.integers(0, len(fields) + 1)), (k, v))
    if "case_field" in mut:
        i = int(rng.integers(0, 3))
        k, v = fields[i]
        fields[i] = (k.upper() if rng.random() < 0.5 else k.capitalize(), v)
    if "drop_field" in mut:
        fields.pop(int(rng.integers(0, len(fields))))
    if "deep" in mut:
        fields.append(("x", nested(int(rng.integers(120, 130)))))
    return "{" + ",".join(f"{ws(rng)}{jstr(k, rng)}{ws(rng)}:{ws(rng)}{v}" for k, v in fields) + "}"


MUTATIONS = ["dup_field", "dup_tensor", "dup_meta", "surrogate", "bad_escape", "control", "case_field", "case_meta",
             "number", "bignum", "deep", "trailing_comma", "garbage", "bom", "meta_value", "offsets", "dtype",
             "bytes", "seq", "seq_len", "dtype_map", "entry_type", "length", "drop_field", "unknown"]


def render_header(h, rng, mut):
    members = []
    if h["meta"] is not None:
        m = h["meta"]
        members.append(("__metadata__" if "case_meta" not in mut else "__Metadata__",
                        m if isinstance(m, str) else "{" + ",".join(f"{jstr(k, rng)}:{jstr(v, rng)}" for k, v in m.items()) + "}"))
    for t in h["tensors"]:
        members.append((t["name"], render_entry(t, rng, mut)))
    if members and rng.random() < 0.5:
        i = int(rng.integers(0, len(members)))
        members.append(members.pop(i))
    if "dup_tensor" in mut and h["tensors"]:
        t = h["tensors"][int(rng.integers(0, len(h["tensors"])))]
        members.append((t["name"], render_entry(t, rng, ())))
    if "dup_meta" in mut:
        members.append(("__metadata__", "{}" if rng.random() < 0.5 else "null"))
    if "meta_value" in mut:
        members.insert(0, ("__metadata__", str(rng.choice(['{"k":1}', '{"k":null}', '{"k":["v"]}', "[]", '"pt"', '{"k":"a","k":"b"}']))))
    if "entry_type" in mut:
        members.append(("z", str(rng.choice(["null", "1", '"F32"', "[]", "{}"]))))
    text = "{" + ",".join(f"{ws(rng)}{jstr(k, rng)}{ws(rng)}:{ws(rng)}{v}{ws(rng)}" for k, v in members) + "}"
    if "surrogate" in mut or "bad_escape" in mut or "control" in mut:
        bad = {"surrogate": ["\\ud800", "\\udc00", "\\udbff\\u0041", "\\uDFFF", "\\ud800\\ud800"],
               "bad_escape": ["\\x", "\\u12", "\\U0041", "\\'", "\\a"],
               "control": ["\x01", "\x1f", "\n"]}
        kind = [k for k in ("surrogate", "bad_escape", "control") if k in mut][0]
        quotes = [i for i, c in enumerate(text) if c == '"' and text[i - 1] != "\\"]
        if quotes:
            i = quotes[int(rng.integers(0, len(quotes)))]
            text = text[:i + 1] + str(rng.choice(bad[kind])) + text[i + 1:]
    if "number" in mut:
        nums = [i for i in range(1, len(text)) if text[i].isdigit() and text[i - 1] in "[,"]
        if nums:
            i = nums[int(rng.integers(0, len(nums)))]
            j = i
            while j < len(text) and text[j].isdigit():
                j += 1
            rep = str(rng.choice(["2.0", "-1", "-0", "02", "1e1", "18446744073709551616", "18446744073709551615", "+1", "0x10", text[i:j] + ".0", "true", '"1"']))
            text = text[:i] + rep + text[j:]
    if "bignum" in mut:
        text = text[:-1] + (',' if len(text) > 2 else '') + '"big":{"dtype":"U8","shape":[0],"data_offsets":[' + f'{len(h["data"])},{len(h["data"])}],"x":' + str(
            rng.choice(["1e400", "-1e400", "1e-400", "1" + "0" * 400, "1.7976931348623157e308", "1.7976931348623159e308", "-0.0"])) + "}}"
    if "trailing_comma" in mut:
        text = text[:-1] + ",}" if rng.random() < 0.5 else text.replace("]", ",]", 1)
    if "garbage" in mut:
        text += str(rng.choice(["x", "\x00", " {}", ",", "\t\n", "}"]))
    if "bom" in mut:
        text = "\ufeff" + text
    if "dtype" in mut:
        text = text.replace('"' + str(rng.choice(DTYPES)) + '"', str(rng.choice(['"F7"', '"f32"', '"bf16"', '"F32 "', "null", "8"])), 1)
    raw = text.encode("utf-8", "surrogatepass")
    raw += b" " * int(rng.integers(0, 8)) if rng.random() < 0.6 else b""
    data = h["data"]
    if "offsets" in mut:
        r = rng.random()
        data = data + b"\0" * int(rng.integers(1, 4)) if r < 0.5 else data[:-1]
    if "bytes" in mut:
        b = bytearray(raw)
        for _ in range(rng.integers(1, 3)):
            if not b:
                break
            i = int(rng.integers(0, len(b)))
            op = rng.random()
            if op < 0.4:
                b[i] = int(rng.integers(0, 256))
            elif op < 0.7:
                del b[i]
            else:
                b.insert(i, int(rng.choice(list(b'{}[]",:\\ 0a'))))
        raw = bytes(b)
    n = len(raw)
    if "length" in mut:
        n += int(rng.choice([-1, 1, 8]))
    return struct.pack("<Q", max(n, 0)) + raw + data


def gen_inputs(seed):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(N_HEADERS):
        h = gen_header(rng)
        r = rng.random()
        if r < 0.3:
            mut = ()
        else:
            mut = tuple(rng.choice(MUTATIONS, int(rng.integers(1, 3)), replace=False))
        out.append((f"g{i:05d}-{'+'.join(mut) or 'valid'}", render_header(h, rng, mut)))
    return out


# Issue #27 case 3 and the questions it asked of the reference.
E = '"dtype":"F32","shape":[2],"data_offsets":[0,8]'
CASES = {
    "dup-dtype": '{"w":{"dtype":"I32",%s}}' % E,
    "dup-shape": '{"w":{"shape":[8],%s}}' % E,
    "dup-offsets": '{"w":{"data_offsets":[0,4],%s}}' % E,
    "lone-surrogate-name": '{"w\\ud800":{%s}}' % E,
    "surrogate-pair": '{"w\\ud83d\\ude00":{%s}}' % E,
    "dup-tensor": '{"w":{%s},"w":{%s}}' % (E, E),
    "unknown-field-twice": '{"w":{%s,"x":1,"x":2}}' % E,
    "metadata-number": '{"__metadata__":{"k":1},"w":{%s}}' % E,
    "metadata-dup-key": '{"__metadata__":{"k":"a","k":"b"},"w":{%s}}' % E,
    "metadata-escaped-key": '{"\\u005f_metadata__":{"k":"v"},"w":{%s}}' % E,
    "seq-form": '{"w":["F32",[2],[0,8]]}',
    "dtype-map": '{"w":{"dtype":{"F32":null},"shape":[2],"data_offsets":[0,8]}}',
    "depth-127": '{"w":{%s,"x":%s}}' % (E, nested(125)),
    "depth-128": '{"w":{%s,"x":%s}}' % (E, nested(126)),
    "shape-5000-dims": '{"w":{"dtype":"F32","shape":[%s2],"data_offsets":[0,8]}}' % ("1," * 5000),
}


# Where ckpt refuses what the reference accepts, by design (docs/formats.md):
# the reason in ckpt's message, and an independent check of the input.
def _top_pairs(raw):
    n = struct.unpack("<Q", raw[:8])[0]
    try:
        return json.loads(raw[8:8 + n].decode(), object_pairs_hook=lambda kv: kv)
    except ValueError:
        return []


def _dup_tensor(raw):
    names = [k for k, _ in _top_pairs(raw) if k != "__metadata__"]
    return len(names) != len(set(names))


def _many_dims(raw):
    return any(isinstance(v, list) and any(isinstance(f, tuple) and f[0] == "shape" and len(f[1]) > 4096 for f in v)
               or isinstance(v, list) and len(v) == 3 and isinstance(v[1], list) and len(v[1]) > 4096
               for _, v in _top_pairs(raw))


HEADER_STRICTER = [("duplicate tensor name", _dup_tensor), ("has more than 4096 entries", _many_dims)]


def ref_header(path):
    """(tensors, metadata) as safetensors reads the file, or None if it refuses."""
    raw = path.read_bytes()
    try:
        ts = {n: (v["dtype"], list(v["shape"]), xxhash.xxh3_64_hexdigest(bytes(v["data"]))) for n, v in deserialize(raw)}
    except Exception:  # SafetensorError, and any other refusal
        return None
    with safe_open(str(path), "np") as f:
        return ts, f.metadata()


def test_headers_agree_with_safetensors(stdump, tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    inputs = gen_inputs(27)
    for name, hdr in CASES.items():
        inputs.append((f"case-{name}", struct.pack("<Q", len(hdr)) + hdr.encode() + b"\0" * 8))
    corpus = tmp_path / "corpus"
    subprocess.run([stdump, "corpus", str(corpus)], check=True)
    for p in sorted((corpus / "headers").iterdir()):
        inputs.append((p.stem, p.read_bytes()))
    assert len(inputs) >= 1000
    for name, raw in inputs:
        (d / (name + ".safetensors")).write_bytes(raw)
    got = ckpt_read(stdump, d)
    assert len(got) == len(inputs)
    counts = {"both refuse": 0, "both read": 0, "ckpt stricter": 0}
    bad = []
    for name, raw in inputs:
        entry = name + ".safetensors"
        ref, ck = ref_header(d / entry), got[entry]
        if ref is None:
            if ck["ok"]:
                bad.append(f"{name}: the reference refuses it, ckpt reads {ck['tensors']}")
            counts["both refuse"] += 1
            continue
        if not ck["ok"]:
            why = [r for r, check in HEADER_STRICTER if r in ck["error"]]
            if not why or not dict(HEADER_STRICTER)[why[0]](raw):
                bad.append(f"{name}: the reference reads it, ckpt refuses: {ck['error']}")
            counts["ckpt stricter"] += 1
            continue
        counts["both read"] += 1
        tensors, meta = ref
        mine = {t["name"]: (t["dtype"], t["shape"], t["xxh3"]) for t in ck["tensors"]}
        if mine != tensors:
            bad.append(f"{name}: tensors differ:\n  ckpt {mine}\n  ref  {tensors}")
        if list(ck["metadata"].values()) != [meta]:
            bad.append(f"{name}: metadata differs: ckpt {ck['metadata']}, ref {meta}")
    print(f"{len(inputs)} headers: {counts}")
    assert not bad, f"{len(bad)} disagreement(s):\n" + "\n".join(bad[:20])
    # the generator reaches both sides of the reference
    assert counts["both read"] > 300 and counts["both refuse"] > 300, counts
    for case, want in [("dup-dtype", False), ("lone-surrogate-name", False), ("surrogate-pair", True), ("seq-form", True),
                       ("dtype-map", True), ("depth-127", True), ("depth-128", False), ("unknown-field-twice", True)]:
        assert got[f"case-{case}.safetensors"]["ok"] is want, (case, got[f"case-{case}.safetensors"])


# ---------------------------------------------------------------- indexes

def loader_weight_map(raw):
    """The weight map as transformers / vLLM read the index, or None where
    they fail: json.load (UTF-8 text), then ["weight_map"], a dict whose
    values are joined to the checkpoint folder (so must be strings)."""
    try:
        index = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(index, dict) or "weight_map" not in index:
        return None  # KeyError / TypeError
    wm = index["weight_map"]
    if not isinstance(wm, dict) or not all(isinstance(v, str) for v in wm.values()):
        return None  # AttributeError on .values(), TypeError in os.path.join
    return wm


def text_depth(raw):
    """The deepest nesting of objects and arrays in JSON text."""
    depth = best = 0
    in_str = esc = False
    for c in raw.decode("utf-8"):
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in "[{":
            depth += 1
            best = max(best, depth)
        elif c in "]}":
            depth -= 1
    return best


def _index_features(raw):
    """What in a Python-readable index ckpt refuses by design."""
    feats = set()

    def pairs(kv):
        keys = [k for k, _ in kv]
        if len(keys) != len(set(keys)):
            feats.add("duplicate")
        return dict(kv)

    def walk(v, depth):
        if isinstance(v, str):
            if any(0xD800 <= ord(c) <= 0xDFFF for c in v):
                feats.add("surrogate")
        elif isinstance(v, float) and not np.isfinite(v):
            feats.add("range")
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(k, depth + 1)
                walk(x, depth + 1)
        elif isinstance(v, list) and depth < 100:  # deeper lists hold only lists here
            for x in v:
                walk(x, depth + 1)

    doc = json.loads(raw.decode("utf-8"), object_pairs_hook=pairs,
                     parse_constant=lambda c: feats.add("nan") or 0.0,
                     parse_int=lambda s: feats.add("range") or 0 if len(s.lstrip("-")) > 309 else int(s))
    walk(doc, 1)

    if text_depth(raw) > 512:
        feats.add("depth")
    if "metadata" in doc and doc["metadata"] is not None and not isinstance(doc["metadata"], dict):
        feats.add("metadata")
    return feats


INDEX_STRICTER = {"duplicate": ["duplicate key", "more than once in weight_map"], "surrogate": ["surrogate"],
                  "nan": ["NaN and Infinity are not JSON"], "range": ["number out of range"],
                  "metadata": ["metadata must not be"], "depth": ["nested deeper than 512"]}

SHARDS = ["model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors"]


def gen_index(rng):
    """Index text: a weight map over SHARDS written with variations and
    mutations. Returns the text (bytes)."""
    n = int(rng.integers(1, 6))
    names = list(dict.fromkeys(".".join(str(rng.choice(NAME_PARTS[:12])) for _ in range(rng.integers(1, 4))) for _ in range(n)))
    wm = [(k, str(rng.choice(SHARDS))) for k in names]
    mut = set(rng.choice(["dup_entry", "dup_top", "case", "case_both", "surrogate", "nan", "bignum", "meta_type", "deep",
                          "extra", "value_type", "wm_type", "no_wm", "trailing", "bom", "bytes", "escape", "none", "none", "none"],
                         int(rng.integers(1, 3)), replace=False))
    if "dup_entry" in mut:
        k = wm[int(rng.integers(0, len(wm)))][0]
        wm.append((k, str(rng.choice(SHARDS))))
    entries = ",".join(f"{ws(rng)}{jstr(k, rng)}:{ws(rng)}{jstr(v, rng)}" for k, v in wm)
    if "value_type" in mut:
        entries += ',"z":' + str(rng.choice(["1", "null", '["a"]', "{}"]))
    if "surrogate" in mut:
        entries += ',"w\\ud800":"' + SHARDS[0] + '"'
    wmtext = "{" + entries + "}"
    if "wm_type" in mut:
        wmtext = str(rng.choice(["null", "[]", '"x"', "1"]))
    meta = '{"total_size":' + str(rng.choice(["8", "8.0", '"8"', "1e999" if "bignum" in mut else "0", "NaN" if "nan" in mut else "1"])) + "}"
    if "meta_type" in mut:
        meta = str(rng.choice(["null", "[]", '"x"', "1"]))
    if "deep" in mut:
        meta = '{"x":' + nested(int(rng.choice([100, 510, 511, 600]))) + "}"
    top = [("metadata", meta), ("weight_map", wmtext)]
    if "no_wm" in mut:
        top = [t for t in top if t[0] != "weight_map"]
    if "case" in mut:
        top = [(str(rng.choice(["WEIGHT_MAP", "Weight_Map", "weight_Map"])) if k == "weight_map" else k, v) for k, v in top]
    if "case_both" in mut:
        top.insert(int(rng.integers(0, len(top) + 1)), (str(rng.choice(["WEIGHT_MAP", "Weight_Map"])), '{"other":"' + SHARDS[0] + '"}'))
    if "dup_top" in mut:
        k = str(rng.choice(["weight_map", "metadata"]))
        top.append((k, dict(top).get(k, "{}")))
    if "extra" in mut:
        top.insert(int(rng.integers(0, len(top) + 1)), ("format", str(rng.choice(['"pt"', "[1,2]", "{}", "true"]))))
    if rng.random() < 0.5:
        rng.shuffle(top)
    text = "{" + ",".join(f"{ws(rng)}{jstr(k, rng)}{ws(rng)}:{ws(rng)}{v}" for k, v in top) + ws(rng) + "}"
    if "escape" in mut:
        text = text.replace("model-0000", "model-\\u0030000", 1)
    if "trailing" in mut:
        text += str(rng.choice(["x", ",", "\n", "}"]))
    if "bom" in mut:
        text = "\ufeff" + text
    raw = text.encode("utf-8", "surrogatepass")
    if "bytes" in mut:
        b = bytearray(raw)
        i = int(rng.integers(0, len(b)))
        b[i] = int(rng.choice(list(b'{}[]",:\\ x\xff')))
        raw = bytes(b)
    return raw


def write_shards(d, wm):
    """Shards holding exactly the tensors of wm (name -> shard), 4 bytes
    each; SHARDS not named stay absent."""
    by = {}
    for k, v in wm.items():
        by.setdefault(v, []).append(k)
    for shard, names in by.items():
        hdr, off = {}, 0
        for n in sorted(names):
            hdr[n] = {"dtype": "U8", "shape": [4], "data_offsets": [off, off + 4]}
            off += 4
        h = json.dumps(hdr).encode()
        data = b"".join(xxhash.xxh3_64_digest(n.encode())[:4] for n in sorted(names))
        (d / shard).write_bytes(struct.pack("<Q", len(h)) + h + data)


def test_indexes_agree_with_loaders(stdump, tmp_path):
    rng = np.random.default_rng(2027)
    inputs = [(f"g{i:04d}", gen_index(rng)) for i in range(N_INDEXES)]
    corpus = tmp_path / "corpus"
    subprocess.run([stdump, "corpus", str(corpus)], check=True)
    for p in sorted((corpus / "indexes").iterdir()):
        inputs.append((f"corpus-{p.stem}", p.read_bytes()))
    full = {f"t{i}": SHARDS[i % 3] for i in range(6)}
    inputs += [  # issue #27 case 4
        ("case-only-WEIGHT_MAP", json.dumps({"metadata": {}, "WEIGHT_MAP": full}).encode()),
        ("case-weight_map-then-Weight_Map", ('{"weight_map":{"t0":"%s"},"Weight_Map":%s}' % (SHARDS[0], json.dumps(full))).encode()),
        ("case-Weight_Map-then-weight_map", ('{"Weight_Map":%s,"weight_map":{"t0":"%s"}}' % (json.dumps(full), SHARDS[0])).encode()),
    ]
    d = tmp_path / "in"
    d.mkdir()
    for name, raw in inputs:
        cd = d / name
        cd.mkdir()
        (cd / "model.safetensors.index.json").write_bytes(raw)
        wm = loader_weight_map(raw)
        if wm is not None and all(v in SHARDS for v in wm.values()) and not any(
                0xD800 <= ord(c) <= 0xDFFF for k in wm for c in k):
            write_shards(cd, wm)
        else:
            write_shards(cd, {f"t{i}": s for i, s in enumerate(SHARDS)})
    got = ckpt_read(stdump, d)
    counts = {"both refuse": 0, "both read": 0, "ckpt stricter": 0}
    bad = []
    for name, raw in inputs:
        wm, ck = loader_weight_map(raw), got[name]
        if wm is None:
            if ck["ok"]:
                bad.append(f"{name}: the loaders fail on it, ckpt reads {ck['tensors']}: {raw[:200]!r}")
            counts["both refuse"] += 1
            continue
        if not ck["ok"]:
            if not all(v in SHARDS for v in wm.values()) and "weight_map names shard" in ck["error"]:
                # a shard that does not exist (or is "", or outside the
                # folder): the loaders fail to open it too
                counts["both refuse"] += 1
                continue
            feats = _index_features(raw)
            if not any(r in ck["error"] for f in feats for r in INDEX_STRICTER[f]):
                bad.append(f"{name}: the loaders read {wm}, ckpt refuses (features {feats}): {ck['error']}\n  {raw[:300]!r}")
            counts["ckpt stricter"] += 1
            continue
        counts["both read"] += 1
        mine = {t["name"]: t["file"] for t in ck["tensors"]}
        if mine != wm:
            bad.append(f"{name}: weight maps differ: ckpt {mine}, loaders {wm}: {raw[:300]!r}")
    print(f"{len(inputs)} indexes: {counts}")
    assert not bad, f"{len(bad)} disagreement(s):\n" + "\n".join(bad[:20])
    assert counts["both read"] > 100 and counts["both refuse"] > 50, counts
    assert not got["case-only-WEIGHT_MAP"]["ok"]
    for case in ("case-weight_map-then-Weight_Map", "case-Weight_Map-then-weight_map"):
        assert [t["name"] for t in got[case]["tensors"]] == ["t0"], got[case]
