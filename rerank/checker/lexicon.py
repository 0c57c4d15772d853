"""Words the faithfulness checker reads: opinion antonyms, quantifiers, negation, group names.

The opinion lexicon is a small hand-written list of praise/complaint antonym
pairs (in the spirit of Hu & Liu's opinion lexicon, which is not shipped):
the corruption code swaps them (``pairs``) and ``polarity`` counts them.
Quantifiers split claims into *singular* ("one reviewer", "a few") and
*majority* ("most", "all", "the majority"): the checker aggregates a
majority claim over documents (``claims.aggregate``). Group aliases map how a
summary names a group ("five-star reviewers", "critics", "Okafor") onto the
example's group labels.
"""

from __future__ import annotations

import re

from ...evaluation.text.group_names import LABEL_NAMES, rating_aliases
from ...evaluation.text.numbers import UNIT_WORDS

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")

#: Praise word -> its complaint antonym (each pair is swapped both ways by the corruption code).
OPINION_PAIRS: tuple[tuple[str, str], ...] = (
    ("good", "bad"), ("great", "poor"), ("excellent", "terrible"), ("fresh", "stale"),
    ("comfortable", "uncomfortable"), ("quiet", "noisy"), ("cheap", "expensive"), ("fast", "slow"),
    ("clean", "dirty"), ("easy", "difficult"), ("love", "hate"), ("loved", "hated"), ("loves", "hates"),
    ("friendly", "rude"), ("helpful", "unhelpful"), ("reliable", "unreliable"), ("sturdy", "flimsy"),
    ("accurate", "inaccurate"), ("bright", "dim"), ("perfect", "awful"), ("best", "worst"),
    ("better", "worse"), ("beautiful", "ugly"), ("fun", "boring"), ("smooth", "rough"),
    ("vivid", "dull"), ("safe", "dangerous"), ("praised", "criticised"), ("praise", "criticise"),
    ("praises", "criticises"), ("liked", "disliked"), ("like", "dislike"), ("likes", "dislikes"),
    ("happy", "unhappy"), ("lovely", "horrible"), ("pleased", "disappointed"), ("works", "fails"),
    ("worked", "failed"), ("effective", "useless"), ("generous", "stingy"), ("warm", "cold"),
    ("delicious", "bland"), ("tasty", "tasteless"), ("pleasant", "unpleasant"), ("strong", "weak"),
    ("satisfied", "dissatisfied"), ("recommend", "warn against"), ("recommended", "warned against"),
    ("enjoyed", "disliked"), ("enjoy", "dislike"), ("brilliant", "dreadful"), ("wonderful", "awful"),
    ("fair", "unfair"), ("punctual", "late"), ("stable", "wobbly"), ("powerful", "feeble"),
    ("convenient", "inconvenient"), ("affordable", "overpriced"), ("spacious", "cramped"),
    ("improved", "worsened"), ("improve", "worsen"), ("improves", "worsens"), ("lower", "higher"),
    ("less", "more"), ("fewer", "more"), ("cut", "raised"), ("support", "oppose"),
    ("supports", "opposes"), ("welcomed", "condemned"), ("welcome", "condemn"), ("benefits", "harms"),
    ("helps", "hurts"), ("help", "hurt"), ("success", "failure"), ("positive", "negative"),
)
PRAISE = frozenset(a for a, _ in OPINION_PAIRS) | {
    "amazing", "superb", "fantastic", "stunning", "breathtaking", "worth", "nice", "handy", "lovely",
    "impressive", "solid", "decent", "loves", "thanks", "free",
}
COMPLAINT = frozenset(b for _, b in OPINION_PAIRS) | {
    "broke", "broken", "failed", "leaked", "leaks", "crashed", "cracked", "stuck", "missing", "lost",
    "complained", "complain", "complains", "problem", "problems", "tore", "jams", "overpriced", "loud",
    "never", "cancelled", "waited", "greasy", "lukewarm", "bitter", "cramped", "dusty", "confusing",
}
#: Phrases for "said something good / bad about" in template claims.
PRAISE_VERBS = ("praised", "liked", "was happy with", "spoke well of", "was pleased with")
COMPLAINT_VERBS = ("complained about", "disliked", "was unhappy with", "criticised", "was disappointed by")

#: A claim with one of these is about most of its documents (aggregated over them).
MAJORITY = re.compile(
    r"\b(most|many|majority|nearly all|almost all|all|every|everyone|everybody|widely|overwhelmingly|"
    r"generally|commonly|several|numerous|the bulk of|broadly|unanimously|consistently|plenty of|lots of|"
    r"a lot of|a good number of|a large number of|a great many)\b",
    re.IGNORECASE,
)
#: A claim with one of these among its subject words is about one or a few of its documents.
MINORITY = re.compile(
    r"\b(only one|just one|a single|one single|not one|a minority|only a few|only two|none|no one|nobody|"
    r"hardly any|few|a couple|a handful)\b",
    re.IGNORECASE,
)
#: Nouns that name the writers of the documents: a claim's subject, not a fact it states.
AUTHORS = frozenset({
    "reviewer", "reviewers", "guest", "guests", "customer", "customers", "patient", "patients", "speaker",
    "speakers", "people", "person", "user", "users", "participants", "participant", "buyers", "buyer", "owners",
    "owner", "parents", "parent", "residents", "resident", "post", "posts", "tweet", "tweets", "riders", "rider",
    "learners", "learner", "diners", "diner", "visitors", "visitor", "travellers", "travelers", "players",
    "students", "members", "critics", "supporters", "opponents", "commenters", "writers", "authors", "everyone",
    "everybody", "others", "review", "reviews", "comments", "articles", "texts", "posters", "poster",
    "commenter", "readers", "reader", "voters", "voter", "respondents", "respondent", "attendees", "attendee",
    "contributions", "contribution", "contributors", "contributor",
})
#: Subjects of template claims: (phrase, is it a majority quantifier).
SUBJECTS = (
    ("One reviewer", False), ("A reviewer", False), ("One customer", False), ("Someone", False),
    ("A few reviewers", False), ("Some reviewers", False), ("Most reviewers", True),
    ("Many reviewers", True), ("Reviewers", False), ("One person", False),
)
REPORT_VERBS = ("says", "notes", "writes", "reports", "mentions", "feels", "finds", "points out")

NUMBER_WORDS = (
    *UNIT_WORDS[1:13],
    "twenty", "thirty", "forty", "fifty", "sixty", "hundred", "thousand", "million", "half", "third",
    "quarter", "fifth", "double", "twice",
)
DIGIT_WORDS = {str(i + 1): w for i, w in enumerate(NUMBER_WORDS[:12])}

#: Auxiliaries that take "not" after them.
AUX = ("is", "are", "was", "were", "can", "will", "would", "could", "should", "has", "have", "had", "does", "did", "do")
#: First-person words -> third-person, for "One reviewer says that ..." claims from a review.
PERSON = {
    "i": "they", "my": "their", "me": "them", "mine": "theirs", "myself": "themselves", "we": "they",
    "our": "their", "us": "them", "i'm": "they're", "am": "are",
}

def group_aliases(attribute: str, value: str, values: list[str]) -> tuple[str, ...]:
    """How a summary may name group ``value`` of ``attribute`` (lower case phrases).

    >>> group_aliases("rating", "5", ["1", "5"])[:3]
    ('5-star', '5 star', 'five-star')
    >>> group_aliases("speaker", "Councillor Reyes", ["Councillor Reyes", "Parent Moreau"])
    ('councillor reyes', 'reyes', 'councillor')
    """
    v = value.strip().lower()
    if attribute == "rating" or (v.isdigit() and len(v) == 1):
        return rating_aliases(v)
    if v in LABEL_NAMES:
        return LABEL_NAMES[v].aliases
    words = v.split()
    aliases = [v]
    if len(words) > 1:
        aliases.append(words[-1])  # a surname
        role = words[0]
        if sum(1 for other in values if other.lower().split()[:1] == [role]) == 1:
            aliases.append(role)  # a role held by one speaker only
    return tuple(aliases)


def polarity(text: str, lemmas: bool = False, first: bool = False) -> int:
    """+1 (more praise words), -1 (more complaint words, or a negation), 0 (neither); with ``lemmas``
    a word also counts by its lemma ("praising" as "praise"); with ``first`` only the first opinion word
    counts (a claim's main verb: "disliked the visit, praising the lanes" is a complaint), flipped by a
    negation among the three words before it.

    >>> polarity("The fish is fresh"), polarity("The soup was cold"), polarity("It is fine")
    (1, -1, 0)
    >>> polarity("complaining about the fit"), polarity("complaining about the fit", lemmas=True)
    (0, -1)
    >>> polarity("disliked the visit, praising the cheap deals", first=True)
    -1
    >>> polarity("did not enjoy the clever puzzles", lemmas=True, first=True)
    -1
    """
    words = [w.lower() for w in _WORD.findall(text)]
    if lemmas:
        from ...evaluation.text.tokens import lemma

        words = [w if w in PRAISE or w in COMPLAINT else lemma(w) for w in words]
    negations = [w in ("not", "never", "no") or w.endswith("n't") for w in words]
    if first:
        for i, w in enumerate(words):
            if w in PRAISE or w in COMPLAINT:
                sign = 1 if w in PRAISE else -1
                return -sign if any(negations[max(0, i - 3):i]) else sign
        return 0
    pos = sum(w in PRAISE for w in words)
    neg = sum(w in COMPLAINT for w in words)
    if any(negations):
        pos, neg = neg, pos + 1
    return (pos > neg) - (neg > pos)


def group_polarity(group: str | None) -> int:
    """+1 for a praising group (4 or 5 stars, ``pos``), -1 for a complaining one (1 or 2 stars, ``neg``), else 0.

    >>> [group_polarity(g) for g in ("5", "3", "neg", "Councillor Reyes", None)]
    [1, 0, -1, 0, 0]
    """
    g = (group or "").lower()
    if g in ("4", "5", "pos", "positive"):
        return 1
    if g in ("1", "2", "neg", "negative"):
        return -1
    return 0


#: A claim's words for being for (+1) or against (-1) what a debate or a set of posts is about.
STANCE_WORDS: dict[str, int] = {
    **dict.fromkeys(("favour", "favours", "favoured", "favor", "favors", "favored", "support", "supports",
                     "supported", "backs", "backed", "welcome", "welcomes", "welcomed", "endorse", "endorses",
                     "endorsed"), 1),
    **dict.fromkeys(("oppose", "opposes", "opposed", "against", "object", "objects", "objected", "reject",
                     "rejects", "rejected", "condemn", "condemns", "condemned"), -1),
}


def stance(text: str) -> int:
    """+1 or -1 by the text's first stance word (``STANCE_WORDS``), flipped by a negation among the three
    words before it; 0 without one.

    >>> stance("Most posts favour the tax"), stance("Only one speaker opposed it"), stance("did not support it")
    (1, -1, -1)
    """
    words = [w.lower() for w in _WORD.findall(text)]
    for i, w in enumerate(words):
        if w in STANCE_WORDS:
            negated = any(v in ("not", "never", "no") or v.endswith("n't") for v in words[max(0, i - 3):i])
            return -STANCE_WORDS[w] if negated else STANCE_WORDS[w]
    return 0


def group_stance(group: str | None) -> int:
    """+1 for a group in favour (``favor``, ``for``, ``pro``, ``support``), -1 for one against, else 0.

    >>> [group_stance(g) for g in ("favor", "against", "none", "left")]
    [1, -1, 0, 0]
    """
    g = (group or "").lower()
    if g in ("favor", "favour", "for", "pro", "support", "supporters"):
        return 1
    if g in ("against", "con", "oppose", "opposed", "opponents"):
        return -1
    return 0


#: For ratings, words naming a range of groups: (pattern, predicate on the integer rating).
RATING_RANGES: tuple[tuple[re.Pattern[str], tuple[int, ...]], ...] = (
    (re.compile(r"\b(positive|happy|satisfied|high[- ]rated|highly rated|top[- ]rated|fans)\b", re.I), (4, 5)),
    (re.compile(r"\b(negative|unhappy|dissatisfied|critical|critics|low[- ]rated|disappointed)\b", re.I), (1, 2)),
    (re.compile(r"\b(mixed|neutral|middling|lukewarm|ambivalent)\b", re.I), (3,)),
)
