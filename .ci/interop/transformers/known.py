"""The known bugs of the transformers leg: where today's ckpt disagrees with
what transformers, torch and safetensors say of the same files. One table:
known_bugs(check, case) names the bug that changes the answer of a check
for a case, and params() turns it into pytest.mark.xfail(strict=True), so
a marked case does fail today and its mark must go when the fix is merged
(strict: an unexpected pass fails the run). The nine behaviours of issue
#33 (branches tf-dtype-layout, tf-fp8, tf-plan-config) and the one this
leg found (a BF16 Linear modules_to_not_convert does not cover, in an FP8
checkpoint of a class without an architecture profile) are fixed and their
marks gone: KNOWN is empty until this leg finds another."""

import pytest

# check:case -> the bug that changes its answer today.
KNOWN = {}

# The architectures the built-in mapping profiles serve (model_type).
SERVED = {"qwen3_5", "qwen3_5_text", "qwen3_5_moe"}


def known_bugs(check, case):
    """The reason today's ckpt fails check for case (a zoo.Saved or
    zoo.Case, or a string naming a case of a test module), or None."""
    return KNOWN.get(f"{check}:{case}" if case is not None and not hasattr(case, "kind") else check)


def params(check, cases, ids=None):
    """pytest.param for each case, marked xfail(strict=True) with the known
    bug's reason where there is one."""
    out = []
    for i, c in enumerate(cases):
        bug = known_bugs(check, c)
        marks = [pytest.mark.xfail(strict=True, reason=bug)] if bug else []
        cid = ids[i] if ids else getattr(c, "id", str(c))
        out.append(pytest.param(c, id=cid, marks=marks))
    return out


def mark(check):
    """The xfail mark of a single (unparametrised) test, or none (the test
    as it is) when no known bug changes its answer."""
    bug = known_bugs(check, None)
    return pytest.mark.xfail(strict=True, reason=bug) if bug else (lambda f: f)
