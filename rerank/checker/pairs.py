"""Synthetic training pairs for the checker (FactCC's recipe, Kryściński et al. 2020).

From source texts only: every document sentence yields *supported* claims
(the sentence itself, one of its clauses, the sentence reported in the third
person — "One reviewer says that ..." — and an opinion template "Most
reviewers praised the <aspect>" with the clause's polarity) and *corrupted*
claims, each paired with the document as premise:

- ``negation``: "not" inserted after, or removed from, an auxiliary; "never" dropped or added;
- ``polarity``: a praise word swapped for its complaint antonym or back (``lexicon.OPINION_PAIRS``),
  or a template claim with the opposite opinion verb;
- ``number``: a number (digit or word) replaced by another;
- ``aspect``: the aspect noun replaced by one from another example (an invented aspect),
  or a template claim about such an aspect;
- ``other``: a sentence of a document of another group of the same example
  (one group's opinion given to another).

Quantity ("one" vs "most") is not a property of one premise: the checker
reads it when aggregating over documents (``claims.aggregate``), so template
claims carry every quantifier with the same label. Everything is drawn from
``random.Random(seed)``: the same texts and seed give the same pairs.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ...evaluation.text.sentences import split_sentences
from .lexicon import (
    AUX,
    COMPLAINT,
    COMPLAINT_VERBS,
    NUMBER_WORDS,
    OPINION_PAIRS,
    PERSON,
    PRAISE,
    PRAISE_VERBS,
    REPORT_VERBS,
    SUBJECTS,
    group_polarity,
    polarity,
)

_SWAP = {**{a: b for a, b in OPINION_PAIRS}, **{b: a for a, b in OPINION_PAIRS}}
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_ASPECT = re.compile(r"\b(?:the|my|our|their|its|a|an)\s+([a-z-]{3,})(?:\s+([a-z-]{3,}))?(?:\s+([a-z']+))?")
_AFTER_NOUN = {"is", "are", "was", "were", "has", "have", "had", "get", "gets", "got", "feel", "feels", "look",
               "looks", "can", "will", "would", "did", "does", "do", "stay", "stays", "seem", "seems", ""}
_NUMBER = re.compile(r"\b(\d+(?:[.,]\d+)?|" + "|".join(NUMBER_WORDS) + r")\b", re.IGNORECASE)
_STOP_ASPECT = {"whole", "same", "first", "last", "next", "other", "only", "day", "time", "way", "thing",
                "lot", "bit", "while", "week", "month", "year", "hour", "minutes", "morning", "night"}


@dataclass(frozen=True)
class Pair:
    """A premise, a claim, and whether the premise supports it (1) or not (0), with its kind."""

    premise: str
    claim: str
    label: int
    kind: str


def aspects(text: str) -> list[str]:
    """Noun-phrase candidates after a determiner ("the battery", "my back pain").

    >>> aspects("The battery lasts a week and the ear cushions get warm")
    ['battery', 'ear cushions']
    """
    out = []
    for m in _ASPECT.finditer(text.lower()):
        first, second, after = m.group(1), m.group(2), m.group(3) or ""
        phrase = f"{first} {second}" if second and after in _AFTER_NOUN else first
        last = phrase.split()[-1]
        if last in _STOP_ASPECT or last in PRAISE or last in COMPLAINT or last in NUMBER_WORDS:
            continue
        if phrase.split()[0] in PRAISE | COMPLAINT:
            phrase = last
        out.append(phrase)
    return out


def third_person(sentence: str) -> str:
    """A review sentence as reported speech: first-person words become third-person.

    >>> third_person("I could not put it down; my daughter loves it.")
    'they could not put it down; their daughter loves it.'
    """
    body = sentence if sentence.startswith(("I ", "I'")) else sentence[:1].lower() + sentence[1:]
    return re.sub(r"[A-Za-z']+", lambda m: PERSON.get(m.group(0).lower(), m.group(0)), body)


def negate(sentence: str, rng: random.Random) -> str | None:
    """The sentence with its first auxiliary negated (or its negation removed); None if it has none."""
    m = re.search(r"\b(" + "|".join(AUX) + r")\s+(not|never)\b\s*", sentence, re.IGNORECASE)
    if m:
        return sentence[: m.start(2)] + sentence[m.end(2):].lstrip()
    m = re.search(r"\b(can't|cannot|won't|don't|doesn't|didn't|isn't|aren't|wasn't|never)\b\s*", sentence, re.I)
    if m:
        undo = {"can't": "can", "cannot": "can", "won't": "will", "don't": "do", "doesn't": "does",
                "didn't": "did", "isn't": "is", "aren't": "are", "wasn't": "was", "never": ""}
        repl = undo[m.group(1).lower()]
        return sentence[: m.start()] + (repl + " " if repl else "") + sentence[m.end():]
    m = re.search(r"\b(" + "|".join(AUX[:9]) + r")\b", sentence, re.IGNORECASE)
    if m:
        word = rng.choice(["not", "never"]) if m.group(1).lower() in ("is", "are", "was", "were") else "not"
        return sentence[: m.end()] + " " + word + sentence[m.end():]
    return None


def swap_opinion(sentence: str, rng: random.Random) -> str | None:
    """One opinion word swapped for its antonym (lexicon); None if the sentence has none."""
    spots = [m for m in _WORD.finditer(sentence) if m.group(0).lower() in _SWAP]
    if not spots:
        return None
    m = rng.choice(spots)
    new = _SWAP[m.group(0).lower()]
    if m.group(0)[0].isupper():
        new = new[0].upper() + new[1:]
    return sentence[: m.start()] + new + sentence[m.end():]


def swap_number(sentence: str, rng: random.Random) -> str | None:
    """One number replaced by a different one; None if the sentence has none."""
    spots = list(_NUMBER.finditer(sentence))
    if not spots:
        return None
    m = rng.choice(spots)
    old = m.group(0)
    if old[0].isdigit():
        value = float(old.replace(",", ""))
        factor = rng.choice([2, 3, 0.5, 10])
        new_value = value * factor if value * factor != value else value + 3
        new = str(int(new_value)) if new_value == int(new_value) else f"{new_value:g}"
    else:
        new = rng.choice([w for w in NUMBER_WORDS if w != old.lower()])
    return sentence[: m.start()] + new + sentence[m.end():]


def swap_aspect(sentence: str, foreign: Sequence[str], rng: random.Random) -> str | None:
    """The sentence's aspect replaced by one it does not mention; None if it has none."""
    own = aspects(sentence)
    choices = [a for a in foreign if a not in sentence.lower()]
    if not own or not choices:
        return None
    old = rng.choice(own)
    i = sentence.lower().find(old)
    return sentence[:i] + rng.choice(choices) + sentence[i + len(old):]


def template(aspect: str, positive: bool, rng: random.Random) -> str:
    """ "<Subject> <praised|complained about> the <aspect>." """
    subject, _ = rng.choice(SUBJECTS)
    verb = rng.choice(PRAISE_VERBS if positive else COMPLAINT_VERBS)
    if subject in ("Reviewers", "A few reviewers", "Some reviewers", "Most reviewers", "Many reviewers"):
        verb = verb.replace("was ", "were ")
    return f"{subject} {verb} the {aspect}."


def reported(sentence: str, rng: random.Random) -> str:
    """ "One reviewer says that <the sentence in the third person>" """
    subject, _ = rng.choice(SUBJECTS)
    verb = rng.choice(REPORT_VERBS)
    if subject in ("Reviewers", "A few reviewers", "Some reviewers", "Most reviewers", "Many reviewers"):
        verb = verb[:-2] if verb.endswith("es") and verb not in ("notes", "writes") else verb.rstrip("s")
        verb = verb.replace("points", "point")
    return f"{subject} {verb} that {third_person(sentence)}"


def _clauses(sentence: str) -> list[str]:
    parts = re.split(r",\s+(?:but|though|although|and|while)\s+|;\s+|:\s+|\s+but\s+", sentence)
    return [p.strip(" .") + "." for p in parts if len(p.split()) >= 3]


def build_pairs(examples: Sequence[dict], seed: int = 0, rounds: int = 2) -> list[Pair]:
    """Supported and corrupted (premise, claim) pairs from source examples (see the module docstring).

    ``examples``: dicts with ``documents`` ([{"text", "group"}]), the generic JSONL form.
    ``rounds``: passes over the texts, each with fresh random choices.
    """
    rng = random.Random(seed)
    all_aspects = sorted({a for ex in examples for d in ex["documents"] for a in aspects(d["text"])})
    pairs: list[Pair] = []
    for _ in range(rounds):
        for ex in examples:
            docs = ex["documents"]
            own = {a for d in docs for a in aspects(d["text"])}
            foreign = [a for a in all_aspects if a not in own]
            for doc in docs:
                others = [d for d in docs if d["group"] != doc["group"]]
                premise = doc["text"]
                for sentence in split_sentences(premise):
                    pairs.extend(_sentence_pairs(premise, sentence, doc.get("group"), others, foreign, rng))
    rng.shuffle(pairs)
    return pairs


def _sentence_pairs(
    premise: str, sentence: str, group: str | None, others: list[dict], foreign: list[str], rng: random.Random
) -> list[Pair]:
    out: list[Pair] = []
    clauses = _clauses(sentence) or [sentence]
    clause = rng.choice(clauses)
    supported = [sentence, reported(sentence, rng)]
    if len(clauses) > 1:
        supported.append(rng.choice([clause, reported(clause, rng)]))
    pol = polarity(clause) or (group_polarity(group) if len(clauses) == 1 else 0)
    clause_aspects = aspects(clause)
    if pol and clause_aspects:
        aspect = rng.choice(clause_aspects)
        supported.append(template(aspect, pol > 0, rng))
        out.append(Pair(premise, template(aspect, pol < 0, rng), 0, "polarity"))
        if foreign:
            out.append(Pair(premise, template(rng.choice(foreign), pol > 0, rng), 0, "aspect"))
    out.extend(Pair(premise, s, 1, "supported") for s in supported)
    for kind, corrupt in (
        ("negation", lambda s: negate(s, rng)),
        ("polarity", lambda s: swap_opinion(s, rng)),
        ("number", lambda s: swap_number(s, rng)),
        ("aspect", lambda s: swap_aspect(s, foreign, rng)),
    ):
        base = rng.choice(supported[:3])
        bad = corrupt(base)
        if bad and bad != base:
            out.append(Pair(premise, bad, 0, kind))
    if others:
        other = rng.choice(others)
        other_sentence = rng.choice(split_sentences(other["text"]) or [other["text"]])
        out.append(Pair(premise, rng.choice([other_sentence, reported(other_sentence, rng)]), 0, "other"))
    return out
