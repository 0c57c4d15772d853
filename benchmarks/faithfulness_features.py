"""Can a new per-summary feature lift ``calibrated:faithfulness`` to CV ρ ≥ 0.55? (issue 33, exploration)

The shipped faithfulness calibration (lm-pmi + rouge-1-precision, checker fixed at
0.1) cross-validates at Spearman ρ 0.508 on the controlled summaries' dev half
(25 sources, 186 summaries). Each candidate feature below is added to those
three features (or replaces lm-pmi, where the row says so) and the calibration is
evaluated exactly as ``evenhand calibrate`` does: z-scored features, ridge,
alpha chosen by inner grouped CV, checker fixed at 0.1 in every fold, pooled
out-of-fold Spearman ρ of 5 source folds (seed 0); also leave-one-source-out
(25 folds) and the mean over fold seeds 1–10. Every feature depends only on its
own source and summary. Because the best row is chosen among all rows, the
script also prints a **nested** estimate: inside each outer fold the feature set
with the best inner-CV ρ is chosen on the training sources only.

Features (all from per-token log-probs under lm-pmi's prompts; d_t = log p(y_t |
source, y_<t) − log p(y_t | y_<t) is the per-token PMI whose mean is lm-pmi):

- segment aggregates: per sentence / clause (split at , ; : and connectives) /
  8-token window mean PMI, as the share above 0, the minimum, the mean of
  sigmoid; token share above 0, median, quantiles, means of the positive and
  negative parts; PMI over content (non-stop-word) tokens or over informative
  tokens (no-source log p < −2);
- source reference points: lm-pmi minus (or over) the PMI of the source's own
  first three sentences, or of each document's first sentence; the source's own
  mean token log-prob;
- length and position: (log) token count, PMI of the first 16/32/48 tokens, the
  summed PMI, PMI·√n, the share of the summary's surprisal the source explains,
  clipped per-token normalized PMI, PMI minus the mean PMI at each position;
- lexical: content-word (stemmed) and bigram precision against the source, per
  clause mean / min / share ≥ 0.5;
- a contrary instruction ("... misrepresent it: state the opposite ..."): the
  difference of the summary's log-prob under the normal and the contrary prompt;
- windowed (AlignScore-style): the source split into ``alignscore_chunks`` of
  200 or 100 words (with or without the whole source as one more window); per
  summary or per clause the window with the best mean log-prob, PMI of that.

The LM passes are cached as JSON under ``--cache`` (first run: ~30 min on one
CPU thread; later runs: seconds).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/faithfulness_features.py --cache /tmp/rho --nested-seeds 0,1,2,3,4
"""

from __future__ import annotations

import argparse
import bisect
import json
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "perspective_metric_eval" / (
    "controlled_summaries_dev.json")
#: The shipped faithfulness features and the weight the checker is held at.
BASE = ("lm-pmi", "rouge-1-precision", "checker")
FIX = {"checker": 0.1}
CONTRARY = ("Summarize the text above in a few sentences, but misrepresent it: "
            "state the opposite of what it says.")
CLAUSE = re.compile(r"[,;:]\s|\s(?:and|while|but|whereas|yet|although|though|as well as|also)\s", re.I)
WORD = re.compile(r"[a-z0-9]+")


def clause_of_tokens(text: str, offsets: Sequence[Sequence[int]], min_tokens: int = 4) -> list[int]:
    """Per token its clause: split at ``CLAUSE`` matches; a clause of fewer than ``min_tokens`` tokens
    joins the one before it (the first joins the next).

    >>> offsets = [(0, 1), (2, 3), (4, 5), (6, 7), (8, 10), (11, 12), (13, 14), (15, 16), (17, 18)]
    >>> clause_of_tokens("a b c d e, f g h i", offsets)  # "e," ends at the separator: next clause
    [0, 0, 0, 0, 1, 1, 1, 1, 1]
    >>> clause_of_tokens("a b, c d e f", [(0, 1), (2, 4), (5, 6), (7, 8), (9, 10), (11, 12)])
    [0, 0, 0, 0, 0, 0]
    """
    bounds = [m.start() for m in CLAUSE.finditer(text)]
    cid = [bisect.bisect_right(bounds, max(s, e - 1)) for s, e in offsets]
    remap: dict[int, int] = {}
    cur, acc = -1, 0
    for c in sorted(set(cid)):
        n = cid.count(c)
        if cur < 0 or (n >= min_tokens and acc >= min_tokens):
            cur, acc = c, 0
        remap[c] = cur
        acc += n
    order = {c: i for i, c in enumerate(dict.fromkeys(remap[c] for c in cid))}
    return [order[remap[c]] for c in cid]


def segment_means(d: np.ndarray, seg: Sequence[int]) -> np.ndarray:
    """Mean of ``d`` per segment (tokens past the end of ``seg`` join its last segment).

    >>> segment_means(np.array([1.0, 3.0, 5.0, 7.0]), [0, 1]).tolist()
    [1.0, 5.0]
    """
    s = np.array(list(seg[: len(d)]) + [seg[-1]] * (len(d) - len(seg)))
    sums, counts = np.bincount(s, d), np.bincount(s)
    return sums[counts > 0] / counts[counts > 0]


# -- the LM passes (cached) ------------------------------------------------------------------------
def _cached(path: Path, settings: dict[str, Any], make: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    if path.is_file():
        data = json.loads(path.read_text())
        if data.get("settings") == settings:
            return data
    from evenhand.evaluation.io.atomic import atomic_write_bytes

    t0 = time.time()
    data = {"settings": settings, **make()}
    atomic_write_bytes(path, json.dumps(data).encode("utf-8"))
    print(f"computed {path.name} in {time.time() - t0:.0f}s", file=sys.stderr)
    return data


def lm_passes(data: Any, cache: Path) -> dict[str, Any]:
    """Per-token log-probs of every summary: with and without its source (lm-pmi's prompts), under
    the contrary instruction, and under each 200- and 100-word window of the source."""
    import torch

    from evenhand.decoding.prompts.templates import format_documents, plain_text
    from evenhand.evaluation.scoring.scorer import as_example
    from evenhand.evaluation.text.sentences import alignscore_chunks, split_sentences
    from evenhand.rerank.scorers.lm_likelihood import LmConfig, LmPmi

    torch.set_num_threads(1)
    sc = LmPmi(LmConfig(progress=False))
    tok = sc._load()[1]
    members = [[i for i, s in enumerate(data.source_index) if s == k] for k in range(len(data.sources))]
    examples = [as_example(src, k) for k, src in enumerate(data.sources)]
    settings = {"model": sc._model_name, "instruction": sc.config.instruction, "summaries": len(data.summaries)}

    def tokens() -> dict[str, Any]:
        model, rows, sources = sc._load()[0], [None] * len(data.summaries), []
        for k, ex in enumerate(examples):
            (text,) = sc.source_chunks(ex)
            prefix = sc.prefix_ids(text)
            with torch.no_grad():  # the source's own tokens' log-probs inside the prompt
                lp = model(input_ids=torch.tensor([prefix])).logits[0].float().log_softmax(-1)
            own = lp[:-1].gather(1, torch.tensor(prefix[1:]).unsqueeze(1)).squeeze(1)
            sents = split_sentences(text)
            leads = {"lead3": " ".join(sents[:3]), "firsts": " ".join(
                split_sentences(" ".join(d.text.split()))[0] for d in ex.documents)}
            texts = [data.summaries[i] for i in members[k]] + list(leads.values())
            ids = [sc.summary_ids(t) for t in texts]
            cond, unc = sc.token_logprobs(prefix, ids), sc.token_logprobs(sc.prefix_ids(None), ids)
            recs = []
            for t, c, u in zip(texts, cond, unc):
                t = plain_text(tok, t.strip())
                offsets = tok(t, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
                recs.append({"text": t, "cond": c.tolist(), "unc": u.tolist(), "offsets": [list(o) for o in offsets]})
            for i, r in zip(members[k], recs):
                rows[i] = r
            sources.append({"own_mean": float(own.mean()), "leads": dict(zip(leads, recs[len(members[k]):]))})
        return {"summaries": rows, "sources": sources}

    def contrary() -> dict[str, Any]:
        alt = LmPmi(LmConfig(progress=False, instruction=CONTRARY))
        rows: list[Any] = [None] * len(data.summaries)
        for k, ex in enumerate(examples):
            (text,) = alt.source_chunks(ex)
            out = alt.token_logprobs(alt.prefix_ids(text), [alt.summary_ids(data.summaries[i]) for i in members[k]])
            for i, c in zip(members[k], out):
                rows[i] = c.tolist()
        return {"cond": rows}

    def windows(words: int) -> Callable[[], dict[str, Any]]:
        def make() -> dict[str, Any]:
            rows: list[Any] = [None] * len(data.summaries)
            for k, ex in enumerate(examples):
                ids = [sc.summary_ids(data.summaries[i]) for i in members[k]]
                per = [sc.token_logprobs(sc.prefix_ids(c), ids) for c in alignscore_chunks(format_documents(ex), words)]
                for j, i in enumerate(members[k]):
                    rows[i] = [p[j].tolist() for p in per]
            return {"cond": rows}
        return make

    out = {"tokens": _cached(cache / "tokens.json", settings, tokens),
           "contrary": _cached(cache / "contrary.json", {**settings, "instruction": CONTRARY}, contrary)}
    for words in (200, 100):
        out[f"win{words}"] = _cached(cache / f"windows{words}.json", {**settings, "words": words}, windows(words))
    return out


# -- features ----------------------------------------------------------------------------------------
def features(data: Any, passes: dict[str, Any]) -> dict[str, np.ndarray]:
    """Every candidate feature, one value per summary (see the module docstring)."""
    from evenhand.evaluation.text.tokens import NLTK_ENGLISH_STOP_WORDS as STOP
    from evenhand.evaluation.text.tokens import _porter_stemmer
    from evenhand.rerank.scorers.lm_likelihood import sentence_of_tokens

    rows, sources = passes["tokens"]["summaries"], passes["tokens"]["sources"]

    def pmi(r: dict[str, Any]) -> np.ndarray:
        return np.array(r["cond"]) - np.array(r["unc"])

    def sig(x: np.ndarray) -> np.ndarray:
        return 1 / (1 + np.exp(-x))

    def content_mask(r: dict[str, Any]) -> np.ndarray:
        text, mask = r["text"], []
        for s, e in r["offsets"]:
            a, b = s, e
            while a > 0 and text[a - 1].isalnum():
                a -= 1
            while b < len(text) and text[b].isalnum():
                b += 1
            word = text[a:b].strip().lower()
            mask.append(bool(re.search(r"[a-z0-9]", word)) and word not in STOP)
        n = len(r["cond"])
        return np.array(mask[:n] + [False] * (n - len(mask)))

    position = np.zeros(400)
    count = np.zeros(400)
    for r in rows:
        d = pmi(r)[:400]
        position[: len(d)] += d
        count[: len(d)] += 1
    curve = position / np.maximum(count, 1)  # mean PMI per position over ALL summaries (a leak, noted)

    stem = _porter_stemmer().stem

    def words(t: str) -> list[str]:
        return [stem(w) for w in WORD.findall(t.lower())]

    src_words = [words(" ".join(s)) for s in data.sources]
    src_content = [{w for w in ws if w not in STOP} for ws in src_words]
    src_bigrams = [set(zip(ws, ws[1:])) for ws in src_words]

    f: dict[str, list[float]] = {}
    for i, r in enumerate(rows):
        k = data.source_index[i]
        d, unc = pmi(r), np.array(r["unc"])
        sent = segment_means(d, sentence_of_tokens(r["text"], r["offsets"]))
        clause = segment_means(d, clause_of_tokens(r["text"], r["offsets"]))
        win = np.array([d[j : j + 8].mean() for j in range(0, max(len(d) - 8, 0) + 1, 4)])
        cm, informative = content_mask(r), unc < -2
        lead3, firsts = pmi(sources[k]["leads"]["lead3"]).mean(), pmi(sources[k]["leads"]["firsts"]).mean()
        ws = words(data.summaries[i])
        cw = [w for w in ws if w not in STOP]
        parts = [p for p in CLAUSE.split(data.summaries[i]) if p and len([w for w in words(p) if w not in STOP]) >= 2]
        cprec = np.array([np.mean([w in src_content[k] for w in words(p) if w not in STOP]) for p in parts]
                         or [np.mean([w in src_content[k] for w in cw])])
        values = {
            "sent-share>0": (sent > 0).mean(), "sent-min": sent.min(), "sent-meansig": sig(sent).mean(),
            "clause-share>0": (clause > 0).mean(), "clause-min": clause.min(), "clause-meansig": sig(clause).mean(),
            "win8-share>0": (win > 0).mean(), "win8-min": win.min(),
            "token-share>0": (d > 0).mean(), "token-median": np.median(d),
            "content-pmi": d[cm].mean() if cm.any() else d.mean(),
            "content-share>0": (d[cm] > 0).mean() if cm.any() else (d > 0).mean(),
            "pmi-minus-lead3": d.mean() - lead3, "pmi-minus-firsts": d.mean() - firsts,
            "pmi-over-lead3": d.mean() / lead3, "src-mean-logp": sources[k]["own_mean"],
            "log-n-tokens": np.log(len(d)), "n-tokens": len(d),
            "pmi-first16": d[:16].mean(), "pmi-first32": d[:32].mean(), "pmi-first48": d[:48].mean(),
            "pmi-sum": d.sum(), "pmi-times-sqrt-n": d.mean() * np.sqrt(len(d)),
            "lm-likelihood": np.mean(r["cond"]), "fluency": unc.mean(),
            "pmi-q10": np.quantile(d, 0.1), "pmi-q25": np.quantile(d, 0.25),
            "pmi-negmean": np.minimum(d, 0).mean(), "pmi-posmean": np.maximum(d, 0).mean(),
            "share-pmi<-1": (d < -1).mean(),
            "informative-pmi": d[informative].mean() if informative.any() else d.mean(),
            "content-prec": np.mean([w in src_content[k] for w in cw]),
            "bigram-prec": np.mean([b in src_bigrams[k] for b in zip(ws, ws[1:])]),
            "clause-cprec-mean": cprec.mean(), "clause-cprec-min": cprec.min(),
            "clause-cprec-share>=.5": (cprec >= 0.5).mean(),
            "pmi-ratio": d.sum() / -unc.sum(),
            "npmi-token-mean": np.clip(d / np.maximum(-unc, 1e-3), -1, 1).mean(),
            "pos-demeaned-pmi": (d - curve[: len(d)]).mean(),
            "contrary-contrast": np.mean(r["cond"]) - np.mean(passes["contrary"]["cond"][i]),
            "contrary-pmi": np.mean(passes["contrary"]["cond"][i]) - unc.mean(),
        }
        seg = np.array(clause_of_tokens(r["text"], r["offsets"]))
        for name in ("win200", "win100"):
            for full in (False, True):
                wrows = np.array(([r["cond"]] if full else []) + passes[name]["cond"][i])
                tag = name + ("+full" if full else "")
                s = np.concatenate([seg, np.full(wrows.shape[1] - len(seg), seg[-1])])[: wrows.shape[1]]
                best = np.array([wrows[:, s == c].mean(1).max() - unc[s == c].mean() for c in np.unique(s)])
                sizes = np.array([(s == c).sum() for c in np.unique(s)])
                values[f"{tag}-max"] = (wrows.mean(1) - unc.mean()).max()
                values[f"{tag}-clause-max"] = (best * sizes).sum() / sizes.sum()
                values[f"{tag}-clause-min"] = best.min()
                values[f"{tag}-clause-share>0"] = (best > 0).mean()
        for key, v in values.items():
            f.setdefault(key, []).append(float(v))
    return {k: np.array(v) for k, v in f.items()}


def variants(base: dict[str, np.ndarray], f: dict[str, np.ndarray]) -> dict[str, dict[str, np.ndarray]]:
    """Feature sets, by row name: the shipped one, each feature added to it, some replacing lm-pmi."""
    out = {"shipped (lm-pmi, rouge-1-precision, checker)": dict(base)}
    without = {k: v for k, v in base.items() if k != "lm-pmi"}
    for name, v in f.items():
        out[f"+ {name}"] = {**base, name: v}
    for name in ("pmi-first32", "pmi-ratio", "npmi-token-mean", "pos-demeaned-pmi",
                 *(f"{w}-{a}" for w in ("win200", "win200+full", "win100", "win100+full") for a in ("max", "clause-max"))):
        out[f"lm-pmi -> {name}"] = {**without, name: f[name]}
    out["+ log-n-tokens + pmi-first32"] = {**base, "log-n-tokens": f["log-n-tokens"], "pmi-first32": f["pmi-first32"]}
    return out


# -- the protocol ----------------------------------------------------------------------------------
def cv_rho(raw: dict[str, np.ndarray], y: np.ndarray, groups: Sequence[int], folds: int = 5, seed: int = 0) -> float:
    """``evenhand calibrate``'s cross-validated Spearman ρ of a feature set (checker fixed at 0.1)."""
    from evenhand.evaluation.scoring.calibration import _spearman, cross_validate

    fixed = {k: v for k, v in FIX.items() if k in raw}
    return _spearman(cross_validate(raw, y, groups, folds=folds, seed=seed, fixed=fixed), y)


def nested_choice(sets: dict[str, dict[str, np.ndarray]], y: np.ndarray, groups: Sequence[int],
                  folds: int = 5, seed: int = 0) -> tuple[float, list[str]]:
    """Pooled out-of-fold ρ when, in each outer fold, the feature set with the best inner-CV ρ on the
    training sources is chosen and fitted there; returns (ρ, the choice per fold)."""
    from evenhand.evaluation.scoring.calibration import _spearman, fit_calibration, fold_of_groups

    fold, g = fold_of_groups(groups, folds, seed), np.asarray(groups)
    pred, choices = np.empty_like(y), []
    for k in range(folds):
        train = fold != k
        scores = {name: cv_rho({a: b[train] for a, b in raw.items()}, y[train], list(g[train]), folds, seed)
                  for name, raw in sets.items()}
        best = max(scores, key=lambda n: scores[n])  # first of equal scores: dict order
        raw = sets[best]
        cal = fit_calibration({a: b[train] for a, b in raw.items()}, y[train], list(g[train]), "", seed=seed,
                              fixed={a: v for a, v in FIX.items() if a in raw})
        pred[~train] = cal.predict({a: b[~train] for a, b in raw.items()})
        choices.append(best)
    return _spearman(pred, y), choices


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Candidate features for calibrated:faithfulness, cross-validated.")
    parser.add_argument("--data", default=str(DATA), help="The controlled summaries' dev half.")
    parser.add_argument("--cache", default="/tmp/evenhand-faithfulness-features",
                        help="Folder of the cached LM passes (JSON).")
    parser.add_argument("--nested-seeds", default="0", help="Fold seeds of the nested estimate, comma-separated.")
    parser.add_argument("--out", default=None, help="Also write one JSONL row per feature set.")
    args = parser.parse_args(argv)
    if not Path(args.data).is_file():
        print(f"skipped: {args.data} is absent (shared data)")
        return 0
    from evenhand.decoding.models import cache_dir
    from evenhand.evaluation.metrics.meta_eval import load_annotated
    from evenhand.evaluation.scoring.registry import get_scorer

    data = load_annotated(args.data, targets=["faithfulness"])
    y, groups = np.asarray(data.truth["faithfulness"]), data.source_index
    sources = [data.sources[i] for i in groups]
    base = {name: np.asarray(get_scorer(name, cache_dir=cache_dir() / "scores", progress=False)
                             .score(sources, data.summaries)) for name in BASE}
    Path(args.cache).mkdir(parents=True, exist_ok=True)
    passes = lm_passes(data, Path(args.cache))
    mean_pmi = np.array([np.mean(np.array(r["cond"]) - np.array(r["unc"])) for r in passes["tokens"]["summaries"]])
    if not np.allclose(mean_pmi, base["lm-pmi"], atol=1e-4):
        raise SystemExit("the cached passes do not reproduce lm-pmi; delete --cache and rerun")
    feats = features(data, passes)
    sets = variants(base, feats)
    from evenhand.evaluation.scoring.calibration import _spearman

    singles = {name: _spearman(v, y) for name, v in feats.items()}
    rows = []
    print(f"{'feature set':<46} {'alone rho':>9} {'5-fold':>7} {'LOSO':>7} {'seeds1-10':>9}")
    for name, raw in sets.items():
        new = [k for k in raw if k not in BASE]
        row = {"set": name, "single": singles[new[0]] if len(new) == 1 else None, "cv5": cv_rho(raw, y, groups),
               "loso": cv_rho(raw, y, groups, folds=len(set(groups))),
               "cv5_seeds": float(np.mean([cv_rho(raw, y, groups, seed=s) for s in range(1, 11)]))}
        rows.append(row)
        single = "" if row["single"] is None else f"{row['single']:+.3f}"
        print(f"{name:<46} {single:>9} {row['cv5']:>7.3f} {row['loso']:>7.3f} {row['cv5_seeds']:>9.3f}", flush=True)
    for seed in (int(x) for x in args.nested_seeds.split(",")):
        rho, choices = nested_choice(sets, y, groups, seed=seed)
        print(f"{len(sets) - 1} candidate feature sets; nested (set chosen inside each outer fold, fold seed "
              f"{seed}): rho {rho:.3f}; chosen: {choices}", flush=True)
        rows.append({"set": "nested choice", "seed": seed, "cv5": rho, "choices": choices})
    if args.out:
        from evenhand.evaluation.io.atomic import atomic_write_bytes

        atomic_write_bytes(args.out, "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
