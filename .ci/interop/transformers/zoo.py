"""The session's checkpoints (conftest's zoo fixture): each made by tflib
once, on first use, under one temporary directory, and kept with what
transformers and torch say of it (the model, its num_parameters(), the
tensors added beside transformers' own)."""

import dataclasses
import os

import torch

import tflib

# Every class and every layout of the saves; Qwen3_5ForConditionalGeneration
# (with its MTP head) in every dtype.
KINDS = list(tflib.CLASSES)
LAYOUTS = ("single", "sharded", "variant")
SAVES = [("qwen3_5", dt, lay) for dt in ("bf16", "f16", "f32") for lay in LAYOUTS] + [
    (k, "bf16", lay) for k in KINDS if k != "qwen3_5" for lay in LAYOUTS]
# FP8 checkpoints written by the FineGrainedFP8 quantizer (fp8 below).
# "release": modules_to_not_convert as the released Qwen3.5 FP8 files list
# them (every Linear transformers would otherwise convert but the released
# file keeps in BF16: lm_head, in_proj_a/b, the vision tower, mtp.fc);
# "default": FineGrainedFP8Config() as it comes; "ue8m0": the release list
# with scale_fmt="ue8m0"; "visual": the release list with the vision entry
# written "visual" (should_convert_module: a suffix, so model.visual's
# children are converted).
RELEASE_SKIP = ["lm_head", "model.visual", "linear_attn.in_proj_a", "linear_attn.in_proj_b", "mtp.fc"]
FP8 = {
    "release": dict(modules_to_not_convert=RELEASE_SKIP),
    "default": dict(),
    "ue8m0": dict(modules_to_not_convert=RELEASE_SKIP, scale_fmt="ue8m0"),
    "visual": dict(modules_to_not_convert=[("visual" if m == "model.visual" else m) for m in RELEASE_SKIP]),
}


def case_id(kind, dtype, layout):
    return f"{kind}-{dtype}-{layout}"


@dataclasses.dataclass(frozen=True)
class Case:
    """One save of SAVES, before it is made (a test's parameter)."""
    kind: str
    dtype: str
    layout: str

    @property
    def id(self):
        return case_id(self.kind, self.dtype, self.layout)


CASES = [Case(*s) for s in SAVES]


@dataclasses.dataclass
class Saved:
    """A checkpoint directory and what its writer knows of it."""
    dir: str
    kind: str
    dtype: str
    layout: str
    variant: str | None
    num_parameters: int  # model.num_parameters() of the model saved
    extra: dict  # tensors added beside transformers' own (the MTP head)

    @property
    def id(self):
        return case_id(self.kind, self.dtype, self.layout)

    def variant_args(self):
        """ckpt's flags that select this save's variant, as
        from_pretrained(variant=) does."""
        return ["--variant", self.variant] if self.variant else []


class Zoo:
    def __init__(self, root):
        self.root = str(root)
        self._models = {}
        self._saves = {}
        self._other = {}

    def path(self, *parts):
        p = os.path.join(self.root, *parts)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        return p

    def model(self, kind, dtype="bf16"):
        key = (kind, dtype)
        if key not in self._models:
            self._models[key] = tflib.make_model(kind, tflib.DTYPES[dtype])
        return self._models[key]

    def mtp(self, kind, dtype="bf16"):
        """The MTP head attached to every save of a
        Qwen3_5ForConditionalGeneration (none for the other classes)."""
        if kind != "qwen3_5":
            return {}
        return tflib.mtp_tensors(self.model(kind, dtype))

    def save(self, kind, dtype="bf16", layout="single"):
        """The Saved of save_pretrained(layout) of model(kind, dtype); kind
        may be a Case."""
        if isinstance(kind, Case):
            kind, dtype, layout = kind.kind, kind.dtype, kind.layout
        key = (kind, dtype, layout)
        if key not in self._saves:
            m = self.model(kind, dtype)
            extra = self.mtp(kind, dtype)
            d = self.path("saves", case_id(*key))
            variant = tflib.save(m, d, layout=layout, mtp=extra or None)
            self._saves[key] = Saved(d, kind, dtype, layout, variant, m.num_parameters(), extra)
        return self._saves[key]

    def once(self, name, make):
        """make(dir) run once into a fresh directory named name; returns
        what make returned (the directory when it returns None)."""
        if name not in self._other:
            d = self.path(name)
            r = make(d)
            self._other[name] = d if r is None else r
        return self._other[name]

    def fp8(self, flavour, kind="qwen3_5"):
        """(dir, quantised model, {name: tensor} as written) of the
        FineGrainedFP8 checkpoint of the bf16 single-file save of kind, the
        MTP head (Qwen3.5) quantised by the same quantizer's Fp8Quantize
        (each module that should_convert_module converts under the same
        list, but mtp.fc, BF16 in every released FP8 file) and added as the
        release carries it. For a class other than
        Qwen3.5 the release list is ["lm_head"], for GPT-OSS ["lm_head",
        "mlp.experts"]: FP8Experts refuses expert biases (its __init__
        asserts has_bias is False, integrations/finegrained_fp8.py@5.23.0),
        so GptOssExperts stays BF16."""
        def make(d):
            from transformers.quantizers.quantizers_utils import should_convert_module
            base = self.save(kind, "bf16", "single")
            cfg = dict(FP8[flavour])
            if kind != "qwen3_5" and "modules_to_not_convert" in cfg:
                cfg["modules_to_not_convert"] = ["lm_head"] + (["mlp.experts"] if kind == "gpt_oss" else [])
            q = tflib.fp8_quantize(base.dir, kind, **cfg)
            q.save_pretrained(d)
            skip = q.hf_quantizer.quantization_config.modules_to_not_convert
            mtp = {}
            for k, v in base.extra.items():
                # mtp.fc stays BF16 as in the released FP8 files (transformers
                # builds no MTP head, so no list of its decides).
                if v.ndim == 2 and k != "mtp.fc.weight" and should_convert_module(k.removesuffix(".weight"), skip):
                    mtp.update(tflib.fp8_quantize_tensors(q, {k: v}))
                else:
                    mtp[k] = v
            if mtp:
                tflib.add_tensors(d, mtp)
            return d, q, tflib.read_all(d)
        name = f"fp8-{flavour}" if kind == "qwen3_5" else f"fp8-{kind}-{flavour}"
        return self.once(name, make)

    def trained(self, kind, opt, steps=3):
        """The bf16 model of kind after steps optimizer steps, loaded from
        and saved like a user's fine-tune (from_pretrained of the
        single-file save, train, save_pretrained), the MTP head carried
        over unchanged."""
        def make(d):
            base = self.save(kind, "bf16", "single")
            m = tflib.CLASSES[kind].from_pretrained(base.dir, dtype=torch.bfloat16)
            lr = 1e-2 if opt == "sgd" else 1e-3
            tflib.train_steps(m, steps=steps, opt=opt, lr=lr)
            m.save_pretrained(d)
            if base.extra:
                tflib.add_tensors(d, base.extra)
            return None
        return self.once(f"ft-{kind}-{opt}", make)
