"""FairSumm N-gram fairness from text: evenhand's default ``fairsumm`` against the authors' word processing.

    python -m benchmarks.bench_fairsumm_text   (from the repository root; NLTK data needed for the baseline)

Workload: the 480 gold summaries of the shared PerspectiveSumm gold sets
(amazon 60 × 3, yelp 100 × 3), each scored against its sample's values.

Baseline, "authors' word processing re-run": a faithful re-implementation of
the per-sample loop of FairSumm's ``metrics/eval.py`` (psunlpgroup/FairSumm):
per summary, every value text of its sample is lowercased, split with
``nltk.word_tokenize``, filtered against ``ST_WORDS`` kept as the authors keep it
(a *list*: punctuation + ``stopwords.words()`` + extras), lemmatized token by
token (``nltk.pos_tag([token])``, Penn tag -> WordNet POS,
``WordNetLemmatizer``), Porter-stemmed; the summary likewise; then for every
summary token and every value, ``value_tokens.count(token) > 0``; then the
float cutoff, UER and unfair test. Sources are processed again for each of a
sample's three golds, as the authors' one-run-per-prediction-file use does. It
needs NLTK's data (stopwords, wordnet, averaged_perceptron_tagger_eng,
punkt_tab); without it the baseline is skipped with the reason.

evenhand: ``get_scorer("fairsumm").score_details`` (the default, ``text="authors"``)
on the same 480 pairs in the order ``evaluate --summaries references:all`` uses,
from cold caches (the shipped tables loaded before the timer, as NLTK's data
is for the baseline; both load times are printed). Both sides first score one
small example outside the workload (imports, first calls). The machine's load
varies over the baseline's minute, so the two run interleaved, chunk by chunk
(8 chunks), and each side's times are summed.

Printed in one run: both times, the ratio (goal: at least 20×), and the
agreement of the two (unfair flags equal, largest UER difference).
"""

from __future__ import annotations

import json
import os
import string
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evenhand.evaluation.data.schema import Example

REPO = Path(__file__).resolve().parents[1]
BASELINE_NAME = (
    "authors' word processing re-run (per-token nltk.pos_tag + WordNetLemmatizer, list stop words, "
    "sources re-processed per summary)"
)
GOAL = 20.0


def shared_dir() -> Path:
    """``$EVENHAND_SHARED``, else ``../shared/data`` next to the repository."""
    env = os.environ.get("EVENHAND_SHARED")
    return Path(env) if env else REPO.parent / "shared" / "data"


def workload(shared: Path) -> list[tuple[Example, str]]:
    """(example, gold summary) for every gold of both sets, example by example."""
    from evenhand.evaluation.data.loaders import load_examples

    pairs = []
    for name in ("amazon", "yelp"):
        path = shared / "perspectivesumm" / f"{name}_gold.json"
        if not path.exists():
            continue
        for ex in load_examples(path):
            pairs.extend((ex, ref) for ref in ex.references)
    return pairs


class AuthorsWordProcessing:
    """The word processing and counting of the authors' ``eval.py``, re-implemented with NLTK."""

    WORDNET_POS = {"NN": "n", "JJ": "a", "VB": "v", "RB": "r"}

    def __init__(self) -> None:
        import nltk
        from nltk.corpus import stopwords
        from nltk.stem import PorterStemmer, WordNetLemmatizer

        self.nltk = nltk
        self.st_words = [*string.punctuation, *stopwords.words(), "||", "people", "''", "``", "...", ".."]
        self.lemmatizer = WordNetLemmatizer()
        self.stemmer = PorterStemmer()
        # load every model once, outside the timer
        self.lemmatizer.lemmatize("dogs")
        nltk.pos_tag(["dogs"])
        nltk.word_tokenize("A warm-up. Done.")

    def lemma(self, token: str) -> str:
        pos = self.WORDNET_POS.get(self.nltk.pos_tag([token])[0][1][:2], "")
        return self.lemmatizer.lemmatize(token, pos=pos) if pos else self.lemmatizer.lemmatize(token)

    def tokens(self, text: str) -> list[str]:
        words = [w for w in self.nltk.word_tokenize(text.lower()) if w not in self.st_words]
        lemmas = [self.lemma(w) for w in words]
        return [self.stemmer.stem(w) for w in lemmas]

    def sample(self, value_texts: list[str], summary: str) -> tuple[float, bool]:
        value_tokens = {i: self.tokens(t) for i, t in enumerate(value_texts)}
        target_tokens = self.tokens(summary)
        counter: dict[int, int] = defaultdict(int)
        for token in target_tokens:
            for i, toks in value_tokens.items():
                counter[i] += toks.count(token) > 0
        source = {i: len(t) for i, t in value_tokens.items()}
        # float cutoff: descending source, running sum of shares until it reaches 1
        total = sum(source.values())
        kept, running = [], 0.0
        for i in sorted(source, key=lambda k: -source[k]):
            running += source[i] / total
            kept.append(i)
            if running >= 1:
                break
        kept_source = {i: n for i, n in source.items() if i in kept}
        kept_total = sum(kept_source.values())
        target_total = sum(counter.get(i, 0) for i in kept_source)
        diffs, unfair = [], False
        for i, n in kept_source.items():
            s = n / kept_total
            t = counter.get(i, 0) / target_total if target_total else 1 / len(kept_source)
            diffs.append(max(0, s - t))
            unfair = unfair or t <= s * 0.8
        return sum(diffs) / len(diffs), unfair


def nltk_data_missing() -> str | None:
    """Why the baseline cannot run here, or None."""
    try:
        import nltk
    except ImportError:
        return "nltk is not installed"
    for resource in (
        "corpora/stopwords", "corpora/wordnet", "taggers/averaged_perceptron_tagger_eng/",
        "tokenizers/punkt_tab/english/",
    ):
        try:
            nltk.data.find(resource)
        except (LookupError, OSError) as err:
            return f"NLTK data {resource} is not installed ({type(err).__name__}; set NLTK_DATA)"
    return None


def warm_up_example() -> Example:
    """A small example outside the workload: both sides run it once before timing (imports, first calls)."""
    from evenhand.evaluation.data.schema import Document, Example

    return Example(
        id="warm-up",
        documents=[Document("The battery died after a week. Awful!", "1"), Document("Great sound, works well.", "5")],
        group_values=["1", "5"],
    )


def main() -> int:
    sys.path.insert(0, str(REPO))
    from evenhand.evaluation.scoring.registry import get_scorer
    from evenhand.evaluation.text.fairsumm_words import filter_words, lemma_table, word_tokenize

    pairs = workload(shared_dir())
    if not pairs:
        print(f"skipped: no PerspectiveSumm gold sets under {shared_dir()}")
        return 0
    print(f"workload: {len(pairs)} gold summaries (amazon + yelp, 3 golds each)")
    start = time.perf_counter()
    lemma_table()
    filter_words()
    word_tokenize("A warm-up. Done.")
    tables_s = time.perf_counter() - start
    scorer = get_scorer("fairsumm")
    warm = warm_up_example()
    scorer.score_details([warm], ["Great sound but the battery died."])
    missing = nltk_data_missing()
    if missing:
        start = time.perf_counter()
        scorer.score_details([ex for ex, _ in pairs], [s for _, s in pairs])
        print(f"evenhand fairsumm (default, text=authors): {time.perf_counter() - start:.2f} s")
        print(f"baseline skipped: {missing}")
        return 0
    start = time.perf_counter()
    baseline = AuthorsWordProcessing()
    baseline.sample(list(warm.group_texts(" || ").values()), "Great sound but the battery died.")
    load_s = time.perf_counter() - start

    # Interleaved: the machine's load changes over a minute, so the two run chunk by chunk
    # (8 chunks, example by example) and their times are summed; evenhand's caches start
    # cold and fill as in one run.
    rows, results, ours_s, base_s = [], [], 0.0, 0.0
    step = -(-len(pairs) // 8)
    for lo in range(0, len(pairs), step):
        chunk = pairs[lo : lo + step]
        start = time.perf_counter()
        rows += scorer.score_details([ex for ex, _ in chunk], [s for _, s in chunk])
        ours_s += time.perf_counter() - start
        start = time.perf_counter()
        results += [
            baseline.sample(list(ex.group_texts(" || ").values()), summary)
            for ex, summary in chunk
        ]
        base_s += time.perf_counter() - start
    print(f"evenhand fairsumm (default, text=authors): {ours_s:.2f} s  (shipped tables loaded before: {tables_s:.2f} s)")
    print(f"{BASELINE_NAME}: {base_s:.2f} s  (NLTK data loaded before: {load_s:.2f} s)")
    flags = sum(bool(r["fairsumm_unfair"]) == unfair for r, (_, unfair) in zip(rows, results))
    worst = max(abs(r["fairsumm_uer"] - uer) for r, (uer, _) in zip(rows, results))
    print(f"agreement: unfair flags {flags}/{len(rows)} equal, max |UER difference| {worst:.1e}")
    ratio = base_s / ours_s
    print(f"speed-up: {ratio:.1f}x (goal >= {GOAL:.0f}x: {'met' if ratio >= GOAL else 'NOT met'})")
    print(json.dumps({"pairs": len(pairs), "evenhand_s": ours_s, "baseline_s": base_s, "ratio": ratio}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
