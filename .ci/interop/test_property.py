"""Property test (#21): every verdict of verify --against, diff (full,
--by layer, --sample-bytes) and extract on random small base / fine-tune
pairs (propgen.py) against the same question answered by numpy, ml_dtypes
and the safetensors reference reader.

Seeded and reproducible: CKPT_PROPERTY_SEED (default 21) and
CKPT_PROPERTY_CASES (default 200) choose the cases, case i has the seed
SEED * 100000 + i (its test id, `s<seed>`), and CKPT_PROPERTY_CASE=<seed>
runs that one case alone. Every failure message starts with the case (its
seed and the edits made to the fine-tune) and the command line.
`bash .ci/interop/run.sh -k property` runs only this test.

A verdict main gets wrong for a known reason is marked xfail(strict=True)
per case class, with the issue item and the branch fixing it: the marks
come from `known_bugs`, which says for each check which known bug changes
its answer for this case (so a marked case does fail, and passes once the
fix is merged and the mark removed). The #21 fixes (branches contract,
diffsum, scales) are merged: there is none now."""

import json
import os

import numpy as np
import pytest
import xxhash

import propgen
from propgen import BOOKKEEPING, SCALE, Case, Pair, config_diff, group_of, leaf
from stlib import NP, ref_read
from test_extract_output import check_file, check_index, converted

SEED = int(os.environ.get("CKPT_PROPERTY_SEED", "21"))
N_CASES = int(os.environ.get("CKPT_PROPERTY_CASES", "200"))
ONLY = os.environ.get("CKPT_PROPERTY_CASE")
SEEDS = [int(ONLY)] if ONLY else [SEED * 100000 + i for i in range(N_CASES)]

# ----------------------------------------------------------------------------
# The JSON names of what #21 added (branch diffsum), in one place.
#
# A per-layer row (`diff --by layer`, JSON `layers`) counts every relation
# apart, one key each: `changed` counts relation changed only, `identical`
# identical only (a key is left out when its count is 0).
LAYER_COUNT_KEYS = {r: r for r in ("identical", "changed", "requant_identical", "dtype_changed", "shape_changed",
                                   "only_in_base", "only_in_ft", "no_change_seen", "requant_identical_seen")}
# The mean rel_l2 of a layer row, over its changed tensors.
LAYER_MEAN_KEY = "changed_mean_rel_l2"
# The relation of a sampled block-FP8 / wider-float pair whose sample
# re-quantises exactly to the FP8 side ("reported as such").
SAMPLED_REQUANT_EXACT = "requant_identical_seen"
# What a values-mode diff may do with a pair whose FP8 side has no scale ckpt
# can apply: "refuse" (exit 1 naming it: the scale rule of #21, branch
# scales) or "compare" (by the codes' values, as before it).
UNSCALED_DIFF = ("refuse",)


def layer_count(row, relation):
    return row.get(LAYER_COUNT_KEYS[relation], 0)


def layer_mean(row):
    return row.get(LAYER_MEAN_KEY)


def values_changed(row):
    """Whether a row counts towards a layer's mean rel_l2 and changed
    fraction range: relation changed (identical, requant_identical,
    dtype_changed and sampled rows without a difference do not)."""
    return row["relation"] == "changed"


RELATIONS = ("identical", "changed", "requant_identical", "dtype_changed", "shape_changed", "only_in_base", "only_in_ft",
             "no_change_seen", "requant_identical_seen")

_cases = {}


def get_case(seed):
    if seed not in _cases:
        _cases[seed] = Case(seed)
    return _cases[seed]


# ---------------------------------------------------------------- expectations


def quant_bad(ck, n):
    """An FP8 weight whose values ckpt cannot know: no weight_scale_inv,
    or a companion of another scheme (weight_scale) beside it."""
    t = ck.tensors
    return n in t and t[n][0] == "F8_E4M3" and (n + SCALE not in t or n + "_scale" in t)


def unscaled(case):
    """The pairs a values-mode diff compares (on both sides, one shape,
    float dtypes) of which a side is an FP8 weight without a scale ckpt can
    apply. The diffs of the property test leave them out (--exclude); they
    have their own test, test_property_diff_unscaled."""
    b, f = case.base.tensors, case.ft.tensors
    return sorted(n for n in set(b) & set(f) if list(b[n][1]) == list(f[n][1]) and "I32" not in (b[n][0], f[n][0])
                  and (quant_bad(case.base, n) or quant_bad(case.ft, n)))


def pairs(case):
    """{name: Pair} of every tensor the diffs compare."""
    if not hasattr(case, "pairs"):
        names = sorted((set(case.base.tensors) | set(case.ft.tensors)) - set(unscaled(case)))
        case.pairs = {n: Pair(case, n) for n in names}
    return case.pairs


def contract_expect(case):
    """exit code, per-group counts and the config paths that must fail
    verify FT --against contract(BASE)."""
    b, f = case.base.tensors, case.ft.tensors
    hashes = case.read_data
    groups = {}
    for n in sorted(set(b) | set(f)):
        g = groups.setdefault(group_of(n)[0], dict.fromkeys(
            ("contract_keys", "keys", "identical", "added", "removed", "removed_scales", "added_scales", "dtype_changed",
             "shape_changed", "hash_changed"), 0))
        g["contract_keys"] += n in b
        g["keys"] += n in f
        if n not in b:
            g["added"] += 1
            g["added_scales"] += n.endswith(SCALE)
        elif n not in f:
            g["removed"] += 1
            g["removed_scales"] += n.endswith(SCALE)
        else:
            same_dt, same_shape = b[n][0] == f[n][0], list(b[n][1]) == list(f[n][1])
            g["dtype_changed"] += not same_dt
            g["shape_changed"] += not same_shape
            hash_changed = hashes and same_dt and same_shape and b[n][2] != f[n][2]
            g["hash_changed"] += hash_changed
            g["identical"] += same_dt and same_shape and not hash_changed
    tensor_diff = any(g[k] for g in groups.values() for k in ("added", "removed", "dtype_changed", "shape_changed",
                                                              "hash_changed"))
    cfg = [p for p in config_diff(case.base.config, case.ft.config) if leaf(p) not in BOOKKEEPING
           and not any(p == a or p.startswith(a + ".") or p.startswith(a + "[") for a in case.allow)]
    return (1 if tensor_diff or cfg else 0), groups, tensor_diff, cfg


def structural_fail(ck):
    """What verify alone fails on in a fine-tune: an FP8 weight without
    its weight_scale_inv, a scale without its FP8 weight."""
    t = ck.tensors
    return any(v[0] == "F8_E4M3" and n + SCALE not in t for n, v in t.items()) or \
        any(n.endswith(SCALE) and t.get(n[: -len(SCALE)], ("",))[0] != "F8_E4M3" for n in t)


def layer_rows(rows):
    """Rows by (group, layer) in report order: decoder layers, then mtp,
    visual, other."""
    out = {}
    for r in rows:
        out.setdefault(group_of(r["name"]), []).append(r)
    order = sorted((k for k in out if k[0] == "text_layers"), key=lambda k: k[1])
    order += [k for g in ("mtp", "visual", "other") for k in out if k[0] == g]
    return [(k, out[k]) for k in order]


def correct_mean(rows):
    r = [x["rel_l2"] for x in rows if values_changed(x) and x.get("rel_l2") is not None and np.isfinite(x["rel_l2"])]
    return sum(r) / len(r) if r else None


def expected_rows(case):
    """The full diff's rows as numpy computes them, with the JSON fields."""
    out = []
    for n, p in pairs(case).items():
        e = p.expect()
        e["name"] = n
        if p.kind is not None:
            e["numel"] = p.numel
        out.append(e)
    return out


def fraction_of(row):
    """The changed fraction of a row whose elements were counted:
    changed_elems / numel."""
    if row.get("numel", 0) <= 0 or row.get("changed_elems") is None:
        return None
    return row["changed_elems"] / row["numel"]


def fraction_range(rows):
    fr = [f for f in map(fraction_of, rows) if f is not None]
    return [min(fr), max(fr)] if fr else None


def known_bugs(case):
    """Which known bug (not fixed on main yet) changes the answer of each
    check for this case: {check: reason}. Empty: the #21 fixes (branches
    contract, diffsum, scales) are merged; a new one goes here, with a
    reason naming the issue and the branch fixing it."""
    return {}


def extract_refused(ck):
    """extract --dtype must refuse an FP8 weight it cannot dequantise: no
    weight_scale_inv, or an unknown scale companion (weight_scale)."""
    return any(quant_bad(ck, n) for n in ck.tensors)


def params(check):
    out = []
    for s in SEEDS:
        bug = known_bugs(get_case(s)).get(check)
        marks = [pytest.mark.xfail(strict=True, reason=bug)] if bug else []
        out.append(pytest.param(s, id=f"s{s}", marks=marks))
    return out


# ---------------------------------------------------------------- running ckpt

_dirs = {}
_runs = {}


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("property")


def written(case, workdir):
    if case.seed not in _dirs:
        d = workdir / f"s{case.seed}"
        rng = np.random.default_rng(case.seed + 1)
        case.base.write(d / "base", rng)
        case.ft.write(d / "ft", rng)
        _dirs[case.seed] = (d / "base", d / "ft", d)
    return _dirs[case.seed]


def run(ckpt, case, key, *args):
    """ckpt ARGS (cached per case and key): (exit code, JSON or None,
    command line, stderr)."""
    k = (case.seed, key)
    if k not in _runs:
        p = ckpt.run(*args, rc=tuple(range(256)))
        try:
            doc = json.loads(p.stdout) if p.stdout.strip() else None
        except json.JSONDecodeError:
            doc = None
        _runs[k] = (p.returncode, doc, "ckpt " + " ".join(map(str, args)), p.stderr)
    return _runs[k]


def near(got, want, rel=1e-9, abs_=1e-12):
    if want is None or got is None:
        return got is want
    if np.isinf(want):
        return got is None  # JSON null
    return got == pytest.approx(want, rel=rel, abs=abs_)


def check_row(what, got, want):
    for k, v in want.items():
        if k in ("max_abs_diff", "rel_l2", "cosine"):
            assert near(got.get(k), v), f"{what}: {k} {got.get(k)}, numpy {v}\nrow: {got}"
        else:
            assert got.get(k) == v, f"{what}: {k} {got.get(k)!r}, numpy {v!r}\nrow: {got}"


def diff_json(ckpt, case, workdir, key, *extra):
    base, ft, _ = written(case, workdir)
    ex = [a for n in unscaled(case) for a in ("--exclude", n)]
    return run(ckpt, case, key, "diff", base, ft, "--progress", "none", "--format", "json", *ex, *extra)


# ---------------------------------------------------------------- the checks

@pytest.mark.parametrize("seed", params("verify"))
def test_property_verify_against(ckpt, workdir, seed):
    case = get_case(seed)
    base, _, _ = written(case, workdir)
    want, groups, _, cfg = contract_expect(case)
    assert not structural_fail(case.ft) or want == 1, f"{case}: generator made a broken fine-tune that matches"
    contract, (rc, doc, cmd, err) = verify_run(ckpt, case, workdir)
    k = json.loads(contract.read_text())
    got = {t["name"]: (t["dtype"], t["shape"], t.get("xxh3")) for t in k["tensors"]}
    want_k = {n: (dt, list(s), xxhash.xxh3_64_hexdigest(data) if case.read_data else None)
              for n, (dt, s, data) in case.base.tensors.items()}
    assert got == want_k, f"{case}\nckpt contract {base}: tensors differ from the reference reader's"
    if case.exclude_nothing or case.allow_bad:
        assert rc == 2, f"{case}\n{cmd}: exit {rc}, want 2 (a selection that selects nothing, a path that names no key)\n{err}"
        return
    fails = [f for f in doc["findings"] if f["status"] == "fail"]
    assert rc == want, (f"{case}\n{cmd}: exit {rc}, want {want} (config differences {cfg})\n"
                        f"failing findings: {[(f['id'], f['message']) for f in fails]}")
    got = {g["group"]: {k: g[k] for k in groups[g["group"]]} for g in doc["against"]["groups"]}
    assert got == groups, f"{case}\n{cmd}: per-group counts\n got {got}\nwant {groups}"
    assert doc["against"]["hashes_compared"] == case.read_data


def verify_run(ckpt, case, workdir, bad=True):
    """Runs contract BASE and verify FT --against it (cached), with the
    case's --allow-config paths; bad: also with its --exclude that selects
    nothing and --allow-config that names no key, if it has them."""
    base, ft, d = written(case, workdir)
    contract = d / "contract.json"
    rd = ["--read-data"] if case.read_data else []
    if not contract.exists():
        c = ckpt.run("contract", base, *rd, "-o", contract, "--progress", "none", rc=tuple(range(256)))
        assert c.returncode == 0, f"{case}\nckpt contract {base}: exit {c.returncode}\n{c.stderr}"
    extra = [a for p in case.allow for a in ("--allow-config", p)]
    if bad and case.exclude_nothing:
        extra += ["--exclude", "nothing.**"]
    if bad and case.allow_bad:
        extra += ["--allow-config", "no_such_key"]
    return contract, run(ckpt, case, ("verify", bad), "verify", ft, "--against", contract, *rd, *extra, "--arch", "none",
                         "--progress", "none", "--format", "json")


@pytest.mark.parametrize("seed", params("verify_findings"))
def test_property_verify_against_findings(ckpt, workdir, seed):
    """Each contract.* finding fails exactly when numpy sees its kind of
    difference, naming the tensors concerned."""
    case = get_case(seed)
    _, (rc, doc, cmd, err) = verify_run(ckpt, case, workdir, bad=False)
    assert rc != 2 and doc is not None, f"{case}\n{cmd}: exit {rc}\n{err}"
    b, f = case.base.tensors, case.ft.tensors
    common = set(b) & set(f)
    want = {"contract.key_added": set(f) - set(b), "contract.key_removed": set(b) - set(f),
            "contract.dtype": {n for n in common if b[n][0] != f[n][0]},
            "contract.shape": {n for n in common if list(b[n][1]) != list(f[n][1])},
            "contract.hash": {n for n in common if b[n][0] == f[n][0] and list(b[n][1]) == list(f[n][1])
                              and b[n][2] != f[n][2]} if case.read_data else None}
    cfg = contract_expect(case)[3]
    by = {}
    for x in doc["findings"]:
        by.setdefault(x["id"], []).append(x)
    for fid, names in want.items():
        got = by.get(fid, [])
        fails = [x for x in got if x["status"] == "fail"]
        what = f"{case}\n{cmd}: {fid} {[(x['status'], x['message']) for x in got]}"
        if names is None:
            assert [x["status"] for x in got] == ["skip"], what
        elif names:
            assert fails and {t for x in fails for t in x["tensors"]} == names, f"{what}, want a failure naming {sorted(names)}"
        else:
            assert got and not fails, f"{what}, want a pass"
    got = by.get("contract.config", [])
    fails = [x for x in got if x["status"] == "fail"]
    what = f"{case}\n{cmd}: contract.config {[(x['status'], x['message']) for x in got]}"
    assert bool(fails) == bool(cfg), f"{what}, config differences (bookkeeping aside): {cfg}"
    for p in cfg:
        assert any(p in x["message"] for x in fails), f"{what}: {p} not named"
    for a in case.allow:  # accepted: a passing finding names it
        assert any(a in x["message"] and x["status"] == "pass" for x in got), f"{what}: --allow-config {a} not named"


@pytest.mark.parametrize("seed", params("diff"))
def test_property_diff(ckpt, workdir, seed):
    case = get_case(seed)
    rc, doc, cmd, err = diff_json(ckpt, case, workdir, "diff")
    assert doc is not None, f"{case}\n{cmd}: exit {rc}\n{err}"
    want = expected_rows(case)
    rows = {r["name"]: r for r in doc["tensors"]}
    assert sorted(rows) == sorted(r["name"] for r in want), f"{case}\n{cmd}: tensor names"
    ps = pairs(case)
    for w in want:
        n = w["name"]
        check_row(f"{case}\n{cmd}: {n}", rows[n], w)
        p = ps[n]
        if p.kind in (None, "raw"):  # no values to compare
            assert not {"max_abs_diff", "rel_l2", "cosine"} & set(rows[n]), f"{case}\n{cmd}: {n} has statistics: {rows[n]}"
        if p.kind is None:
            assert rows[n].get("changed_elems") is None, f"{case}\n{cmd}: {n} has changed_elems: {rows[n]}"
        if p.kind != "requant":
            assert "requant_mismatch_elems" not in rows[n], f"{case}\n{cmd}: {n} is no requant pair: {rows[n]}"
        assert not {"sampled", "sampled_elems", "nonfinite", "note"} & set(rows[n]), f"{case}\n{cmd}: {n}: {rows[n]}"
        assert rows[n].get("base_dtype") == (p.bt[0] if p.inb else None), n
        assert rows[n].get("ft_dtype") == (p.ft[0] if p.inf else None), n
        assert rows[n]["shape"] == list((p.bt if p.inb else p.ft)[1]), n
        assert rows[n].get("ft_shape") == (list(p.ft[1]) if w["relation"] == "shape_changed" else None), n
        assert rows[n]["group"] == group_of(n)[0], n
    counts = {r: sum(1 for w in want if w["relation"] == r) for r in RELATIONS}
    assert {r: doc["summary"].get(r, 0) for r in RELATIONS} == counts, f"{case}\n{cmd}: summary"
    for g in doc["groups"]:
        gw = {r: sum(1 for w in want if w["relation"] == r and group_of(w["name"])[0] == g["group"]) for r in RELATIONS}
        assert {r: g.get(r, 0) for r in RELATIONS} == gw, f"{case}\n{cmd}: group {g['group']}"
        rs = [w for w in want if group_of(w["name"])[0] == g["group"]]
        m, rng, r = correct_mean(rs), fraction_range([x for x in rs if values_changed(x)]), g.get("changed_fraction_range")
        assert near(layer_mean(g), m), f"{case}\n{cmd}: group {g['group']}: mean rel_l2 {layer_mean(g)}, want {m}"
        assert (r is None) == (rng is None) and (r is None or (near(r[0], rng[0]) and near(r[1], rng[1]))), \
            f"{case}\n{cmd}: group {g['group']}: changed_fraction_range {r}, want {rng}"
    b, f = case.base.tensors, case.ft.tensors
    assert sorted(doc["keys"]["only_in_base"]) == sorted(set(b) - set(f)), f"{case}\n{cmd}: keys"
    assert sorted(doc["keys"]["only_in_ft"]) == sorted(set(f) - set(b)), f"{case}\n{cmd}: keys"
    assert doc["keys"]["common"] == len(set(b) & set(f)) - len(unscaled(case))
    cfg = config_diff(case.base.config, case.ft.config)
    assert sorted(c["path"] for c in doc["config"]) == sorted(cfg), f"{case}\n{cmd}: config differences"
    # bookkeeping keys (the contract's list) are notes, not differences (#33)
    assert sorted(c["path"] for c in doc["config"] if c.get("bookkeeping")) == sorted(p for p in cfg if leaf(p) in BOOKKEEPING), \
        f"{case}\n{cmd}: bookkeeping notes"
    differs = any(leaf(p) not in BOOKKEEPING for p in cfg) or any(w["relation"] != "identical" for w in want)
    assert rc == (1 if differs else 0), f"{case}\n{cmd}: exit {rc}\n{err}"


def by_layer(ckpt, case, workdir):
    rc, doc, cmd, err = diff_json(ckpt, case, workdir, "by-layer", "--by", "layer")
    assert doc is not None and "layers" in doc, f"{case}\n{cmd}: exit {rc}\n{err}"
    want = layer_rows(expected_rows(case))
    got = doc["layers"]
    keys = [(g["group"], g.get("layer", -1)) for g in got]
    assert keys == [k for k, _ in want], f"{case}\n{cmd}: layer rows {keys}, want {[k for k, _ in want]}"
    return cmd, got, want


@pytest.mark.parametrize("seed", params("layer_counts"))
def test_property_diff_by_layer_counts(ckpt, workdir, seed):
    case = get_case(seed)
    cmd, got, want = by_layer(ckpt, case, workdir)
    for g, ((group, layer), rs) in zip(got, want):
        what = f"{case}\n{cmd}: {group} {layer if layer >= 0 else ''}"
        assert g["tensors"] == len(rs), what
        counts = {r: sum(1 for x in rs if x["relation"] == r) for r in RELATIONS}
        got_counts = {r: layer_count(g, r) for r in RELATIONS}
        assert got_counts == counts, f"{what}: counts {got_counts}, want {counts}\nrow: {g}"
        assert sum(got_counts.values()) == g["tensors"], f"{what}: categories do not add up to tensors\nrow: {g}"


@pytest.mark.parametrize("seed", params("layer_mean"))
def test_property_diff_by_layer_mean(ckpt, workdir, seed):
    case = get_case(seed)
    cmd, got, want = by_layer(ckpt, case, workdir)
    for g, ((group, layer), rs) in zip(got, want):
        m = correct_mean(rs)
        assert near(layer_mean(g), m), f"{case}\n{cmd}: {group} {layer}: mean rel_l2 {layer_mean(g)}, want {m}\nrow: {g}"


@pytest.mark.parametrize("seed", params("layer_fraction"))
def test_property_diff_by_layer_fraction(ckpt, workdir, seed):
    case = get_case(seed)
    cmd, got, want = by_layer(ckpt, case, workdir)
    for g, ((group, layer), rs) in zip(got, want):
        rng = fraction_range([x for x in rs if values_changed(x)])
        r = g.get("changed_fraction_range")
        assert (r is None) == (rng is None) and (r is None or (near(r[0], rng[0]) and near(r[1], rng[1]))), \
            f"{case}\n{cmd}: {group} {layer}: changed_fraction_range {r}, want {rng}"


def wilson(k, n):
    z = 1.959963984540054
    p = k / n
    den = 1 + z * z / n
    c = (p + z * z / (2 * n)) / den
    h = z / den * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (0.0 if k == 0 else max(c - h, 0.0)), (1.0 if k == n else min(c + h, 1.0))


def sampled_run(ckpt, case, workdir):
    rc, doc, cmd, err = diff_json(ckpt, case, workdir, "sampled", "--sample-bytes", f"{case.sample_bytes}B",
                                  "--sample-seed", case.sample_seed, "--by", "layer")
    assert doc is not None, f"{case}\n{cmd}: exit {rc}\n{err}"
    return rc, doc, cmd, err


def sampled_expect(p, row):
    """What a sampled diff must say of pair p: the full expectation when
    the row was compared whole, else the expectation over the elements of
    its sampled_ranges (no change seen is no_change_seen, never identical)."""
    if not row.get("sampled"):
        return p.expect()
    sel = np.concatenate([np.arange(a, b) for a, b in row["sampled_ranges"]])
    w = p.expect(sel)
    if p.kind in ("same", "raw") and w["relation"] == "identical":
        w = {"relation": "no_change_seen", "changed_elems": 0}
    if w["relation"] == "requant_identical":
        w["relation"] = SAMPLED_REQUANT_EXACT
    return w


@pytest.mark.parametrize("seed", params("layer_counts"))
def test_property_diff_sampled_by_layer_counts(ckpt, workdir, seed):
    case = get_case(seed)
    rc, doc, cmd, err = sampled_run(ckpt, case, workdir)
    ps = pairs(case)
    rows = [dict(r, relation=sampled_expect(ps[r["name"]], r)["relation"]) for r in doc["tensors"]]
    want = layer_rows(rows)
    keys = [(g["group"], g.get("layer", -1)) for g in doc["layers"]]
    assert keys == [k for k, _ in want], f"{case}\n{cmd}: layer rows {keys}, want {[k for k, _ in want]}"
    for g, ((group, layer), rs) in zip(doc["layers"], want):
        what = f"{case}\n{cmd}: {group} {layer if layer >= 0 else ''}"
        counts = {r: sum(1 for x in rs if x["relation"] == r) for r in RELATIONS}
        got_counts = {r: layer_count(g, r) for r in RELATIONS}
        assert got_counts == counts, f"{what}: counts {got_counts}, want {counts}\nrow: {g}"
        assert sum(got_counts.values()) == g["tensors"] == len(rs), f"{what}: categories do not add up to tensors\nrow: {g}"


@pytest.mark.parametrize("seed", params("sampled"))
def test_property_diff_sampled(ckpt, workdir, seed):
    case = get_case(seed)
    size = case.sample_bytes
    rc, doc, cmd, err = sampled_run(ckpt, case, workdir)
    ps = pairs(case)
    rows = {r["name"]: r for r in doc["tensors"]}
    assert sorted(rows) == sorted(ps), f"{case}\n{cmd}: tensor names"
    relations = []
    for n, p in ps.items():
        row, what = rows[n], f"{case}\n{cmd}: {n}"
        if not row.get("sampled"):
            w = p.expect()
            check_row(what, row, w)
            f = fraction_of(dict(w, numel=getattr(p, "numel", 0)))
            if f is not None:
                assert near(row.get("changed_fraction"), f), f"{what}: changed_fraction {row.get('changed_fraction')}, want {f}"
            relations.append(w["relation"])
            continue
        assert p.kind is not None, f"{what}: sampled, but it has no counterpart to compare with"
        es = max(np.dtype(NP[p.bt[0]]).itemsize, np.dtype(NP[p.ft[0]]).itemsize)
        assert p.numel * es > size, f"{what}: sampled, but {p.numel * es} bytes ≤ --sample-bytes {size}"
        rg = row["sampled_ranges"]
        assert all(0 <= a < b <= p.numel for a, b in rg) and all(rg[i][1] <= rg[i + 1][0] for i in range(len(rg) - 1)), \
            f"{what}: ranges {rg}"
        for ck, t in ((case.base, p.bt), (case.ft, p.ft)):
            if propgen.scaled(ck, n):  # runs of whole groups of bn columns (docs/sampling.md)
                # sampled_ranges are the runs with those that touch merged
                # (one read, one cluster), so a range may span rows: cut at
                # the row ends, every piece is whole groups of its row (the
                # last group of a row may be short).
                cols, bn = p.bt[1][1], ck.block()[1]
                pieces = [(max(a, r * cols), min(b, (r + 1) * cols)) for a, b in rg for r in range(a // cols, (b - 1) // cols + 1)]
                assert all(x % cols % bn == 0 and (y % cols % bn == 0 or y % cols == 0) for x, y in pieces), \
                    f"{what}: ranges {rg} are not runs of whole groups (cols {cols}, bn {bn})"
        sel = np.concatenate([np.arange(a, b) for a, b in rg])
        w = sampled_expect(p, row)
        k_changed = w.pop("changed_elems")
        check_row(what, row, w)
        n_s = row.get("sampled_elems")
        assert n_s == sel.size, f"{what}: sampled_elems {n_s}, ranges hold {sel.size}"
        k = row.get("changed_elems")
        if p.kind == "requant":  # either count of what changed, but one
            assert k in (k_changed, w["requant_mismatch_elems"]), f"{what}: changed_elems {k}"
        else:
            assert k == k_changed, f"{what}: changed_elems {k}, numpy {k_changed} of the sample"
        assert k <= n_s, f"{what}: changed_elems {k} > sampled_elems {n_s}"
        assert near(row.get("changed_fraction"), k / n_s), f"{what}: changed_fraction {row.get('changed_fraction')}, changed_elems/sampled_elems {k / n_s}"
        # The interval treats the ranges as clusters (docs/sampling.md): it
        # holds the Wilson interval of the elements (the least uncertainty
        # any sample of that size has) and the observed fraction, and with
        # no change seen its upper bound is at least the Wilson bound of 0
        # hits in the most ranges a tensor gets (32).
        lo, hi = wilson(k, n_s)
        ci = row.get("changed_fraction_ci95")
        assert ci is not None and 0 <= ci[0] <= k / n_s <= ci[1] <= 1, f"{what}: ci95 {ci}, observed {k / n_s}"
        assert ci[0] <= lo + 1e-12 and ci[1] >= hi - 1e-12, f"{what}: ci95 {ci} narrower than Wilson {lo, hi}"
        if k == 0:
            assert ci[1] >= wilson(0, 32)[1] - 1e-12, f"{what}: ci95 {ci}: no change seen, yet the bound is below that of 32 clean ranges"
        relations.append(w["relation"])
    counts = {r: relations.count(r) for r in RELATIONS}
    assert {r: doc["summary"].get(r, 0) for r in RELATIONS} == counts, f"{case}\n{cmd}: summary {doc['summary']}"
    differs = any(leaf(p) not in BOOKKEEPING for p in config_diff(case.base.config, case.ft.config)) or \
        any(r not in ("identical", "no_change_seen") for r in relations)
    assert rc == (1 if differs else 0), f"{case}\n{cmd}: exit {rc}\n{err}"


def unscaled_params():
    return [pytest.param(s, id=f"s{s}") for s in SEEDS if unscaled(get_case(s))]


@pytest.mark.parametrize("seed", unscaled_params())
def test_property_diff_unscaled(ckpt, workdir, seed):
    """A values-mode diff of a pair with an FP8 weight that has no scale ckpt
    can apply (none, or a weight_scale beside or instead of it) either
    refuses it, exit 1, naming the weight (the scale rule of #21, branch
    scales), or compares its codes' values as the rows say (main);
    UNSCALED_DIFF says which are accepted."""
    case = get_case(seed)
    base, ft, _ = written(case, workdir)
    names = unscaled(case)
    rc, doc, cmd, err = run(ckpt, case, "unscaled", "diff", base, ft, "--progress", "none", "--format", "json")
    if rc == 1 and doc is None:
        assert "refuse" in UNSCALED_DIFF, f"{case}\n{cmd}: refused\n{err}"
        assert any(n in err for n in names), f"{case}\n{cmd}: the refusal names none of {names}\n{err}"
        return
    assert "compare" in UNSCALED_DIFF, f"{case}\n{cmd}: exit {rc}, want a refusal naming one of {names}\n{err}"
    assert rc == 1 and doc is not None, f"{case}\n{cmd}: exit {rc}\n{err}"
    rows = {r["name"]: r for r in doc["tensors"]}
    for n in names:
        check_row(f"{case}\n{cmd}: {n}", rows[n], Pair(case, n).expect())


def extract_expect(ck, target):
    """The tensors extract --dtype TARGET writes, by numpy and ml_dtypes:
    block-FP8 weights dequantised (float32 product, rounded once), their
    scales dropped (and a scale no weight consumes left out: a scale is never
    written as a value, #33), other floats rounded through float32, the rest
    copied."""
    t = ck.tensors
    out, counts = {}, {"copied": 0, "converted": 0, "dequantized": 0}
    for n, (dt, shape, data) in t.items():
        if target is None:
            out[n] = (dt, shape, data)
            counts["copied"] += 1
        elif n.endswith(SCALE) and t.get(n[: -len(SCALE)], ("",))[0] == "F8_E4M3":
            continue
        elif leaf(n) in ("weight_scale_inv", "weight_scale", "input_scale"):
            continue
        elif dt == "F8_E4M3" and n + SCALE in t:
            v = propgen.f32_values(ck, n)
            out[n] = (target, shape, v.astype(NP[target]).tobytes())
            counts["dequantized"] += 1
        else:
            out[n] = converted(dt, shape, data, target)
            counts["converted" if out[n][0] != dt else "copied"] += 1
    return out, counts


@pytest.mark.parametrize("seed", params("extract"))
def test_property_extract(ckpt, workdir, seed):
    case = get_case(seed)
    _, ft, d = written(case, workdir)
    out = d / f"extract-{case.extract_dtype}"
    shard = ["--max-shard-size", "1KiB"] if case.extract_shard else []
    rc, doc, cmd, err = run(ckpt, case, "extract", "extract", ft, "--match", "**", "--dtype", case.extract_dtype, *shard,
                            "--out", out, "--progress", "none", "--format", "json")
    if case.extract_dtype != "keep" and extract_refused(case.ft):
        assert rc != 0, f"{case}\n{cmd}: exit 0, want a refusal (an FP8 weight without its weight_scale_inv, or with an unknown weight_scale)"
        assert not out.exists() or not any(out.iterdir()), f"{case}\n{cmd}: refused but wrote {list(out.iterdir())}"
        return
    assert rc == 0, f"{case}\n{cmd}: exit {rc}\n{err}"
    target = {"keep": None, "bf16": "BF16", "f16": "F16", "f32": "F32"}[case.extract_dtype]
    want, counts = extract_expect(case.ft, target)
    assert {k: doc["summary"][k] for k in counts} == counts, f"{case}\n{cmd}: summary {doc['summary']}"
    assert doc["summary"]["tensors"] == len(want)
    if (out / "model.safetensors.index.json").exists():
        check_index(out, want, {"format": "pt"})
    else:
        got = ref_read(out / "model.safetensors")
        assert sorted(got) == sorted(want), f"{case}\n{cmd}: tensors"
        for n, w in want.items():
            assert got[n][:2] == (w[0], list(w[1])) and got[n][2] == w[2], f"{case}\n{cmd}: {n} differs from numpy"
        check_file(out / "model.safetensors", want, {"format": "pt"})
    cfg = json.loads((out / "config.json").read_text())
    src = dict(case.ft.config)
    if target is not None:
        src.pop("quantization_config", None)
    assert cfg == src, f"{case}\n{cmd}: config.json"
