"""Random small base / fine-tune pairs for the property test
(test_property.py), and the independent numpy computation of what ckpt
must say about them.

A case is a seed. From it come a base checkpoint (a few decoder layers,
maybe an MTP head, a vision block and an integer buffer; BF16 / F16 / F32
tensors and block-FP8 F8_E4M3 weights with weight_scale_inv companions in
F32 / BF16 / F16; one .safetensors file or shards with an index; a flat or a
nested text_config) and a fine-tune made by a few random edits of it
(values, scales, dtypes, shapes, removed and added tensors, dropped scales,
weight_scale companions, requantisable dequantised copies, config edits).
Everything ckpt is checked against is computed here from the tensors as
numpy and ml_dtypes see them, never from ckpt's output."""

import json

import ml_dtypes
import numpy as np

from stlib import NP, ref_write, values
from test_numerics import e4m3_satfinite, numpy_quantise

WIDE = ("BF16", "F16", "F32")
SCALE = "_scale_inv"
BLOCKS = [(4, 8), (8, 8), (8, 4), (4, 4), (16, 8)]

# config keys by what verify --against must make of a change (#21):
# bookkeeping keys (those of docs/formats.md the generator edits) may
# change, at any depth, every other key may not.
BOOKKEEPING = {"_name_or_path", "transformers_version", "torch_dtype", "dtype", "use_cache", "temperature", "max_length"}


# ---------------------------------------------------------------- generation

class Ckpt:
    """A checkpoint in memory: tensors {name: (dtype, shape, bytes)}, its
    config and how it is stored."""

    def __init__(self, tensors, config, shards):
        self.tensors, self.config, self.shards = tensors, config, shards

    def copy(self):
        return Ckpt(dict(self.tensors), json.loads(json.dumps(self.config)), self.shards)

    def block(self):
        q = self.config.get("quantization_config")
        return tuple(q["weight_block_size"]) if q else None

    def write(self, d, rng):
        """Writes the checkpoint into directory d with the reference writer:
        one model.safetensors, or self.shards shards and an index."""
        d.mkdir(parents=True)
        names = sorted(self.tensors)
        if self.shards <= 1:
            ref_write(d / "model.safetensors", self.tensors, {"format": "pt"})
        else:
            n = min(self.shards, len(names))
            files = [f"model-{k + 1:05d}-of-{n:05d}.safetensors" for k in range(n)]
            where = {name: files[i % n] if i < n else files[int(rng.integers(0, n))] for i, name in enumerate(names)}
            for f in files:
                ref_write(d / f, {k: v for k, v in self.tensors.items() if where[k] == f}, {"format": "pt"})
            index = {"metadata": {"total_size": sum(len(t[2]) for t in self.tensors.values())}, "weight_map": where}
            (d / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
        (d / "config.json").write_text(json.dumps(self.config, indent=2))


def text_cfg(cfg):
    return cfg["text_config"] if "text_config" in cfg else cfg


def fp8_tensor(w, bm, bn, sdt):
    """Block-FP8 codes and scales of float32 weights w, by the recipe."""
    with np.errstate(all="ignore"):
        codes, scales = numpy_quantise(w, bm, bn, sdt)
    return codes, scales.astype(NP[sdt])


def wide_bytes(w, dt):
    return np.ascontiguousarray(w.astype(NP[dt])).tobytes()


class Case:
    """One random pair. Every random choice comes from its seed."""

    def __init__(self, seed):
        self.seed = seed
        rng = np.random.default_rng(seed)
        self.rng = rng
        self.edits = []  # what was done to the fine-tune, for messages
        self.base = self._base(rng)
        self.ft = self._finetune(rng)
        self.sample_bytes = int(rng.choice([48, 96, 192, 384, 768]))
        self.sample_seed = int(rng.integers(0, 1 << 32))
        self.read_data = rng.random() < 0.8  # contract and verify --read-data
        self.exclude_nothing = rng.random() < 0.08
        self.extract_dtype = str(rng.choice(["bf16", "bf16", "f32", "f16", "keep"]))
        self.extract_shard = rng.random() < 0.3
        # verify --allow-config: a changed path (or its parent) accepted,
        # or a path that names no config key (an error)
        changed = [p for p in config_diff(self.base.config, self.ft.config) if leaf(p) not in BOOKKEEPING]
        self.allow = []
        if changed and rng.random() < 0.4:
            p = changed[int(rng.integers(len(changed)))]
            self.allow = [p.rsplit(".", 1)[0] if "." in p and rng.random() < 0.3 else p]
        self.allow_bad = rng.random() < 0.04

    def __repr__(self):
        flags = {"read_data": self.read_data, "allow_config": self.allow, "allow_bad": self.allow_bad,
                 "exclude_nothing": self.exclude_nothing, "sample_bytes": self.sample_bytes, "extract": self.extract_dtype}
        return f"case seed={self.seed} (CKPT_PROPERTY_CASE={self.seed}): {'; '.join(self.edits) or 'identical copy'}; {flags}"

    # -- the base
    def _base(self, rng):
        self.fp8 = rng.random() < 0.75
        self.bm, self.bn = BLOCKS[int(rng.integers(len(BLOCKS)))]
        self.sdt = str(rng.choice(["F32", "BF16", "F16"]))
        nested = rng.random() < 0.35
        h = int(rng.integers(4, 29))
        inter = int(rng.integers(4, 41))
        vocab = int(rng.integers(4, 25))
        layers = int(rng.integers(1, 4))
        pre = "model.language_model." if nested else "model."
        self.latent = {}  # float32 weights the FP8 tensors were quantised from
        t = {}

        def linear(name, shape, fp8_ok=True):
            w = (rng.standard_normal(shape) * 10.0 ** rng.uniform(-3, 1)).astype(np.float32)
            if self.fp8 and fp8_ok and rng.random() < 0.75:
                sdt = self.sdt if rng.random() < 0.9 else str(rng.choice(["F32", "BF16", "F16"]))
                w = w.astype(ml_dtypes.bfloat16).astype(np.float32)  # quantised from a bf16 master
                codes, scales = fp8_tensor(w, self.bm, self.bn, sdt)
                t[name] = ("F8_E4M3", list(shape), codes.tobytes())
                t[name + SCALE] = (sdt, list(scales.shape), scales.tobytes())
                self.latent[name] = w
            else:
                dt = str(rng.choice(WIDE))
                t[name] = (dt, list(shape), wide_bytes(w, dt))

        def norm(name, n):
            w = (1 + 0.1 * rng.standard_normal(n)).astype(np.float32)
            dt = str(rng.choice(["BF16", "F32"]))
            t[name] = (dt, [n], wide_bytes(w, dt))

        for i in range(layers):
            p = f"{pre}layers.{i}."
            parts = {"self_attn.q_proj.weight": (h, h), "self_attn.o_proj.weight": (h, h),
                     "mlp.up_proj.weight": (inter, h), "mlp.down_proj.weight": (h, inter)}
            keep = [k for k in parts if rng.random() < 0.6] or ["mlp.up_proj.weight"]
            for k in keep:
                linear(p + k, parts[k])
            norm(p + "input_layernorm.weight", h)
        linear(pre + "embed_tokens.weight", (vocab, h), fp8_ok=False)
        norm(pre + "norm.weight", h)
        if rng.random() < 0.5:
            linear("lm_head.weight", (vocab, h))
        if rng.random() < 0.5:
            linear("mtp.fc.weight", (h, 2 * h))
            linear("mtp.layers.0.mlp.up_proj.weight", (inter, h))
            norm("mtp.norm.weight", h)
        if rng.random() < 0.35:
            linear("model.visual.blocks.0.attn.qkv.weight", (3 * 4, 4))
            norm("model.visual.blocks.0.norm1.weight", 4)
        if rng.random() < 0.25:
            ids = rng.integers(0, 1000, int(rng.integers(2, 12)), dtype=np.int32)
            t["model.visual.pos_ids"] = ("I32", [ids.size], ids.tobytes())
        if self.fp8 and not any(v[0] == "F8_E4M3" for v in t.values()):
            self.fp8 = False
        text = {"hidden_size": h, "intermediate_size": inter, "num_hidden_layers": layers, "num_attention_heads": 2,
                "vocab_size": vocab, "rms_norm_eps": 1e-6, "hidden_act": "silu", "attention_dropout": 0.0}
        if rng.random() < 0.5:
            text["rope_theta"] = 1000000.0
        else:
            text["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000000, "partial_rotary_factor": 0.25}
        cfg = {"_name_or_path": "org/base", "architectures": ["InteropForCausalLM"], "model_type": "interop",
               "torch_dtype": "bfloat16", "transformers_version": "4.57.1"}
        if nested:
            cfg["text_config"] = dict(text, model_type="interop_text")
        else:
            cfg.update(text)
        if self.fp8:
            cfg["quantization_config"] = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                                          "weight_block_size": [self.bm, self.bn]}
        return Ckpt(t, cfg, 1 if rng.random() < 0.5 else int(rng.integers(2, 4)))

    # -- the fine-tune
    def _finetune(self, rng):
        ft = self.base.copy()
        ft.shards = 1 if rng.random() < 0.5 else int(rng.integers(2, 4))
        n = int(rng.choice([0, 1, 1, 2, 2, 3, 4]))
        ops = [self._values, self._values, self._rescale, self._requant_copy, self._requant_copy, self._dequant_changed,
               self._wide_dtype, self._quantise, self._reshape, self._remove, self._drop_scale, self._add,
               self._weight_scale, self._scale_dtype, self._config, self._config, self._zero_sign]
        for _ in range(n):
            ops[int(rng.integers(len(ops)))](rng, ft)
        return ft

    def _pick(self, rng, ft, pred):
        names = sorted(n for n, v in ft.tensors.items() if pred(n, v))
        return names[int(rng.integers(len(names)))] if names else None

    def _is_fp8_weight(self, ft):
        return lambda n, v: v[0] == "F8_E4M3" and n + SCALE in ft.tensors and n in self.base.tensors \
            and ft.tensors[n + SCALE] == self.base.tensors.get(n + SCALE) and ft.tensors[n] == self.base.tensors[n]

    def _values(self, rng, ft):
        n = self._pick(rng, ft, lambda n, v: not n.endswith(SCALE) and v[0] != "I32")
        if n is None:
            return
        dt, shape, data = ft.tensors[n]
        frac = float(rng.choice([1.0, 0.3, 0.05]))
        if dt == "F8_E4M3":
            c = np.frombuffer(data, np.uint8).copy()
            idx = rng.random(c.size) < frac
            idx[int(rng.integers(c.size))] = True
            c[idx] = (c[idx].astype(np.int32) + rng.integers(1, 4, idx.sum())) % 256
            c[(c & 0x7F) == 0x7F] = 0x3C  # no NaN codes
            ft.tensors[n] = (dt, shape, c.tobytes())
        else:
            a = values(dt, data).astype(np.float32).copy()
            idx = rng.random(a.size) < frac
            idx[int(rng.integers(a.size))] = True
            a[idx] += (np.abs(a[idx]) + 1e-3) * rng.choice([-1, 1], idx.sum()) * rng.uniform(0.05, 1, idx.sum())
            ft.tensors[n] = (dt, shape, wide_bytes(a, dt))
        self.edits.append(f"values of {n} ({frac:g})")

    def _zero_sign(self, rng, ft):
        """FP8 zeros of one weight stored with the other sign (+0 ↔ -0):
        the same values."""
        n = self._pick(rng, ft, lambda n, v: v[0] == "F8_E4M3" and (np.frombuffer(v[2], np.uint8) & 0x7F == 0).any())
        if n is None:
            return
        dt, shape, data = ft.tensors[n]
        c = np.frombuffer(data, np.uint8).copy()
        z = np.flatnonzero(c & 0x7F == 0)
        c[z[rng.random(z.size) < 0.7]] ^= 0x80
        ft.tensors[n] = (dt, shape, c.tobytes())
        self.edits.append(f"sign of FP8 zeros of {n} flipped")

    def _rescale(self, rng, ft):
        n = self._pick(rng, ft, self._is_fp8_weight(ft))
        if n is None:
            return
        sdt, sshape, sdata = ft.tensors[n + SCALE]
        s = values(sdt, sdata).astype(np.float32).copy()
        s[int(rng.integers(s.size))] *= 2
        ft.tensors[n + SCALE] = (sdt, sshape, wide_bytes(s, sdt))
        self.edits.append(f"one block scale of {n} doubled")

    def _requant_copy(self, rng, ft):
        """An FP8 weight replaced by the bf16 / f32 master it was quantised
        from, its scale dropped: requant_identical."""
        n = self._pick(rng, ft, self._is_fp8_weight(ft))
        if n is None:
            return
        dt = str(rng.choice(["BF16", "F32"]))
        ft.tensors[n] = (dt, ft.tensors[n][1], wide_bytes(self.latent[n], dt))
        del ft.tensors[n + SCALE]
        self.edits.append(f"{n} → its {dt} master, scale dropped")

    def _dequant_changed(self, rng, ft):
        n = self._pick(rng, ft, self._is_fp8_weight(ft))
        if n is None:
            return
        w = self.latent[n].copy()
        w.ravel()[int(rng.integers(w.size))] *= 1.7
        ft.tensors[n] = ("BF16", ft.tensors[n][1], wide_bytes(w, "BF16"))
        del ft.tensors[n + SCALE]
        self.edits.append(f"{n} → changed BF16, scale dropped")

    def _wide_dtype(self, rng, ft):
        n = self._pick(rng, ft, lambda n, v: v[0] in WIDE and not n.endswith(SCALE))
        if n is None:
            return
        dt, shape, data = ft.tensors[n]
        to = str(rng.choice([d for d in WIDE if d != dt]))
        with np.errstate(all="ignore"):
            ft.tensors[n] = (to, shape, wide_bytes(values(dt, data).astype(np.float32), to))
        self.edits.append(f"{n} {dt} → {to}")

    def _quantise(self, rng, ft):
        """A wide 2-D weight of an FP8 checkpoint quantised by the recipe,
        with its scale: a requant pair the other way round."""
        if not self.fp8:
            return
        n = self._pick(rng, ft, lambda n, v: v[0] in WIDE and len(v[1]) == 2 and n.endswith("proj.weight")
                       and n + SCALE not in ft.tensors)
        if n is None:
            return
        dt, shape, data = ft.tensors[n]
        codes, scales = fp8_tensor(values(dt, data, shape).astype(np.float32), self.bm, self.bn, self.sdt)
        ft.tensors[n] = ("F8_E4M3", shape, codes.tobytes())
        ft.tensors[n + SCALE] = (self.sdt, list(scales.shape), scales.tobytes())
        self.edits.append(f"{n} {dt} quantised to FP8 with {self.sdt} scales")

    def _reshape(self, rng, ft):
        n = self._pick(rng, ft, lambda n, v: not n.endswith(SCALE) and v[0] != "I32" and len(v[1]) == 2)
        if n is None:
            return
        dt, shape, data = ft.tensors[n]
        new = [shape[0] + (self.bm if dt == "F8_E4M3" else 1), shape[1]]
        w = (rng.standard_normal(new) * 0.1).astype(np.float32)
        if dt == "F8_E4M3" and n + SCALE in ft.tensors:
            sdt = ft.tensors[n + SCALE][0]
            codes, scales = fp8_tensor(w, self.bm, self.bn, sdt)
            ft.tensors[n] = (dt, new, codes.tobytes())
            ft.tensors[n + SCALE] = (sdt, list(scales.shape), scales.tobytes())
        elif dt == "F8_E4M3":
            ft.tensors[n] = (dt, new, fp8_tensor(w, self.bm, self.bn, "F32")[0].tobytes())
        else:
            ft.tensors[n] = (dt, new, wide_bytes(w, dt))
        self.edits.append(f"{n} reshaped {shape} → {new}")

    def _remove(self, rng, ft):
        n = self._pick(rng, ft, lambda n, v: not n.endswith(SCALE))
        if n is None or len([k for k in ft.tensors if not k.endswith(SCALE)]) < 2:
            return
        del ft.tensors[n]
        ft.tensors.pop(n + SCALE, None)
        self.edits.append(f"{n} removed")

    def _drop_scale(self, rng, ft):
        n = self._pick(rng, ft, lambda n, v: v[0] == "F8_E4M3" and n + SCALE in ft.tensors)
        if n is None:
            return
        del ft.tensors[n + SCALE]
        self.edits.append(f"{n + SCALE} dropped (FP8 weight without its scale)")

    def _add(self, rng, ft):
        pre = "model.language_model." if "text_config" in ft.config else "model."
        n = str(rng.choice([pre + "layers.0.self_attn.k_norm.weight", "mtp.layers.0.input_layernorm.weight",
                            pre + "layers.0.mlp.gate.bias", "model.visual.merger.norm.weight"]))
        if n in ft.tensors:
            return
        k = int(rng.integers(2, 9))
        dt = str(rng.choice(WIDE))
        ft.tensors[n] = (dt, [k], wide_bytes(rng.standard_normal(k).astype(np.float32), dt))
        self.edits.append(f"{n} added")

    def _weight_scale(self, rng, ft):
        """An FP8 weight gets a compressed-tensors style weight_scale [N, 1]
        companion (an unknown scale for block FP8), sometimes instead of its
        weight_scale_inv."""
        n = self._pick(rng, ft, lambda n, v: v[0] == "F8_E4M3" and n.endswith(".weight") and n + "_scale" not in ft.tensors)
        if n is None:
            return
        rows = ft.tensors[n][1][0]
        s = (2.0 ** rng.uniform(-8, 0, (rows, 1))).astype(np.float32)
        ft.tensors[n + "_scale"] = ("F32", [rows, 1], s.tobytes())
        if rng.random() < 0.5 and n + SCALE in ft.tensors:
            del ft.tensors[n + SCALE]
            self.edits.append(f"{n}: weight_scale [N,1] instead of its weight_scale_inv")
        else:
            self.edits.append(f"{n}: weight_scale [N,1] added")

    def _scale_dtype(self, rng, ft):
        n = self._pick(rng, ft, self._is_fp8_weight(ft))
        if n is None:
            return
        sdt, sshape, sdata = ft.tensors[n + SCALE]
        to = str(rng.choice([d for d in ("F32", "BF16", "F16") if d != sdt]))
        s = values(sdt, sdata).astype(np.float32)
        ft.tensors[n + SCALE] = (to, sshape, wide_bytes(s, to))
        self.edits.append(f"{n + SCALE} {sdt} → {to}")

    def _config(self, rng, ft):
        t = text_cfg(ft.config)
        kind = str(rng.choice(["nonarch", "nonarch", "arch", "bookkeeping"]))
        if kind == "nonarch":
            key = str(rng.choice(["rms_norm_eps", "hidden_act", "rope_theta", "attention_dropout"]))
            if key == "rms_norm_eps":
                t[key] = 1e-5
            elif key == "hidden_act":
                t[key] = "gelu"
            elif key == "attention_dropout":
                t[key] = 0.1
            elif "rope_parameters" in t:
                t["rope_parameters"]["rope_theta"] = 5000000
            else:
                t["rope_theta"] = 500000.0
        elif kind == "arch":
            key = "num_attention_heads"
            t[key] = 4
        else:
            key = str(rng.choice(sorted(BOOKKEEPING)))
            value = {"_name_or_path": "org/ft", "transformers_version": "4.58.0", "torch_dtype": "float32",
                     "dtype": "bfloat16", "use_cache": False, "temperature": 0.6, "max_length": 4096}[key]
            (t if key in ("use_cache", "max_length") else ft.config)[key] = value
        self.edits.append(f"config {key} edited ({kind})")


# ---------------------------------------------------------------- the oracle

def canon(codes):
    """The representative of each E4M3 code's value: ±0 → 0, NaN → 0x7f."""
    c = codes.copy()
    low = c & 0x7F
    c[low == 0] = 0
    c[low > 0x7E] = 0x7F
    return c


def same_value(a, b):
    return (a == b) | (np.isnan(a) & np.isnan(b))


def scaled(ck, name):
    """Whether the tensor is a block-FP8 weight dequantised with a scale."""
    return ck.tensors[name][0] == "F8_E4M3" and name + SCALE in ck.tensors and ck.block() is not None


def f32_values(ck, name):
    """float32 values as ckpt reads them: F8_E4M3 with a weight_scale_inv
    as code × its block's scale (a float32 product), the rest decoded."""
    dt, shape, data = ck.tensors[name]
    v = values(dt, data, shape).astype(np.float32)
    if scaled(ck, name):
        bm, bn = ck.block()
        sdt, sshape, sdata = ck.tensors[name + SCALE]
        s = values(sdt, sdata, sshape).astype(np.float32)
        v = v * np.repeat(np.repeat(s, bm, 0), bn, 1)[: shape[0], : shape[1]]
    return v.ravel()


def stats(a, b):
    """max_abs_diff, rel_l2 and cosine of float32 values a (base), b (ft)
    as numpy computes them in float64."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    d = b - a
    ss = float(d @ d)
    nb, nf = float(np.sqrt(a @ a)), float(np.sqrt(b @ b))
    rel = 0.0 if ss == 0 else (np.sqrt(ss) / nb if nb else np.inf)
    if nb == 0 and nf == 0:
        cos = 1.0
    elif nb == 0 or nf == 0:
        cos = 0.0
    else:
        cos = float(np.clip(float(a @ b) / (nb * nf), -1, 1))
    return {"max_abs_diff": float(np.abs(d).max()) if d.size else 0.0, "rel_l2": float(rel), "cosine": cos}


IDENTICAL_STATS = {"changed_elems": 0, "max_abs_diff": 0.0, "rel_l2": 0.0, "cosine": 1.0}


class Pair:
    """One tensor name of a case, compared by numpy."""

    def __init__(self, case, name):
        self.name = name
        b, f = case.base, case.ft
        self.inb, self.inf = name in b.tensors, name in f.tensors
        self.bt = b.tensors.get(name)
        self.ft = f.tensors.get(name)
        self.kind = None
        if not self.inf:
            self.relation = "only_in_base"
        elif not self.inb:
            self.relation = "only_in_ft"
        elif list(self.bt[1]) != list(self.ft[1]):
            self.relation = "shape_changed"
        elif self.bt[0] == "I32" or self.ft[0] == "I32":
            if self.bt[0] != self.ft[0]:
                self.relation = "dtype_changed"
            else:
                self.kind = "raw"
        else:
            bs, fs = scaled(b, name), scaled(f, name)
            if self.bt[0] == self.ft[0]:
                self.kind = "same"
            elif bs and not fs and self.ft[0] in WIDE + ("F64",):
                self.kind = "requant"
            elif fs and not bs and self.bt[0] in WIDE + ("F64",):
                self.kind = "requant"
            else:
                self.kind = "cross"
        if self.kind is None:
            return
        shape = self.bt[1]
        self.numel = int(np.prod(shape))
        if self.kind == "raw":
            w = 4
            eb = np.frombuffer(self.bt[2], np.uint8).reshape(-1, w)
            ef = np.frombuffer(self.ft[2], np.uint8).reshape(-1, w)
            self.elem_changed = (eb != ef).any(axis=1)
            return
        self.vb, self.vf = f32_values(b, name), f32_values(f, name)
        if self.kind == "same" and self.bt[0] == "F8_E4M3":
            cb = canon(np.frombuffer(self.bt[2], np.uint8))
            cf = canon(np.frombuffer(self.ft[2], np.uint8))
            self.elem_changed = (cb != cf) | ~same_value(self.vb, self.vf)
            rb, rf = np.frombuffer(self.bt[2], np.uint8), np.frombuffer(self.ft[2], np.uint8)
            self.zero_sign = (rb != rf) & (cb == cf) & (rb & 0x7F == 0)
        elif self.kind == "same":
            w = np.dtype(NP[self.bt[0]]).itemsize
            eb = np.frombuffer(self.bt[2], np.uint8).reshape(-1, w)
            ef = np.frombuffer(self.ft[2], np.uint8).reshape(-1, w)
            self.elem_changed = (eb != ef).any(axis=1)
        else:  # values differ as float32 bit patterns
            self.elem_changed = self.vb.view(np.uint32) != self.vf.view(np.uint32)
        if self.kind == "requant":
            q, qck, wv = (self.bt, b, self.vf) if bs else (self.ft, f, self.vb)
            bm, bn = qck.block()
            sdt, sshape, sdata = qck.tensors[name + SCALE]
            rows, cols = shape
            with np.errstate(all="ignore"):
                codes, scales = numpy_quantise(wv.reshape(rows, cols), bm, bn, sdt)
            stored = values(sdt, sdata, sshape).astype(np.float32)
            qc = np.frombuffer(q[2], np.uint8).reshape(rows, cols)
            bad = canon(codes) != canon(qc)
            self.code_bad = bad.ravel()
            self.zero_sign = ((codes != qc) & ~bad & (qc & 0x7F == 0)).ravel()
            sr, sc = sshape
            blk = np.zeros((sr, sc), dtype=bool)
            for i in range(sr):
                for j in range(sc):
                    blk[i, j] = bad[i * bm:(i + 1) * bm, j * bn:(j + 1) * bn].any() or not same_value(scales[i, j], stored[i, j])
            self.block_bad, self.q_bm, self.q_bn, self.cols = blk, bm, bn, cols
            self.scale_bad = ~same_value(scales, stored)  # per block: not the recipe's scale
            # What a sample checks (docs/sampling.md): the wider side
            # re-quantised with the stored scale of each element's block
            # against the codes (a zero scale: zero codes); whether a stored
            # scale is the recipe's needs the whole block and is not checked.
            sfull = np.repeat(np.repeat(stored, bm, 0), bn, 1)[:rows, :cols]
            with np.errstate(all="ignore"):
                sc_codes = np.where(sfull != 0, e4m3_satfinite((wv.reshape(rows, cols) / sfull).astype(np.float32)), 0)
            sc_codes = sc_codes.astype(np.uint8)
            sbad = canon(sc_codes) != canon(qc)
            self.code_bad_stored = sbad.ravel()
            self.zero_sign_stored = ((sc_codes != qc) & ~sbad & (qc & 0x7F == 0)).ravel()

    def expect(self, sel=None):
        """The row ckpt diff must give, over all elements or the flat
        element indices sel (a sample): relation and the statistics."""
        if self.kind is None:
            return {"relation": self.relation}
        ch = self.elem_changed if sel is None else self.elem_changed[sel]
        n_ch = int(ch.sum())
        out = {"changed_elems": n_ch}
        if hasattr(self, "zero_sign"):
            zsa = self.zero_sign_stored if sel is not None and self.kind == "requant" else self.zero_sign
            zs = int((zsa if sel is None else zsa[sel]).sum())
            out["zero_sign_codes"] = zs or None  # JSON: left out when 0
        if self.kind == "raw":
            out["relation"] = "changed" if n_ch else "identical"
            return out
        if self.kind == "same":
            out["relation"] = "changed" if n_ch else "identical"
            if not n_ch:
                return dict(out, **IDENTICAL_STATS)
        elif self.kind == "cross":
            out["relation"] = "dtype_changed"
        vb, vf = (self.vb, self.vf) if sel is None else (self.vb[sel], self.vf[sel])
        out.update(stats(vb, vf))
        if self.kind == "requant":
            if sel is None:
                qe, qb = int(self.code_bad.sum()), int(self.block_bad.sum())
            else:
                # A sample: the sampled codes against the stored scales; the
                # distinct blocks holding a sampled code that differs, or
                # sampled whole with a scale that is not the recipe's.
                sc = -(-self.cols // self.q_bn)
                blk_of = lambda i: (i // self.cols // self.q_bm) * sc + i % self.cols // self.q_bn  # noqa: E731
                bad = sel[self.code_bad_stored[sel]]
                seen = np.bincount(blk_of(sel), minlength=self.scale_bad.size)
                size = np.bincount(blk_of(np.arange(self.numel)), minlength=self.scale_bad.size)
                whole_bad = np.flatnonzero((seen == size) & self.scale_bad.ravel())
                qe, qb = int(bad.size), int(np.union1d(blk_of(bad), whole_bad).size)
            out["requant_mismatch_elems"], out["requant_mismatch_blocks"] = qe, qb
            out["relation"] = "requant_identical" if qe == 0 and qb == 0 else "dtype_changed"
        return out


def group_of(name):
    """(group, layer) as the README defines the groups; layer is -1
    outside the decoder layers."""
    if name.startswith("mtp."):
        return "mtp", -1
    if name.startswith("model.visual.") or name.startswith("visual."):
        return "visual", -1
    parts = name.split(".")
    for i, p in enumerate(parts[:-1]):
        if p == "layers" and parts[i + 1].isdigit():
            return "text_layers", int(parts[i + 1])
    return "other", -1


def config_diff(b, f, prefix=""):
    """Paths of config differences: objects by key, lists of one length by
    index, other values by JSON equality (numbers by value)."""
    out = []
    for k in sorted(set(b) | set(f)):
        p = f"{prefix}.{k}" if prefix else k
        if k not in f or k not in b:
            out.append(p)
        else:
            out += value_diff(p, b[k], f[k])
    return out


def value_diff(p, x, y):
    if isinstance(x, dict) and isinstance(y, dict):
        return config_diff(x, y, p)
    if isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        return [q for i in range(len(x)) for q in value_diff(f"{p}[{i}]", x[i], y[i])]
    if isinstance(x, bool) or isinstance(y, bool) or isinstance(x, str) or isinstance(y, str):
        return [] if type(x) is type(y) and x == y else [p]
    return [] if x == y else [p]


def leaf(path):
    return path.split(".")[-1].split("[")[0]
