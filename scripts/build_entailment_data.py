"""Build the entailment model's training file from public data (issue 48).

Two parts, written together as one shuffled ``train.jsonl`` plus ``manifest.json``:

* **human-labelled pairs** from public NLI / fact-verification sets
  (entailment -> 1; contradiction, neutral, not_entailment -> 0);
* **synthetic FactCC-style pairs** from public documents of several genres
  (news, reviews, dialogue, debates, encyclopedic): the premise is a window of
  2-5 consecutive sentences (at most ``--max-premise-words`` words) holding a
  source sentence; the hypothesis is that sentence kept, compressed or fused
  with its neighbour (label 1) or minimally edited so the window no longer
  supports it (label 0): negation, antonyms, quantifiers, numbers, entity and
  role swaps, speaker/attribution swaps, invented details, sentences from
  elsewhere in the document or from another document.

Every input is a fetched git snapshot (a bare git directory) named by a flag;
files are read at its ``HEAD`` and the manifest records repository, commit,
paths, licence and rows used. A leakage filter drops any pair whose premise or
hypothesis shares an 8-gram of lower-cased words with the held-out texts
(``--exclude`` files and folders; FRANK when ``--frank`` is given).

Same inputs and seed give the same bytes. Output never goes into the repository:
it is derived from other people's data.

    .venv/bin/python scripts/build_entailment_data.py --out /work/data48 \\
        --docnli /work/.mirror/salesforce+DocNLI/repo --frank /work/.mirror/artidoro+frank/repo ...
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import random
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from evenhand.evaluation.io.atomic import atomic_open, atomic_write_bytes
from evenhand.evaluation.text.sentences import split_sentences

REPO_ROOT = Path(__file__).resolve().parents[1]

NGRAM = 8
QAGS_WORDS = 90
FRANK_ARTICLES = "data/articles-wbertscore-json/"
WORD = re.compile(r"\w+")


# --------------------------------------------------------------------------- snapshots


class UsageError(Exception):
    """A user mistake: reported as one line, exit status 2."""


@dataclass
class Snapshot:
    """A fetched repository snapshot (bare git directory), read at HEAD."""

    flag: str
    git_dir: Path
    repo: str
    commit: str = ""
    used_paths: list[str] = field(default_factory=list)
    files_commit: str = "HEAD"

    def __post_init__(self) -> None:
        done = subprocess.run(
            ["git", "--git-dir", str(self.git_dir), "rev-parse", "HEAD"],
            capture_output=True, text=True, check=False,
        )
        if done.returncode != 0:
            raise UsageError(
                f"--{self.flag}: {self.git_dir} is not a git directory with a HEAD; "
                f"pass the snapshot that `fetch github:{self.repo}` returned"
            )
        self.commit = done.stdout.strip()

    def read(self, path: str) -> str:
        done = subprocess.run(
            ["git", "--git-dir", str(self.git_dir), "show", f"HEAD:{path}"],
            capture_output=True, check=False,
        )
        if done.returncode != 0:
            raise UsageError(f"--{self.flag}: {path} is missing at {self.commit[:12]} of {self.repo}")
        self.used_paths.append(path)
        return done.stdout.decode("utf-8", errors="replace")

    def read_at(self, commit: str, path: str) -> str:
        done = subprocess.run(
            ["git", "--git-dir", str(self.git_dir), "show", f"{commit}:{path}"],
            capture_output=True, check=False,
        )
        if done.returncode != 0:
            raise UsageError(f"--{self.flag}: {path} is missing at {commit[:12]} of {self.repo}")
        return done.stdout.decode("utf-8", errors="replace")

    def files(self, prefix: str, commit: str = "HEAD") -> list[str]:
        done = subprocess.run(
            ["git", "--git-dir", str(self.git_dir), "ls-tree", "-r", "--name-only", commit, "--", prefix],
            capture_output=True, text=True, check=False,
        )
        return sorted(line for line in done.stdout.splitlines() if line)

    def licence_file(self) -> str:
        for name in ("LICENSE", "LICENSE.txt", "LICENSE.md", "LICENCE"):
            done = subprocess.run(
                ["git", "--git-dir", str(self.git_dir), "show", f"HEAD:{name}"],
                capture_output=True, text=True, check=False,
            )
            if done.returncode == 0:
                first = next((ln.strip() for ln in done.stdout.splitlines() if ln.strip()), "")
                return f"{name}: {first[:80]}"
        return "no licence file in the repository"


# --------------------------------------------------------------------------- text helpers


def words(text: str) -> list[str]:
    """Lower-cased word tokens, as the leakage filter counts them."""
    return WORD.findall(text.lower())


def ngrams(text: str, n: int = NGRAM) -> set[str]:
    toks = words(text)
    return {" ".join(toks[i : i + n]) for i in range(len(toks) - n + 1)}


_DETOK = [
    (re.compile(r" @([-,.])@ "), r"\1"),
    (re.compile(r" ([,.;:!?%)\]])"), r"\1"),
    (re.compile(r"([(\[$]) "), r"\1"),
    (re.compile(r" (n't|'s|'re|'ve|'ll|'d|'m)\b"), r"\1"),
    (re.compile(r"-LRB- ?"), "("),
    (re.compile(r" ?-RRB-"), ")"),
    (re.compile(r"`` ?| ?''"), '"'),
]


def detokenize(text: str) -> str:
    """Undo PTB-style spacing (`` a , b `` -> ``a, b``) found in FEVER and WikiText."""
    text = " ".join(text.split())
    for pattern, repl in _DETOK:
        text = pattern.sub(repl, text)
    return text


# --------------------------------------------------------------------------- corruptions

AUXILIARIES = (
    "is", "are", "was", "were", "has", "have", "had", "will", "would", "can", "could",
    "should", "may", "might", "must", "does", "do", "did",
)
_AUX = re.compile(
    r"\b(" + "|".join(AUXILIARIES) + r")\b(?! not\b)(?!n't)"
    # "have a pet", "had to leave": a main verb or a modal idiom, where "not" does not go
    r"(?<!\bhave)(?<!\bhas)(?<!\bhad)(?<!\bdo)(?<!\bdoes)(?<!\bdid)"
    r"|\b(?:have|has|had|do|does|did)\b(?= (?!a\b|an\b|the\b|to\b|any\b|some\b|no\b|my\b|your\b|his\b|her\b|"
    r"their\b|our\b|its\b|this\b|that\b|it\b|them\b|lunch\b|dinner\b|breakfast\b)\w)(?! not\b)",
    re.IGNORECASE,
)
_CONTRACTIONS = {
    "isn't": "is", "aren't": "are", "wasn't": "was", "weren't": "were", "doesn't": "does",
    "don't": "do", "didn't": "did", "can't": "can", "won't": "will", "wouldn't": "would",
    "couldn't": "could", "shouldn't": "should", "hasn't": "has", "haven't": "have",
    "hadn't": "had", "cannot": "can",
}
_CONTRACTION = re.compile(r"\b(" + "|".join(re.escape(c) for c in _CONTRACTIONS) + r")", re.IGNORECASE)
_NOT = re.compile(r"\b(" + "|".join(AUXILIARIES) + r") not\b", re.IGNORECASE)


def match_case(word: str, model: str) -> str:
    """``word`` with ``model``'s capitalisation (all caps, Title or lower)."""
    if model.isupper() and len(model) > 1:
        return word.upper()
    if model[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def negate(sentence: str, rng: random.Random) -> str | None:
    """Insert or remove one negation (``is`` <-> ``is not``, ``didn't`` -> ``did``)."""
    removals: list[tuple[int, int, str]] = []
    for m in _CONTRACTION.finditer(sentence):
        removals.append((m.start(), m.end(), match_case(_CONTRACTIONS[m.group(1).lower()], m.group(1))))
    for m in _NOT.finditer(sentence):
        removals.append((m.start(), m.end(), m.group(1)))
    if removals and rng.random() < 0.7:
        start, end, repl = rng.choice(removals)
        return sentence[:start] + repl + sentence[end:]
    m = _AUX.search(sentence)
    if m is None:
        if removals:
            start, end, repl = rng.choice(removals)
            return sentence[:start] + repl + sentence[end:]
        return None
    return sentence[: m.end()] + " not" + sentence[m.end() :]


ANTONYMS = [
    ("good", "bad"), ("better", "worse"), ("best", "worst"), ("love", "hate"), ("loved", "hated"),
    ("loves", "hates"), ("like", "dislike"), ("liked", "disliked"), ("likes", "dislikes"),
    ("great", "terrible"), ("excellent", "poor"), ("clean", "dirty"), ("friendly", "rude"),
    ("helpful", "unhelpful"), ("comfortable", "uncomfortable"), ("quiet", "noisy"),
    ("cheap", "expensive"), ("easy", "difficult"), ("happy", "unhappy"), ("pleased", "disappointed"),
    ("positive", "negative"), ("increase", "decrease"), ("increased", "decreased"),
    ("rise", "fall"), ("rose", "fell"), ("higher", "lower"), ("high", "low"), ("more", "less"),
    ("larger", "smaller"), ("large", "small"), ("win", "lose"), ("won", "lost"), ("wins", "loses"),
    ("support", "oppose"), ("supported", "opposed"), ("supports", "opposes"), ("agree", "disagree"),
    ("agreed", "disagreed"), ("accept", "reject"), ("accepted", "rejected"), ("before", "after"),
    ("early", "late"), ("earlier", "later"), ("open", "closed"), ("strong", "weak"),
    ("stronger", "weaker"), ("safe", "dangerous"), ("success", "failure"), ("successful", "unsuccessful"),
    ("fast", "slow"), ("hot", "cold"), ("true", "false"), ("legal", "illegal"), ("first", "last"),
    ("beautiful", "ugly"), ("modern", "outdated"), ("spacious", "cramped"), ("delicious", "bland"),
    ("recommend", "discourage"), ("praised", "criticized"), ("praise", "criticism"),
    ("profit", "loss"), ("profits", "losses"), ("gained", "lost"), ("up", "down"),
    ("allowed", "banned"), ("cut", "raised"), ("remember", "forget"), ("arrived", "left"),
    ("inside", "outside"), ("everything", "nothing"), ("always", "never"),
]
_ANTONYM = {a: b for a, b in ANTONYMS} | {b: a for a, b in ANTONYMS}


def _swap_word(sentence: str, table: dict[str, list[str]], rng: random.Random) -> str | None:
    """Replace one whole word (or phrase) found in ``table`` by one of its alternatives."""
    keys = sorted(table, key=lambda k: (-len(k), k))
    pattern = re.compile(r"\b(" + "|".join(re.escape(k) for k in keys) + r")\b", re.IGNORECASE)
    hits = list(pattern.finditer(sentence))
    if not hits:
        return None
    m = rng.choice(hits)
    repl = rng.choice(table[m.group(1).lower()])
    return sentence[: m.start()] + match_case(repl, m.group(1)) + sentence[m.end() :]


def swap_antonym(sentence: str, rng: random.Random) -> str | None:
    """One polarity word swapped for its opposite (good <-> bad, love <-> hate, rose <-> fell)."""
    return _swap_word(sentence, {k: [v] for k, v in _ANTONYM.items()}, rng)


QUANTIFIERS: dict[str, list[str]] = {
    "one of the": ["most of the", "all of the", "many of the"],
    "most of the": ["one of the", "few of the", "all of the"],
    "all of the": ["some of the", "one of the", "few of the"],
    "some of the": ["all of the", "most of the", "none of the"],
    "many of the": ["few of the", "one of the"],
    "few of the": ["most of the", "many of the"],
    "a few": ["most", "many"],
    "most": ["few", "some"],
    "many": ["few", "a couple of"],
    "few": ["many", "most"],
    "all": ["some", "few"],
    "some": ["all", "most"],
    "every": ["one", "no"],
    "everyone": ["no one", "someone"],
    "everybody": ["nobody", "somebody"],
    "nobody": ["everybody", "somebody"],
    "no one": ["everyone", "someone"],
    "several": ["no", "one"],
    "always": ["occasionally", "rarely", "never"],
    "often": ["rarely", "occasionally", "never"],
    "usually": ["rarely", "occasionally"],
    "frequently": ["rarely", "occasionally"],
    "sometimes": ["always", "never"],
    "occasionally": ["always", "often"],
    "rarely": ["often", "always"],
    "never": ["always", "often", "sometimes"],
    "majority": ["minority"],
    "minority": ["majority"],
    "only one": ["many", "most"],
    "none": ["all", "most"],
}


def swap_quantifier(sentence: str, rng: random.Random) -> str | None:
    """One quantifier or frequency word moved, either direction (one <-> most, always <-> occasionally)."""
    return _swap_word(sentence, QUANTIFIERS, rng)


NUMBER_WORDS = [
    "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    "fifteen", "twenty", "thirty", "forty", "fifty", "hundred", "thousand", "million", "billion",
]
_NUMBER = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w])")
_NUMBER_WORD = re.compile(r"\b(" + "|".join(NUMBER_WORDS) + r")\b", re.IGNORECASE)


def change_number(sentence: str, rng: random.Random) -> str | None:
    """One number changed (digits: a nearby or scaled value; years by 1-5; number words to another)."""
    digits = list(_NUMBER.finditer(sentence))
    named = list(_NUMBER_WORD.finditer(sentence))
    if not digits and not named:
        return None
    if digits and (not named or rng.random() < 0.75):
        m = rng.choice(digits)
        whole = m.group(1)
        value = int(whole.replace(",", ""))
        if 1900 <= value <= 2035 and "," not in whole and not m.group(2):
            new = value + rng.choice([-5, -3, -2, -1, 1, 2, 3, 4])
        else:
            options = [value + 1, value + 2, value * 2, value * 3, value + 10, max(value // 2, 0)]
            new = rng.choice([o for o in options if o != value] or [value + 1])
        text = f"{new:,}" if "," in whole else str(new)
        return sentence[: m.start()] + text + (m.group(2) or "") + sentence[m.end() :]
    m = rng.choice(named)
    current = m.group(1).lower()
    repl = rng.choice([w for w in NUMBER_WORDS if w != current])
    return sentence[: m.start()] + match_case(repl, m.group(1)) + sentence[m.end() :]


NOT_NAMES = {
    "The", "A", "An", "I", "He", "She", "It", "They", "We", "You", "This", "That", "These", "Those",
    "There", "His", "Her", "Their", "Its", "Our", "My", "Your", "In", "On", "At", "But", "And", "Or",
    "If", "When", "While", "After", "Before", "As", "For", "With", "So", "Yes", "No", "Well", "Oh",
    "Mr", "Mrs", "Ms", "Dr", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday",
    "Sunday", "January", "February", "March", "April", "May", "June", "July", "August",
    "September", "October", "November", "December", "What", "Why", "How", "Who", "Where",
    "Which", "Now", "Then", "Thank", "Thanks", "Okay", "OK", "Hello", "Hi", "Let", "Because",
    "Although", "However", "Also", "Not", "All", "Some", "Most", "One", "Two", "Many",
}
_NAME = re.compile(r"\b[A-Z][a-z]+(?:[ -](?:[A-Z][a-z]+|[A-Z]\.))*(?: [A-Z][a-z]+)*\b")


def names(text: str) -> list[str]:
    """Capitalised word runs that look like names (first words and function words left out)."""
    found: list[str] = []
    for m in _NAME.finditer(text):
        span = m.group(0)
        parts = span.split()
        while parts and parts[0] in NOT_NAMES:
            parts = parts[1:]
        if parts and parts[-1] not in NOT_NAMES:
            span = " ".join(parts)
            if span not in found:
                found.append(span)
    return found


def _sentence_names(sentence: str) -> list[str]:
    """Names inside ``sentence``; a run that opens the sentence is left out (its capital proves nothing)."""
    body = sentence.lstrip("\"'“‘( ")
    return [n for n in names(sentence) if not body.startswith(n.split()[0])]


def swap_entities(sentence: str, rng: random.Random) -> str | None:
    """Two different names in one sentence exchange places (who did what to whom)."""
    found = [n for n in _sentence_names(sentence) if sentence.count(n) == 1]
    pairs = [(a, b) for i, a in enumerate(found) for b in found[i + 1 :] if a not in b and b not in a]
    if not pairs:
        return None
    a, b = rng.choice(pairs)
    placeholder = "\x00"
    return sentence.replace(a, placeholder).replace(b, a).replace(placeholder, b)


ROLE_STOP = {
    "same", "first", "last", "next", "other", "most", "best", "only", "whole", "new", "old",
    "time", "way", "end", "fact", "year", "day", "world", "case", "rest", "number", "kind", "sort",
    "lot", "top", "back", "one", "two", "three", "many", "more", "very", "least", "latest",
    "former", "second", "third", "final", "main", "past", "following", "such", "what",
}
_ROLE = re.compile(r"\b(the|a|an|his|her|their|its|our|my|your)\s+([a-z]{3,})\b")


def swap_roles(sentence: str, rng: random.Random) -> str | None:
    """The head words of two determiner phrases exchange places (``the dog bit the man``)."""
    hits = [m for m in _ROLE.finditer(sentence) if m.group(2) not in ROLE_STOP and not m.group(2).endswith("ly")]
    pairs = [(x, y) for i, x in enumerate(hits) for y in hits[i + 1 :] if x.group(2) != y.group(2)]
    if not pairs:
        return None
    x, y = rng.choice(pairs)
    return (
        sentence[: x.start(2)] + y.group(2) + sentence[x.end(2) : y.start(2)] + x.group(2) + sentence[y.end(2) :]
    )


REPORTING = (
    "said", "says", "told", "added", "argued", "claimed", "wrote", "noted", "explained",
    "insisted", "announced", "stated", "warned", "believes", "believed", "thinks", "complained",
)
_PERSON = r"[A-Z][a-z]+(?:[A-Z][a-z]+)?(?: [A-Z][a-z]+(?:[A-Z][a-z]+)?)*"  # "Alex McLeish"
_REPORTED_BY = re.compile(
    r"\b(?:according to|" + "|".join(REPORTING) + r")\s+(?:Mr\.? |Mrs\.? |Ms\.? |Dr\.? )?(?P<name>" + _PERSON + r")"
)
_REPORTER = re.compile(r"\b(?P<name>" + _PERSON + r"),?\s+(?:" + "|".join(REPORTING) + r")\b")


def swap_attribution(sentence: str, others: Sequence[str], rng: random.Random) -> str | None:
    """The person a statement is attributed to replaced by another name from the premise."""
    spans = [m for m in _REPORTED_BY.finditer(sentence)] + [m for m in _REPORTER.finditer(sentence)]
    spans = [m for m in spans if m.group("name") not in NOT_NAMES]
    if not spans:
        return None
    m = rng.choice(spans)
    name = m.group("name")
    choices = [o for o in others if o != name and o not in name and name not in o and o not in sentence]
    if not choices:
        return None
    return sentence[: m.start("name")] + rng.choice(choices) + sentence[m.end("name") :]


def speaker_line(speaker: str, sentence: str) -> str:
    """A hypothesis that attributes ``sentence`` to ``speaker`` (dialogue and debate turns)."""
    return f'{speaker} says: "{sentence}"'


INVENTED_ADJECTIVES = [
    "expensive", "cheap", "famous", "local", "former", "new", "small", "large", "young", "rude",
    "friendly", "noisy", "luxurious", "controversial", "popular", "private", "foreign", "senior",
    "angry", "empty", "crowded", "modern", "historic", "annual", "secret", "official", "broken",
    "dirty", "tiny", "elderly", "wealthy", "disappointing", "free", "temporary", "Italian",
]
_DET_NOUN = re.compile(r"\b(the|a|an)\s+([a-z]{4,})\b")
VOWEL = re.compile(r"^[aeiou]", re.IGNORECASE)


def invent_adjective(sentence: str, premise: str, rng: random.Random) -> str | None:
    """An adjective the premise never uses inserted before a noun (``the room`` -> ``the noisy room``)."""
    hits = [m for m in _DET_NOUN.finditer(sentence) if m.group(2) not in ROLE_STOP and not m.group(2).endswith("ly")]
    if not hits:
        return None
    used = set(words(premise))
    adjectives = [a for a in INVENTED_ADJECTIVES if a.lower() not in used]
    m = rng.choice(hits)
    adjective = rng.choice(adjectives)
    det = m.group(1)
    if det.lower() in ("a", "an"):
        det = match_case("an" if VOWEL.match(adjective) else "a", det)
    return sentence[: m.start()] + f"{det} {adjective} {m.group(2)}" + sentence[m.end() :]


INVENTED_CIRCUMSTANCES = [
    "on Monday", "last year", "in 2012", "in London", "during the summer", "for the second time",
    "at night", "in the morning", "after the election", "because of the weather", "in Chicago",
    "two weeks ago", "in March", "without warning", "on the first day", "with his family",
    "for three days", "by mistake", "in Paris", "at the airport",
]


def invent_circumstance(sentence: str, premise: str, rng: random.Random) -> str | None:
    """A time, place or cause the premise never mentions appended to the sentence's main clause."""
    body = sentence.rstrip()
    if not body or body[-1] not in ".!":
        return None
    text = premise.lower()
    options = [c for c in INVENTED_CIRCUMSTANCES if not set(words(c)) - {"the", "on", "in", "at", "for", "a"} <= set(words(text))]
    options = [c for c in options if c.lower() not in text]
    if not options:
        return None
    return body[:-1] + " " + rng.choice(options) + body[-1]


PREPOSITIONS = (
    "in", "on", "at", "during", "after", "before", "for", "with", "from", "since", "by", "near",
    "following", "across", "throughout", "under", "over", "around", "into", "via",
)
_TRAILING_PP = re.compile(r"(?:,\s*|\s+)(?:" + "|".join(PREPOSITIONS) + r")\s+[^,;:]{3,}?(?=[.!?]$)")
_RELATIVE = re.compile(r",\s+(?:which|who|whose|where)\s+[^,]{3,},\s*")
OPENERS = (
    "In", "On", "At", "After", "Before", "During", "Since", "By", "For", "With", "Despite",
    "Yesterday", "Today", "Earlier", "Later", "Meanwhile", "However", "Last", "This", "Next",
    "Overall", "Unfortunately", "Fortunately", "Initially", "Finally", "Also", "Still", "Then",
)
_LEADING = re.compile(r"^(?:" + "|".join(OPENERS) + r")\b[^,]{0,40},\s+(?=[a-z])")
NEGATIVE_WORDS = {"not", "no", "never", "n't", "nothing", "none", "nobody", "without", "neither", "nor"}
DROPPABLE_ADJECTIVES = {
    "big", "small", "new", "old", "beautiful", "nice", "great", "large", "local", "young",
    "lovely", "huge", "little", "busy", "recent", "long", "short", "good", "excellent", "clean",
    "comfortable", "friendly", "wonderful", "important", "major", "popular", "famous",
}
_DROP_ADJ = re.compile(r"\b(the|a|an|his|her|their|its|our|very)\s+(" + "|".join(sorted(DROPPABLE_ADJECTIVES)) + r")\s+(?=[a-z]{3,})")


def _keeps_meaning(original: str, shorter: str) -> bool:
    removed = Counter(words(original)) - Counter(words(shorter))
    return len(words(shorter)) >= 5 and not (set(removed) & NEGATIVE_WORDS)


def compress(sentence: str, rng: random.Random) -> str | None:
    """A shorter sentence the original entails: a trailing phrase, a relative clause,
    a leading adverbial or an adjective dropped (never a negation)."""
    options: list[str] = []
    for m in _TRAILING_PP.finditer(sentence):
        if len(m.group(0).split()) <= 8:
            options.append(sentence[: m.start()] + sentence[m.end() :])
    for m in _RELATIVE.finditer(sentence):
        options.append(sentence[: m.start()] + " " + sentence[m.end() :])
    m = _LEADING.match(sentence)
    if m:
        rest = sentence[m.end() :]
        options.append(rest[:1].upper() + rest[1:])
    for m in _DROP_ADJ.finditer(sentence):
        det = m.group(1)
        options.append(sentence[: m.start()] + (det + " " if det != "very" else "") + sentence[m.end() :])
    options = [" ".join(o.split()) for o in options]
    options = [o for o in options if o != sentence and _keeps_meaning(sentence, o)]
    return rng.choice(options) if options else None


_STARTERS = {
    "The", "A", "An", "He", "She", "It", "They", "We", "This", "That", "These", "Those", "There",
    "His", "Her", "Their", "Its", "Our", "But", "In", "On", "At", "After", "Before", "When",
}


def fuse(first: str, second: str) -> str | None:
    """Two adjacent sentences joined into one (``A. B.`` -> ``A, and b.``)."""
    first = first.rstrip()
    if not first or first[-1] != "." or not second:
        return None
    head = second.split()[0]
    if head in ("But", "However,", "And"):
        return None
    lead = second[:1].lower() + second[1:] if head in _STARTERS else second
    return f"{first[:-1]}, and {lead}"


# --------------------------------------------------------------------------- documents


@dataclass(frozen=True)
class Unit:
    """One sentence of a document, with its speaker for dialogue and debate turns."""

    text: str
    speaker: str = ""


@dataclass(frozen=True)
class Document:
    source: str
    genre: str
    units: tuple[Unit, ...]


def render(units: Sequence[Unit]) -> str:
    """A premise: the sentences joined; a speaker's name opens each of their turns."""
    parts: list[str] = []
    previous = None
    for u in units:
        if u.speaker and u.speaker != previous:
            parts.append(f"{u.speaker}: {u.text}")
        else:
            parts.append(u.text)
        previous = u.speaker
    return " ".join(parts)


def good_sentence(text: str) -> bool:
    n = len(text.split())
    return 6 <= n <= 40 and text[-1:] in ".!?\"" and "<unk>" not in text and "@" not in text


def turns_to_units(turns: Iterable[tuple[str, str]]) -> list[Unit]:
    return [Unit(s, speaker) for speaker, text in turns for s in split_sentences(text)]


def read_bbc(snap: Snapshot) -> list[Document]:
    docs = []
    for path in snap.files("bbc/"):
        if not path.endswith(".txt") or "README" in path.upper():
            continue
        lines = [ln.strip() for ln in snap.read(path).splitlines() if ln.strip()]
        body = [Unit(s) for para in lines[1:] for s in split_sentences(para)]
        docs.append(Document("bbc_news", "news", tuple(body)))
    return docs


def read_reviews(snap: Snapshot) -> list[Document]:
    rows = csv.DictReader(io.StringIO(snap.read("deceptive-opinion.csv")))
    return [Document("hotel_reviews", "reviews", tuple(Unit(s) for s in split_sentences(r["text"]))) for r in rows]


def read_dialogsum(snap: Snapshot) -> list[Document]:
    docs = []
    for path in ("DialogSum_Data/dialogsum.dev.jsonl", "DialogSum_Data/dialogsum.test.jsonl"):
        seen: set[str] = set()
        for line in snap.read(path).splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            dialogue = row["dialogue"]
            if dialogue in seen:  # the test split repeats each dialogue per reference
                continue
            seen.add(dialogue)
            turns = []
            for turn in dialogue.split("\n"):
                speaker, _, text = turn.partition(":")
                if text.strip():
                    turns.append((speaker.strip(), text.replace(" ' ", "'").strip()))
            docs.append(Document("dialogsum", "dialogue", tuple(turns_to_units(turns))))
    return docs


def read_debates_2016(snap: Snapshot) -> list[Document]:
    by_date: dict[str, list[tuple[str, str]]] = {}
    for row in csv.DictReader(io.StringIO(snap.read("debate.csv"))):
        if row["Speaker"] in ("Audience", "CANDIDATES"):
            continue
        text = re.sub(r"\([A-Z ]+\)", "", row["Text"]).strip()
        if text:
            by_date.setdefault(row["Date"], []).append((row["Speaker"], text))
    return [Document("debates_2016", "debate", tuple(turns_to_units(t))) for _, t in sorted(by_date.items())]


_SPEAKER_LINE = re.compile(r"^([A-Z][\w.' ]{1,40}):\s*(?:\(\d[\d:]*\))?$")


def read_debates_2020(snap: Snapshot) -> list[Document]:
    docs = []
    for path in snap.files("input/"):
        if not path.endswith(".txt"):
            continue
        turns: list[tuple[str, str]] = []
        speaker = ""
        for line in snap.read(path).splitlines():
            line = line.strip()
            m = _SPEAKER_LINE.match(line)
            if m:
                speaker = m.group(1).strip()
            elif line and speaker:
                turns.append((speaker, re.sub(r"\.(?=[A-Z])", ". ", line)))
        docs.append(Document("debates_2020", "debate", tuple(turns_to_units(turns))))
    return docs


def read_wikitext(snap: Snapshot) -> list[Document]:
    docs = []
    for path in ("data/wikitext-2/valid.txt", "data/wikitext-2/test.txt"):
        for line in snap.read(path).splitlines():
            line = line.strip()
            if not line or line.startswith("="):
                continue
            run: list[Unit] = []
            for s in split_sentences(detokenize(line)):
                if "<unk>" in s:
                    if len(run) >= 2:
                        docs.append(Document("wikitext", "encyclopedic", tuple(run)))
                    run = []
                else:
                    run.append(Unit(s))
            if len(run) >= 2:
                docs.append(Document("wikitext", "encyclopedic", tuple(run)))
    return docs


# --------------------------------------------------------------------------- labelled pairs


@dataclass(frozen=True)
class Pair:
    premise: str
    hypothesis: str
    label: int
    source: str
    kind: str

    def row(self) -> dict[str, object]:
        return {
            "premise": self.premise, "hypothesis": self.hypothesis, "label": self.label,
            "source": self.source, "kind": self.kind,
        }


def nli_label(raw: str) -> int | None:
    raw = raw.strip().lower()
    if raw in ("entailment", "entails", "1"):
        return 1
    if raw in ("contradiction", "neutral", "not_entailment", "non_entailment", "0"):
        return 0
    return None


def read_docnli(snap: Snapshot) -> Iterator[Pair]:
    for name, source in (("binary-MNLI", "mnli"), ("binary-FEVER-NLI", "fever_nli")):
        for split in ("dev", "test"):
            for line in snap.read(f"Data/{name}/{split}.txt").splitlines():
                parts = line.split("\t")
                if len(parts) != 3:
                    continue
                label = nli_label(parts[0])
                if label is not None:
                    yield Pair(detokenize(parts[1]), detokenize(parts[2]), label, source, "nli")


def read_snli(snap: Snapshot) -> Iterator[Pair]:
    for split in ("dev", "test"):
        for line in snap.read(f"snli_1.0/snli_1.0_{split}.jsonl").splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            label = nli_label(row["gold_label"])
            if label is not None:
                yield Pair(row["sentence1"], row["sentence2"], label, "snli", "nli")


def read_rte(snap: Snapshot) -> Iterator[Pair]:
    for split in ("train", "dev"):
        rows = csv.reader(io.StringIO(snap.read(f"data/RTE/{split}.tsv")), delimiter="\t", quoting=csv.QUOTE_NONE)
        next(rows, None)
        for parts in rows:
            if len(parts) == 4 and (label := nli_label(parts[3])) is not None:
                yield Pair(parts[1], parts[2], label, "rte", "nli")


def read_anli(snap: Snapshot) -> Iterator[Pair]:
    for round_ in ("r1", "r2", "r3"):
        text = snap.read(f"anlizinganli/anli_annot_v0.2/ANLI_analysis_{round_}_dev.csv")
        for row in csv.DictReader(io.StringIO(text)):
            label = {"e": 1, "n": 0, "c": 0}.get(row["gold_label"].strip())
            if label is not None:
                yield Pair(row["context"], row["statement"], label, "anli", "nli")


STOPWORDS = {
    "the", "a", "an", "of", "to", "in", "on", "at", "and", "or", "is", "was", "are", "were", "be",
    "for", "with", "by", "that", "this", "it", "he", "she", "they", "his", "her", "their", "as",
    "from", "has", "have", "had", "will", "said", "says", "s", "t", "not", "but", "its", "who",
}


def evidence_window(article: str, claim: str, max_words: int) -> str:
    """The article sentences sharing the most content words with ``claim``, in article order,
    at most ``max_words`` words (a long document cut to what a short premise can hold)."""
    sentences = split_sentences(article)
    want = set(words(claim)) - STOPWORDS
    ranked = sorted(
        range(len(sentences)),
        key=lambda j: (-len((set(words(sentences[j])) - STOPWORDS) & want), j),
    )
    chosen: list[int] = []
    total = 0
    for j in ranked:
        n = len(sentences[j].split())
        if total + n > max_words:
            continue
        chosen.append(j)
        total += n
    return " ".join(sentences[j] for j in sorted(chosen))


def read_qags(snap: Snapshot, max_words: int) -> Iterator[Pair]:
    """QAGS (Wang et al. 2020): summary sentences judged by three workers; supported iff 2+ say yes."""
    for name in ("cnndm", "xsum"):
        for line in snap.read(f"data/mturk_{name}.jsonl").splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            for item in row["summary_sentences"]:
                votes = [r["response"] for r in item["responses"]]
                label = 1 if sum(v == "yes" for v in votes) * 2 > len(votes) else 0
                claim = item["sentence"]
                premise = evidence_window(row["article"], claim, max_words)
                if premise and claim.strip():
                    yield Pair(premise, claim, label, f"qags_{name}", "summary_human")


SUMMAC_DATA_COMMIT = "24b49de0cd9621d28aac01456691cc0d3765fa27"  # tingofurro/summac: data/*.json


def read_summac(snap: Snapshot, max_words: int) -> Iterator[Pair]:
    """Human-labelled summary sets as the SummaC repository stores them, with their documents.

    FactCC and XSumFaith label single summary sentences: each is one pair. SummEval and
    Polytope label whole summaries: a consistent summary (Polytope: no addition and no
    inaccuracy error; omissions do not count) gives one supported pair per sentence; an
    inconsistent one is skipped, since no file says which of its sentences is wrong.
    """
    for name in ("factcc", "xsumfaith", "summeval", "polytope"):
        path = f"data/{name}.json"
        data = json.loads(snap.read_at(SUMMAC_DATA_COMMIT, path))
        snap.used_paths.append(f"{path}@{SUMMAC_DATA_COMMIT[:12]}")
        for key in sorted(data):
            row = data[key]
            document, claim = str(row["document"]), str(row["claim"])
            if name in ("factcc", "xsumfaith"):
                claims, label = [claim], int(row["label"])
            else:
                consistent = (
                    int(row["addition_label"]) == 1 and int(row["inaccuracy_label"]) == 1
                    if name == "polytope"
                    else int(row["label"]) == 1
                )
                if not consistent:
                    continue
                # lower-cased model output: split at every stop, the splitter wants capitals
                claims, label = [c for c in re.split(r"(?<=[.!?])\s+", claim.strip()) if c], 1
            for c in claims:
                premise = evidence_window(document, c, max_words)
                if premise and len(c.split()) >= 4:
                    yield Pair(premise, c, label, f"summac_{name}", "summary_human")


# --------------------------------------------------------------------------- the synthetic generator

POSITIVE_KINDS = ("copy", "compress", "fusion", "attribution_keep")
NEGATIVE_KINDS = (
    "negation", "antonym", "quantifier", "number", "entity_swap", "role_swap", "attribution_swap",
    "invented_adjective", "invented_circumstance", "same_document", "other_document",
)
POSITIVE_SHARE = {"copy": 0.2, "compress": 0.35, "fusion": 0.3, "attribution_keep": 0.15}


def window(units: Sequence[Unit], i: int, rng: random.Random, max_words: int, need: int = 1) -> tuple[int, int] | None:
    """A run ``[a, b)`` of 2-5 units holding ``units[i : i + need]``, at most ``max_words`` words."""
    size = rng.randint(max(2, need), max(5, need))
    a = max(0, i - rng.randint(0, size - need))
    b = min(len(units), a + size)
    a = max(0, min(a, b - size))

    def count(x: int, y: int) -> int:
        return sum(len(u.text.split()) + (2 if u.speaker else 0) for u in units[x:y])

    while count(a, b) > max_words and b - a > need:
        if i - a > b - (i + need):
            a += 1
        else:
            b -= 1
    if count(a, b) > max_words or b - a < 2:
        return None
    return a, b


@dataclass
class Quotas:
    """How many pairs of each kind are still wanted."""

    left: dict[str, int]

    def order(self, kinds: Sequence[str], target: dict[str, int], rng: random.Random) -> list[str]:
        open_kinds = [k for k in kinds if self.left.get(k, 0) > 0]
        keys = {k: (-(self.left[k] / max(target[k], 1)), rng.random()) for k in open_kinds}
        return sorted(open_kinds, key=lambda k: keys[k])


def _overlap(a: str, b: str) -> float:
    wa, wb = set(words(a)), set(words(b))
    return len(wa & wb) / max(len(wa), 1)


def make_negative(kind: str, doc: Document, i: int, premise: str, window_units: Sequence[Unit],
                  span: tuple[int, int], pool: Sequence[Document], rng: random.Random) -> str | None:
    """The hypothesis of one negative kind for source sentence ``doc.units[i]``, or None."""
    s = doc.units[i].text
    if kind == "negation":
        return negate(s, rng)
    if kind == "antonym":
        return swap_antonym(s, rng)
    if kind == "quantifier":
        return swap_quantifier(s, rng)
    if kind == "number":
        return change_number(s, rng)
    if kind == "entity_swap":
        return swap_entities(s, rng)
    if kind == "role_swap":
        return swap_roles(s, rng)
    if kind == "attribution_swap":
        speaker = doc.units[i].speaker
        if speaker:
            others = sorted({u.speaker for u in window_units if u.speaker and u.speaker != speaker})
            return speaker_line(rng.choice(others), s) if others else None
        others = [n for n in names(premise) if " " in n or premise.count(n) > 1]
        return swap_attribution(s, others, rng)
    if kind == "invented_adjective":
        return invent_adjective(s, premise, rng)
    if kind == "invented_circumstance":
        return invent_circumstance(s, premise, rng)
    if kind == "same_document":
        outside = [j for j in range(len(doc.units)) if not span[0] - 2 <= j < span[1] + 2 and good_sentence(doc.units[j].text)]
        rng.shuffle(outside)
        for j in outside[:5]:
            if _overlap(doc.units[j].text, premise) < 0.5:
                return doc.units[j].text
        return None
    if kind == "other_document":
        other = rng.choice(pool)
        if other is doc or not other.units:
            return None
        candidate = rng.choice(other.units).text
        return candidate if good_sentence(candidate) and _overlap(candidate, premise) < 0.5 else None
    raise ValueError(kind)


def make_positive(kind: str, doc: Document, i: int, rng: random.Random) -> str | None:
    s = doc.units[i].text
    if kind == "copy":
        return s
    if kind == "compress":
        return compress(s, rng)
    if kind == "fusion":
        if i + 1 < len(doc.units) and doc.units[i + 1].speaker == doc.units[i].speaker and good_sentence(doc.units[i + 1].text):
            return fuse(s, doc.units[i + 1].text)
        return None
    if kind == "attribution_keep":
        speaker = doc.units[i].speaker
        return speaker_line(speaker, s) if speaker else None
    raise ValueError(kind)


def synthesize(docs_by_genre: dict[str, list[Document]], genre_share: dict[str, float], n_pos: int, n_neg: int,
               seed: int, max_words: int) -> list[Pair]:
    """Synthetic pairs: about ``n_pos`` positives and ``n_neg`` negatives, split across genres."""
    pairs: list[Pair] = []
    total_share = sum(genre_share[g] for g in docs_by_genre)
    for genre in sorted(docs_by_genre):
        docs = [d for d in docs_by_genre[genre] if len(d.units) >= 2]
        if not docs:
            continue
        rng = random.Random(f"{seed}:{genre}")
        share = genre_share[genre] / total_share
        want_pos, want_neg = round(n_pos * share), round(n_neg * share)
        pos_target = {k: max(1, round(want_pos * POSITIVE_SHARE[k])) for k in POSITIVE_KINDS}
        neg_target = {k: max(1, round(want_neg / len(NEGATIVE_KINDS))) for k in NEGATIVE_KINDS}
        if genre not in ("dialogue", "debate"):
            pos_target["attribution_keep"] = 0
            extra = round(want_pos * POSITIVE_SHARE["attribution_keep"])
            pos_target["copy"] += extra // 2
            pos_target["compress"] += extra - extra // 2
        pos_q, neg_q = Quotas(dict(pos_target)), Quotas(dict(neg_target))
        made_pos = made_neg = 0
        seen: set[tuple[str, str]] = set()
        for _ in range(max(60, 4 * (want_pos + want_neg) // len(docs) + 1)):
            progress = False
            order = list(range(len(docs)))
            rng.shuffle(order)
            for d in order:
                if made_pos >= want_pos and made_neg >= want_neg:
                    break
                doc = docs[d]
                i = rng.randrange(len(doc.units))
                if not good_sentence(doc.units[i].text):
                    continue
                span = window(doc.units, i, rng, max_words, need=2 if rng.random() < 0.35 else 1)
                if span is None:
                    continue
                units = doc.units[span[0] : span[1]]
                premise = render(units)
                fits_fusion = span[1] > i + 1
                if made_neg < want_neg:
                    for kind in neg_q.order(NEGATIVE_KINDS, neg_target, rng):
                        h = make_negative(kind, doc, i, premise, units, span, docs, rng)
                        if h and h != doc.units[i].text and (premise, h) not in seen and h not in premise:
                            seen.add((premise, h))
                            pairs.append(Pair(premise, h, 0, doc.source, kind))
                            neg_q.left[kind] -= 1
                            made_neg += 1
                            progress = True
                            break
                if made_pos < want_pos:
                    kinds = [k for k in pos_q.order(POSITIVE_KINDS, pos_target, rng) if k != "fusion" or fits_fusion]
                    for kind in kinds:
                        h = make_positive(kind, doc, i, rng)
                        if h and (premise, h) not in seen:
                            seen.add((premise, h))
                            pairs.append(Pair(premise, h, 1, doc.source, kind))
                            pos_q.left[kind] -= 1
                            made_pos += 1
                            progress = True
                            break
            if not progress or (made_pos >= want_pos and made_neg >= want_neg):
                break
            # once every kind's quota is spent, open all kinds again to reach the totals
            if all(v <= 0 for v in neg_q.left.values()) and made_neg < want_neg:
                neg_q.left = {k: want_neg for k in NEGATIVE_KINDS}
            if all(v <= 0 for v in pos_q.left.values()) and made_pos < want_pos:
                pos_q.left = {k: want_pos for k in POSITIVE_KINDS if pos_target[k] > 0}
    return pairs


# --------------------------------------------------------------------------- leakage filter


def exclusion_texts(paths: Sequence[Path]) -> Iterator[tuple[str, str]]:
    """``(origin, text)`` for every string of 8+ words in the held-out JSON/JSONL files under ``paths``."""

    def strings(value: object) -> Iterator[str]:
        if isinstance(value, str):
            if len(value.split()) >= NGRAM:
                yield value
        elif isinstance(value, dict):
            for v in value.values():
                yield from strings(v)
        elif isinstance(value, list):
            for v in value:
                yield from strings(v)

    for root in paths:
        files = sorted(root.rglob("*")) if root.is_dir() else [root]
        for f in files:
            if f.suffix not in (".json", ".jsonl") or not f.is_file():
                continue
            text = f.read_text(encoding="utf-8", errors="replace")
            try:
                values: list[object] = [json.loads(text)]
            except json.JSONDecodeError:
                values = [json.loads(ln) for ln in text.splitlines() if ln.strip()]
            for v in values:
                for s in strings(v):
                    yield str(f), s


# --------------------------------------------------------------------------- FRANK evaluation file


def frank_rows(snap: Snapshot) -> list[dict[str, str]]:
    """FRANK (Pagnoni et al. 2021) as an evaluation set: one row per annotated summary.

    ``label`` is ``"1"`` (consistent) iff the summary's ``Factuality`` score is 1.0,
    i.e. no sentence was judged to hold a factual error (the binarisation SummaC and
    AlignScore use). Articles and summaries come from the initial commit's
    ``articles-wbertscore-json`` files (``benchmark_data.json`` is over the snapshot
    size limit); FRANK's ``valid``/``test`` splits become ``evaluation``/``test``.
    """
    annotations = json.loads(snap.read("data/human_annotations.json"))
    commit = snap.files_commit
    articles: dict[str, dict[str, object]] = {}
    for path in snap.files(FRANK_ARTICLES, commit):
        record = json.loads(snap.read_at(commit, path))
        articles[str(record["hash"])] = record
    rows = []
    for ann in annotations:
        record = articles.get(str(ann["hash"]))
        if record is None:
            continue
        model = str(ann["model_name"])
        summary = record.get(f"{model}_cased") or record.get(model)
        if not isinstance(summary, str):
            continue
        rows.append({
            "id": f"{ann['hash']}:{model}",
            "doc": str(record["article"]),
            "summary": summary.replace("\\'", "'"),
            "label": "1" if float(ann["Factuality"]) == 1.0 else "0",
            "split": "evaluation" if ann["split"] == "valid" else "test",
            "dataset": str(ann["dataset"]),
            "model": model,
        })
    rows.sort(key=lambda r: (r["split"], r["id"]))
    return rows


# --------------------------------------------------------------------------- main

LABELLED: dict[str, tuple[str, Callable[[Snapshot], Iterator[Pair]], str]] = {
    "docnli": ("salesforce/DocNLI", read_docnli,
               "repo BSD-3-Clause; binary MNLI (MultiNLI: OANC/fiction licences, mostly free) and "
               "binary FEVER-NLI (FEVER: CC BY-SA 3.0, Wikipedia)"),
    "snli": ("Deltaus/sBiMPM", read_snli, "SNLI 1.0: CC BY-SA 4.0 (repo has no licence file; a dev/test sample)"),
    "rte": ("marcwww/nlu_eval", read_rte, "GLUE RTE (RTE1-3,5 via GLUE; research use; repo has no licence file)"),
    "anli": ("facebookresearch/anli", read_anli, "ANLI v1.0 dev rounds 1-3 (annotated copies): CC BY-NC 4.0"),
    "qags": ("W4ngatang/qags", lambda snap: read_qags(snap, QAGS_WORDS),
             "QAGS human judgements (CNN/DM, XSum summaries); no licence file for the data"),
    "summac": ("tingofurro/summac", lambda snap: read_summac(snap, QAGS_WORDS),
               "repo Apache-2.0; FactCC annotated (BSD-3-Clause), XSumFaith (CC BY 4.0), SummEval (MIT), "
               "Polytope; documents CNN/DM and XSum"),
}
DOCUMENTS: dict[str, tuple[str, Callable[[Snapshot], list[Document]], str, str]] = {
    "bbc": ("dejanbatanjac/bbc-article-classify-bert", read_bbc, "news",
            "BBC dataset (Greene & Cunningham 2006): research use, copyright BBC"),
    "reviews": ("isha-2812/nlp_opinion_spamming", read_reviews, "reviews",
                "Deceptive Opinion Spam corpus (Ott et al. 2011/2013): CC BY-NC-SA 3.0"),
    "dialogsum": ("cylnlp/dialogsum", read_dialogsum, "dialogue", "DialogSum: CC BY-NC-SA 4.0"),
    "debates2016": ("user01/Presidential-Debates", read_debates_2016, "debate",
                    "2016 debate transcripts (Kaggle): CC0 per README; repo MIT"),
    "debates2020": ("domrussel/us_pres_debate", read_debates_2020, "debate",
                    "2020 debate transcripts (rev.com / debates.org); no licence file"),
    "wikitext": ("DiMarzioBian/Neural-Probabilistic-Language-Model-NIPS-2000", read_wikitext, "encyclopedic",
                 "WikiText-2 (Merity et al.): CC BY-SA 3.0"),
}
GENRE_SHARE = {"news": 0.3, "reviews": 0.2, "dialogue": 0.2, "debate": 0.15, "encyclopedic": 0.15}
DEFAULT_EXCLUDE = (
    "../shared/data", "evenhand/data", "benchmarks/data", "rerank/checker/corpus.jsonl",
)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True, help="output folder (train file, manifest)")
    p.add_argument("--name", default="train.jsonl", help="training file name inside --out (default train.jsonl)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--size", type=int, default=100_000, help="target number of pairs (60k-150k)")
    p.add_argument("--max-premise-words", type=int, default=90)
    p.add_argument("--neg-ratio", type=float, default=1.3,
                   help="keep at most this many human-labelled negatives per positive (default 1.3)")
    p.add_argument("--exclude", type=Path, action="append", default=None,
                   help="held-out JSON/JSONL file or folder (repeatable; default: shared data, demo sets, "
                   "contradiction sets, checker corpus)")
    p.add_argument("--frank", type=Path, help="artidoro/frank snapshot: held out (leakage filter) and written as frank_eval.jsonl")
    for flag, (repo, *_rest) in {**LABELLED, **DOCUMENTS}.items():
        p.add_argument(f"--{flag}", type=Path, help=f"snapshot of {repo}")
    args = p.parse_args(argv)
    if args.size < 1000:
        p.error(f"--size must be at least 1000, got {args.size}")
    if not 20 <= args.max_premise_words <= 400:
        p.error(f"--max-premise-words must be within 20..400, got {args.max_premise_words}")
    return args


def build(args: argparse.Namespace) -> dict[str, object]:
    rng = random.Random(args.seed)
    sources: list[dict[str, object]] = []

    # held-out n-grams
    exclude = args.exclude or [REPO_ROOT / p for p in DEFAULT_EXCLUDE]
    held: dict[str, str] = {}
    for origin, text in exclusion_texts([Path(p) for p in exclude]):
        for g in ngrams(text):
            held.setdefault(g, origin)
    frank: list[dict[str, str]] = []
    if args.frank:
        snap = Snapshot("frank", args.frank, "artidoro/frank")
        snap.files_commit = snap_first_commit(snap)
        frank = frank_rows(snap)
        sources.append({"flag": "frank", "repo": snap.repo, "commit": snap.commit,
                        "articles_commit": snap.files_commit,
                        "paths": ["data/human_annotations.json", "data/articles-wbertscore-json/* (at articles_commit)"],
                        "licence": "MIT (repo LICENSE)", "licence_file": snap.licence_file(),
                        "kind": "held out: evaluation only (frank_eval.jsonl), never training text",
                        "rows_used": 0})
        for row in frank:
            for g in ngrams(row["doc"]) | ngrams(row["summary"]):
                held.setdefault(g, "FRANK")

    def leaks(pair: Pair) -> str | None:
        for text in (pair.hypothesis, pair.premise):
            for g in ngrams(text):
                if g in held:
                    return held[g]
        return None

    # human-labelled pairs
    human: list[Pair] = []
    dropped: Counter[str] = Counter()
    for flag, (repo, reader, licence) in LABELLED.items():
        path = getattr(args, flag)
        if path is None:
            continue
        snap = Snapshot(flag, path, repo)
        got = Counter()
        for pair in reader(snap):
            if len(pair.premise.split()) > args.max_premise_words or not pair.hypothesis.strip():
                got["too_long"] += 1
                continue
            origin = leaks(pair)
            if origin:
                dropped[Path(origin).name if origin != "FRANK" else origin] += 1
                got["leak"] += 1
                continue
            human.append(pair)
            got[pair.source] += 1
        sources.append({"flag": flag, "repo": repo, "commit": snap.commit, "paths": sorted(set(snap.used_paths)),
                        "licence": licence, "licence_file": snap.licence_file(), "kind": "labelled",
                        "read": dict(sorted(got.items()))})
    human = sorted(set(human), key=lambda p: (p.source, p.premise, p.hypothesis, p.label))
    pos = [p for p in human if p.label == 1]
    neg = [p for p in human if p.label == 0]
    rng.shuffle(neg)
    neg = neg[: int(len(pos) * args.neg_ratio)]
    human = pos + neg

    # documents -> synthetic pairs
    docs_by_genre: dict[str, list[Document]] = {}
    doc_sources: dict[str, dict[str, object]] = {}
    for flag, (repo, reader, genre, licence) in DOCUMENTS.items():
        path = getattr(args, flag)
        if path is None:
            continue
        snap = Snapshot(flag, path, repo)
        docs = reader(snap)
        docs_by_genre.setdefault(genre, []).extend(docs)
        entry = {"flag": flag, "repo": repo, "commit": snap.commit, "paths": summarize_paths(snap.used_paths),
                 "licence": licence, "licence_file": snap.licence_file(), "kind": f"documents:{genre}",
                 "documents": len(docs)}
        sources.append(entry)
        for d in docs:
            doc_sources[d.source] = entry
    half = args.size // 2
    n_pos = max(0, half - len(pos))
    n_neg = max(0, args.size - half - len(neg))
    synthetic = synthesize(docs_by_genre, GENRE_SHARE, n_pos, n_neg, args.seed, args.max_premise_words)
    kept_synth: list[Pair] = []
    for pair in synthetic:
        origin = leaks(pair)
        if origin:
            dropped[Path(origin).name if origin != "FRANK" else origin] += 1
            continue
        kept_synth.append(pair)

    rows = human + kept_synth
    rng.shuffle(rows)
    out: Path = args.out
    train_bytes = "".join(json.dumps(p.row(), ensure_ascii=False) + "\n" for p in rows).encode("utf-8")
    atomic_write_bytes(out / args.name, train_bytes)
    frank_bytes = b""
    if frank:
        frank_bytes = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in frank).encode("utf-8")
        frank_path = out / "frank_eval.jsonl"
        # a reader may hold the file open: leave identical bytes in place
        if not (frank_path.is_file() and frank_path.read_bytes() == frank_bytes):
            atomic_write_bytes(frank_path, frank_bytes)

    used = Counter(p.source for p in rows)
    for entry in sources:
        if entry["kind"] == "labelled":
            read = entry["read"]
            assert isinstance(read, dict)
            entry["rows_used"] = {s: used[s] for s in sorted(used) if s in read}
        else:
            entry["rows_used"] = sum(n for s, n in used.items() if doc_sources.get(s) is entry)
    manifest = {
        "file": args.name,
        "sha256": hashlib.sha256(train_bytes).hexdigest(),
        "seed": args.seed,
        "size_target": args.size,
        "rows": len(rows),
        "labels": dict(sorted(Counter(str(p.label) for p in rows).items())),
        "kinds": {f"{p_kind}": n for p_kind, n in sorted(Counter(f"{p.label}:{p.kind}" for p in rows).items())},
        "by_source": dict(sorted(used.items())),
        "human_labelled": len(human),
        "synthetic": len(kept_synth),
        "max_premise_words": args.max_premise_words,
        "label_map": "entailment -> 1; contradiction, neutral, not_entailment -> 0",
        "sources": sources,
        "exclusions": {
            "held_out": [str(p) for p in exclude] + (["FRANK (artidoro/frank, written as frank_eval.jsonl)"] if frank else []),
            "held_out_ngrams": len(held),
            "rule": f"drop a pair if its premise or hypothesis shares a {NGRAM}-gram of lower-cased words with any held-out text",
            "dropped_by_origin": dict(sorted(dropped.items())),
            "dropped_total": sum(dropped.values()),
        },
        "frank_eval": {"file": "frank_eval.jsonl", "sha256": hashlib.sha256(frank_bytes).hexdigest(), "rows": len(frank), "labels": dict(sorted(Counter(r["label"] for r in frank).items())),
                       "splits": dict(sorted(Counter(r["split"] for r in frank).items()))} if frank else None,
    }
    manifest_name = "manifest.json" if args.name == "train.jsonl" else Path(args.name).stem.replace("train", "manifest") + ".json"
    with atomic_open(out / manifest_name) as f:
        f.write(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
    return manifest


def snap_first_commit(snap: Snapshot) -> str:
    """The newest commit whose tree still holds FRANK's article files (later commits removed them)."""
    done = subprocess.run(["git", "--git-dir", str(snap.git_dir), "rev-list", "HEAD"],
                          capture_output=True, text=True, check=False)
    for commit in done.stdout.split():
        if snap.files(FRANK_ARTICLES, commit):
            return commit
    raise UsageError(f"--frank: no commit of {snap.repo} holds {FRANK_ARTICLES}; pass a full artidoro/frank snapshot")


def summarize_paths(paths: Sequence[str]) -> list[str]:
    """Paths as read, folders with more than 20 files shown as ``folder/* (N files)``."""
    by_folder = Counter(str(Path(p).parent) for p in paths)
    out = []
    for p in sorted(set(paths)):
        folder = str(Path(p).parent)
        if by_folder[folder] > 20:
            entry = f"{folder}/* ({by_folder[folder]} files)"
            if entry not in out:
                out.append(entry)
        else:
            out.append(p)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        manifest = build(args)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps({k: manifest[k] for k in ("rows", "labels", "kinds", "by_source")}, indent=1))
    print(json.dumps(manifest["exclusions"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
