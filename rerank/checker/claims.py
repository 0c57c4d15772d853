"""From a summary to claims, and from per-document support to a claim's score.

A summary sentence is split into clauses at contrast connectives (", but",
"; ", ", while", ", although"...): each clause is a *claim*. A claim is
checked against the documents of the groups it names ("one-star reviewers",
"Okafor", "the left"; all documents when it names none), and its score
aggregates the checker's per-document support p_d (max over the document's
windows) by the claim's quantifier:

- singular or unquantified ("one reviewer", "some", "reviewers"): max_d p_d —
  one supporting document suffices;
- majority ("most", "many", "all", "the majority"): the support of the
  weakest document of the best half, i.e. the ceil(n/2)-th largest p_d —
  half of the named documents must support it.

The summary's score is the mean of its claims' scores (AlignScore's
mean-of-max form, with documents in place of chunks).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from functools import lru_cache

from ...evaluation.data.schema import Document, Example
from ...evaluation.text.numbers import TENS_WORDS, UNIT_WORDS
from ...evaluation.text.sentences import split_sentences
from .lexicon import (
    AUTHORS,
    MAJORITY,
    MINORITY,
    RATING_RANGES,
    group_aliases,
    group_polarity,
    group_stance,
    polarity,
    stance,
)

_CLAUSE = re.compile(
    r"(?:;\s+|,\s+(?=(?:but|while|whereas|although|though|yet|however)\b)|(?<!\ball)\s+(?=but\s)|:\s+(?=[a-z])"
    # ", and a three-star reviewer ...", ", and most ...", ", and Okafor ...": a new subject, a new claim
    r"|,\s+(?=and\s+(?:(?:a|an|one|another|two|three|most|many|some|all|several|few|other)\s|(?-i:[A-Z]))))",
    re.IGNORECASE,
)
#: A sentence that reports what a text says ("The article argues that", "The author highlights"): news
#: and opinion summaries list several of the text's points after one such frame.
_FRAME = re.compile(
    r"(?:the|this|both|each)?\s*(?:article|author|piece|writer|columnist|op-ed|editorial)s?\s+(?:\w+ly\s+)?"
    r"(?:argues?|highlights?|suggests?|contends?|claims?|says?|asserts?|notes?|discuss(?:es)?|emphasi[sz]es?|"
    r"critici[sz]es?|states?|points? out|maintains?|believes?|stresses?|warns?|insists?|explains?)\s+(?:that\s+)?",
    re.IGNORECASE,
)
#: Items of a list of points: ", " (", and ") or " and " before a verb in -s/-ed.
_ITEM = re.compile(r",\s+(?:and\s+)?|\s+and\s+(?=[a-z]+(?:ed|es|s)\b)")
#: Words of a premise window (long documents are split into windows of about this many words).
WINDOW_WORDS = 120


#: A text in double quotes (straight or curly): never split into claims.
_QUOTED = re.compile(r'"[^"]*"|“[^”]*”')


def _clauses(text: str) -> list[str]:
    """``text`` split at ``_CLAUSE``, except inside double quotes (a quotation is one claim)."""
    spans = [m.span() for m in _QUOTED.finditer(text)]
    parts, start = [], 0
    for match in _CLAUSE.finditer(text):
        if any(a < match.start() < b for a, b in spans):
            continue
        parts.append(text[start:match.start()])
        start = match.end()
    return [*parts, text[start:]]


def split_claims(summary: str) -> list[str]:
    """Clauses of a summary's sentences, split at contrast connectives (not inside double quotes); a
    sentence framed as what a text says ("The article argues that A, B, and C") loses its frame and is
    split into its listed points (items of fewer than 3 words join the item before them).

    >>> split_claims("Most like the sound, but one found the cushions warm. Support never answered.")
    ['Most like the sound', 'but one found the cushions warm.', 'Support never answered.']
    >>> split_claims("The article argues that the mayor cut bus lines, raised all fares, and ignored riders.")
    ['the mayor cut bus lines', 'raised all fares, ignored riders.']
    >>> split_claims('One reviewer wrote: "Sturdy stand; my neck pain is gone." Others disagree; it wobbles.')
    ['One reviewer wrote: "Sturdy stand; my neck pain is gone."', 'Others disagree', 'it wobbles.']
    """
    claims = []
    for sentence in split_sentences(summary):
        frame = _FRAME.match(sentence)
        clauses = _clauses(sentence[frame.end():] if frame else sentence)
        if frame:
            clauses = _join_short([item for clause in clauses for item in _ITEM.split(clause)])
        claims.extend(c.strip() for c in clauses if len(c.strip().split()) >= 2)
    return claims


def _join_short(items: Sequence[str], words: int = 3) -> list[str]:
    """Items with fewer than ``words`` words appended to the item before them."""
    out: list[str] = []
    for item in items:
        if out and len(item.split()) < words:
            out[-1] = f"{out[-1]}, {item}"
        else:
            out.append(item)
    return out


#: Words of a claim's subject where its quantifier is read ("but nearly all guests ...", "reviewers widely ...").
SUBJECT_WORDS = 5
#: Words of a claim where its subject's writers' noun is looked for ("Only a couple of the posters ...").
SUBJECT_NOUN_WORDS = 7


def is_majority(claim: str) -> bool:
    """Whether the claim's subject is most of its documents ("most", "all", "many", ...): a quantifier
    among its first ``SUBJECT_WORDS`` words, so that "one said he explained every step" stays singular.

    >>> is_majority("Most reviewers praise the bass"), is_majority("One reviewer praises the bass")
    (True, False)
    >>> is_majority("but one said the staff explained every step")
    False
    """
    return MAJORITY.search(" ".join(claim.split()[:SUBJECT_WORDS])) is not None


def named_groups(claim: str, example: Example) -> list[str]:
    """The example's group labels that the claim names (empty: it names none)."""
    labels = [g for g in dict.fromkeys(example.labels) if g is not None]
    if len(labels) < 2:
        return []
    attribute = (example.attribute or "").lower()
    low = " " + claim.lower() + " "
    hits = []
    for label in labels:
        for alias in group_aliases(attribute, label, labels):
            if re.search(r"(?<![\w-])" + re.escape(alias) + r"(?![\w-])", low):
                hits.append(label)
                break
    if not hits and attribute == "rating" and all(v.isdigit() for v in labels):
        for pattern, ratings in RATING_RANGES:
            if pattern.search(claim):
                hits = [v for v in labels if int(v) in ratings]
                break
    return hits


def windows(text: str, words: int = WINDOW_WORDS) -> list[str]:
    """A document as premise windows of whole sentences, about ``words`` words each.

    >>> windows("One two. Three four. Five six.", words=4)
    ['One two. Three four.', 'Five six.']
    """
    from ..entail.inferencer import chunks

    return chunks(text, words)


_CONTENT = re.compile(r"[a-z0-9]+")
#: Verbs that report what a document says: a claim's frame, not its content.
_REPORTING = frozenset({"said", "say", "says", "saying", "noted", "note", "notes", "argue", "argues", "argued",
                        "mention", "mentions", "mentioned", "found", "find", "finds", "felt", "feel", "feels",
                        "report", "reports", "reported", "wrote", "write", "writes", "claim", "claims", "claimed"})


@lru_cache(maxsize=8192)
def _words(text: str) -> frozenset[str]:
    """The distinct lowercase words of a text (a window's are read once for all the claims checked on it)."""
    return frozenset(_CONTENT.findall(text.lower()))


def closest_windows(claim: str, doc_windows: Sequence[Sequence[str]], limit: int, majority: bool) -> list[list[int]]:
    """Per document, the indices of its windows the claim is checked against: all of them when
    ``limit`` is 0 or the documents have no more than ``limit`` windows in all; else the ``limit``
    windows sharing the most distinct content words (not NLTK stop words) with the claim, over all
    documents (a singular claim needs one supporting window), and for a majority claim at least the
    closest window of every document (it needs half of them). Ties go to the earlier window.

    >>> docs = [["The case is red.", "A week on one battery."], ["Week two, battery flat."]]
    >>> closest_windows("the battery lasts a week", docs, 2, majority=False)
    [[1], [0]]
    >>> closest_windows("most say the battery lasts a week", docs, 1, majority=True)
    [[1], [0]]
    """
    flat = [(d, w) for d, windows_ in enumerate(doc_windows) for w in range(len(windows_))]
    if limit <= 0 or len(flat) <= limit:
        return [list(range(len(windows_))) for windows_ in doc_windows]
    from ...evaluation.text.tokens import NLTK_ENGLISH_STOP_WORDS

    words = _words(claim) - NLTK_ENGLISH_STOP_WORDS
    shared = {(d, w): len(words & _words(doc_windows[d][w])) for d, w in flat}
    ranked = sorted(flat, key=lambda dw: (-shared[dw], dw))
    keep = set(ranked[:limit])
    if majority:
        keep |= {next(dw for dw in ranked if dw[0] == d) for d in range(len(doc_windows)) if doc_windows[d]}
    return [[w for w in range(len(windows_)) if (d, w) in keep] for d, windows_ in enumerate(doc_windows)]


def aggregate(doc_support: Sequence[float], majority: bool) -> float:
    """A claim's score from its documents' support (see the module docstring).

    >>> aggregate([0.9, 0.1, 0.2, 0.05], majority=False)
    0.9
    >>> aggregate([0.9, 0.1, 0.2, 0.05], majority=True)  # the 2nd largest of 4
    0.2
    """
    if not doc_support:
        return 0.0
    ranked = sorted(doc_support, reverse=True)
    if not majority:
        return ranked[0]
    return ranked[math.ceil(len(ranked) / 2) - 1]


#: Least documents a quantity rule (``quantity_conflict``) reads: with fewer, "most" and "one" barely differ.
QUANTITY_DOCUMENTS = 3
#: A majority claim whose content words appear in fewer than this share of its documents states a few documents' detail.
SPREAD = 0.3


def subject(claim: str) -> str:
    """The claim's subject: its words up to the first noun naming the documents' writers (among its first
    ``SUBJECT_NOUN_WORDS``), else its first two words.

    >>> subject("Most owners were unhappy with the grooming"), subject("Only one guest said so")
    ('Most owners', 'Only one guest')
    >>> subject("Only a couple of the contributions favoured it")
    'Only a couple of the contributions'
    """
    words = claim.split()
    for i, word in enumerate(words[:SUBJECT_NOUN_WORDS]):
        if word.lower().strip(",.;:") in AUTHORS:
            return " ".join(words[: i + 1])
    return " ".join(words[:2])


def split_subject(claim: str) -> tuple[str, str]:
    """The claim's :func:`subject` and what follows it (its predicate, without leading spaces and commas; the
    whole claim where the subject is not found as one run of its words).

    >>> split_subject("and most speakers, say fencing costs too much")
    ('and most speakers,', 'say fencing costs too much')
    """
    head = subject(claim)
    return head, claim[claim.find(head) + len(head):].strip(" ,") if head in claim else claim


def is_minority(claim: str) -> bool:
    """Whether the claim's subject is one or a few of its documents ("only one guest", "a minority of posts").

    >>> is_minority("Only one customer was satisfied"), is_minority("but there were a few areas to improve")
    (True, False)
    """
    return MINORITY.search(subject(claim)) is not None


@lru_cache(maxsize=8192)
def _stems(text: str) -> frozenset[str]:
    """A text's content words, lemmatized and stemmed (FairSumm's normalization), without stop words,
    quantifiers and the nouns that name the documents' writers."""
    from ...evaluation.text.tokens import NLTK_ENGLISH_STOP_WORDS, normalize_word

    return frozenset(normalize_word(w) for w in _CONTENT.findall(text.lower())
                     if len(w) > 2 and w not in NLTK_ENGLISH_STOP_WORDS and w not in AUTHORS
                     and w not in _REPORTING and not MAJORITY.fullmatch(w))


#: "Half of the reviewers": a quantifier between the minority and the majority.
HALF = re.compile(r"\bhalf\b", re.IGNORECASE)
_COUNT_WORDS = {w: i for i, w in enumerate(UNIT_WORDS) if 0 < i <= 12}
#: The start of a clause's subject: its opening punctuation and a connective ("and", "but", ...).
_CLAUSE_START = r"^\W*(?:(?:and|but|while|whereas|though)\s+)?"
#: The writers' nouns as one alternation, longest first.
_AUTHOR_NOUNS = "|".join(sorted(AUTHORS, key=len, reverse=True))
#: A count of the documents' writers: "three of the six reviewers", "two five-star guests", "all six posts".
_COUNTED = re.compile(
    _CLAUSE_START + r"(?:only\s+|just\s+)?(\d+|" + "|".join(_COUNT_WORDS) + r")\s+"
    r"(?:of\s+(?:the|all|these|those)\s+(?:\w+\s+)?)?(?:[\w-]+\s+)?(" + _AUTHOR_NOUNS + r")\b", re.IGNORECASE)
#: "All but one of the seven reviews", "and all but two speakers": every writer the subject covers but a count.
_ALL_BUT = re.compile(_CLAUSE_START + r"all\s+but\s+(\d+|" + "|".join(_COUNT_WORDS) + r")\b", re.IGNORECASE)
#: A claim that states the documents' label itself: "are negative", "were mostly positive" (sentiment or
#: rating), "rate it four or five stars" (rating).
_STATED_POLARITY = re.compile(r"\b(?:is|are|was|were)\s+(?:\w+\s+)?(positive|negative|neutral|mixed)\b", re.I)
_STATED_STARS = re.compile(r"\b(?:rate[sd]?|rating|gave|give[sn]?|giving|award(?:s|ed)?|are|were)\b(?:\s+[\w-]+){0,3}?\s+"
                           r"((?:\d|" + "|".join(UNIT_WORDS[1:6]) + r")(?:\s+(?:or|and|to)\s+(?:\d|"
                           + "|".join(UNIT_WORDS[1:6]) + r"))?)[\s-]+stars?\b", re.IGNORECASE)
#: A rating stated in words: "rate the kebab shop highly" (four or five stars), "rated it poorly" (one or two).
_RATED = re.compile(r"\brat(?:e|es|ed|ing)\b(?:\s+[\w'-]+){0,4}?\s+(highly|well|poorly|badly|low|lowly)\b",
                    re.IGNORECASE)
#: Quantifiers of more than one writer: "several negative reviews" of a group that holds one is a contradiction.
_SEVERAL = re.compile(r"\b(several|many|numerous|multiple)\b", re.IGNORECASE)


def stated_count(claim: str) -> int | None:
    """How many of the documents' writers a claim counts as its subject, the count first ("Three of the six
    reviewers said": 3; "only two five-star guests": 2), or None.

    >>> stated_count("Three of the six reviewers said"), stated_count("Only two five-star guests")
    (3, 2)
    >>> stated_count("Most posts"), stated_count("One reviewer said two guests left")
    (None, 1)
    """
    match = _COUNTED.search(claim)
    return None if match is None else _count(match.group(1))


def all_but(claim: str) -> int | None:
    """How many writers a claim that starts "all but N" leaves out of its subject, or None.

    >>> all_but("All but one of the seven reviews are four or five stars"), all_but("All reviews")
    (1, None)
    """
    match = _ALL_BUT.search(claim)
    return None if match is None else _count(match.group(1))


def _count(word: str) -> int:
    """The value of a count matched by ``_COUNTED`` or ``_ALL_BUT``: digits, or a word up to twelve."""
    word = word.lower()
    return int(word) if word.isdigit() else _COUNT_WORDS[word]


#: Writers named inside a claim, after "from", with what they wrote after "who"/"whose": "the low ratings
#: come from several reviewers whose hinges cracked", "and from most guests, who found the room cold".
_FROM_WRITERS = re.compile(
    r"\bfrom\s+((?:only\s+|just\s+|nearly\s+|almost\s+)?(?:most|many|several|all|a few|few|a couple of|"
    r"\d+|" + "|".join(_COUNT_WORDS) + r")\s+(?:of\s+the\s+)?(?:[\w-]+\s+)?(?:"
    + _AUTHOR_NOUNS + r"))\b,?\s+(?:whose|who)\s+(\S.*)$", re.IGNORECASE)


def from_writers(claim: str) -> str | None:
    """The claim restated with the writers it names after "from" as its subject ("The low ratings come from
    several reviewers whose hinges cracked" -> "several reviewers hinges cracked"), for the quantity rules;
    None when it names none there.

    >>> from_writers("and from several reviewers whose acrylic removal burned the nail beds.")
    'several reviewers acrylic removal burned the nail beds.'
    >>> from_writers("The praise comes from the staff, who were kind") is None
    True
    """
    match = _FROM_WRITERS.search(claim)
    return f"{match.group(1)} {match.group(2)}" if match else None


def _stated_label(claim: str, example: Example) -> Callable[[str | None], bool] | None:
    """Which documents' labels a claim states of its subject (``_STATED_POLARITY``, ``_STATED_STARS``; where
    the groups are stances, its stance word), as a predicate on a label; None when it states none."""
    attribute = (example.attribute or "").lower()
    if _stance_labels(example) and stance(claim):
        side = stance(claim)
        return lambda g: group_stance(g) == side
    if attribute in ("rating", "sentiment"):
        match = _STATED_POLARITY.search(claim)
        if match is not None:
            word = match.group(1).lower()
            sign = {"positive": 1, "negative": -1}.get(word, 0)
            if sign:
                return lambda g: group_polarity(g) == sign
            return lambda g: (g or "").lower() in ("3", "neu", "neutral", "mixed")
        match = _STATED_STARS.search(claim) if attribute == "rating" else None
        if match is not None:
            stars = {int(w) if w.isdigit() else UNIT_WORDS.index(w) for w in re.findall(r"\w+", match.group(1).lower())
                     if w not in ("or", "and", "to")}
            if " to " in match.group(1).lower():
                stars = set(range(min(stars), max(stars) + 1))
            return lambda g: (g or "") in {str(v) for v in stars}
        match = _RATED.search(claim) if attribute == "rating" else None
        if match is not None:
            sign = 1 if match.group(1).lower() in ("highly", "well") else -1
            if re.search(r"(?:\bnot|\bnever|n't)\s+$", claim[:match.start()], re.IGNORECASE):
                return lambda g: group_polarity(g) != sign  # "did not rate it highly": any rating but a high one
            return lambda g: group_polarity(g) == sign
    return None


def _stance_labels(example: Example) -> bool:
    """Whether the example's groups are stances (for and against), read by ``group_stance``."""
    return {group_stance(d.group) for d in example.documents} >= {1, -1}


def _opinions(claim: str, example: Example, covered: Sequence[Document]) -> tuple[int, list[int]]:
    """The claim's opinion and its covered documents' (their labels'): polarity for ratings and sentiment,
    stance for stances; no groups for any other attribute."""
    attribute = (example.attribute or "").lower()
    if attribute in ("rating", "sentiment"):
        return polarity(claim, lemmas=True, first=True), [group_polarity(d.group) for d in covered]
    if _stance_labels(example):
        return stance(claim), [group_stance(d.group) for d in covered]
    return 0, []


def _covered(claim: str, example: Example, documents: Sequence[str]) -> list[Document]:
    """The documents a claim's subject covers: its named groups' when the subject names one, else all."""
    if named_groups(subject(claim), example):
        return [d for d in example.documents if d.text in documents]
    return list(example.documents)


def quantity_conflict(claim: str, example: Example, documents: Sequence[str]) -> str | None:
    """Why the claim's quantifier contradicts its documents, or None. A claim is majority or minority
    here by its subject (``subject``: "most guests", "only one reviewer"; not "every aspect"); "half"
    and a count ("three of the six posts", ``stated_count``) are quantifiers too. The rules need at least
    ``QUANTITY_DOCUMENTS`` documents (the first rule: covered by the subject; the others: checked
    against). A group's opinion is its label: rating or sentiment (``lexicon.group_polarity``) or stance
    (``lexicon.group_stance``); the claim's is its first opinion word, lemmatized (its first stance word
    for stances), flipped by a negation just before it:

    - ``"several of one"``: a subject that names a group holding one document with "several", "many" or
      a count of two or more ("several negative reviews say" where one review is negative);
    - ``"count against the labels"``: a claim that states the label itself ("three of the six posts are
      negative", "most reviewers rate it four or five stars", "all but one of the reviews are five stars",
      "only a couple of reviewers rate it highly": four or five stars, "rated it poorly": one or two,
      ``_stated_label``; "all but N" counts the subject's documents less N, ``all_but``) of a number of its
      subject's documents that their labels do not give (a count: exactly; a majority: more than half;
      a minority: at most one, or two for "a couple", or not more than half; half: a third to two thirds);
    - ``"most against the groups"``: a majority claim whose opinion is the opposite of most of the
      documents its subject covers (all of them unless the subject names a group: "most guests
      complained" when most gave four or five stars);
    - ``"one against the groups"``: a minority claim ("only one guest was satisfied") whose opinion is that of
      at least two and more than half of the documents its subject covers;
    - ``"half against the groups"``: a "half" claim whose opinion is that of fewer than a third, or more
      than two thirds, of those documents;
    - ``"most from one document"``: a majority claim whose content words (stemmed, without stop words and
      the writers' nouns) are shared by fewer than ``SPREAD`` of the documents it is checked against
      ("most reviewers said the hinge rattles" when one review mentions a hinge) — unless its opinion
      is that of most of them ("most guests were happy", which states no detail), or it states the labels
      and they agree ("most reviewers rate it highly": the ratings, not one review's detail).

    >>> from evenhand.evaluation.data.schema import Document
    >>> ex = Example("x", [Document("The lid hinge rattles.", "4"), Document("Great rice.", "5"),
    ...                    Document("Lovely timer.", "5"), Document("Good, cheap.", "2")], attribute="rating")
    >>> docs = [d.text for d in ex.documents]
    >>> [quantity_conflict(c, ex, docs) for c in ("Most reviewers said the lid hinge rattles",
    ...     "Most reviewers were unhappy", "Only one reviewer was happy", "Most reviewers were happy",
    ...     "Two of the four reviewers are positive", "Half of the reviewers were disappointed",
    ...     "All but one of the reviewers gave it five stars", "All but one of them are positive",
    ...     "Only a couple of reviewers rate the cooker highly")]
    ['most from one document', 'most against the groups', 'one against the groups', None, \
'count against the labels', 'half against the groups', 'count against the labels', None, \
'count against the labels']
    >>> [quantity_conflict(c, ex, ["Good, cheap."]) for c in ("Several negative reviews say it is cheap",
    ...     "The negative review says it is cheap")]  # checked against the one negative review
    ['several of one', None]
    """
    head = subject(claim)
    majority, minority, half = MAJORITY.search(head) is not None, is_minority(claim), HALF.search(head) is not None
    count = stated_count(claim)
    if not (majority or minority or half or count is not None):
        return None
    covered = _covered(claim, example, documents)
    label = _stated_label(claim, example)
    n = len(covered)
    if n == 1 and named_groups(head, example) and ((count or 0) >= 2 or _SEVERAL.search(head)):
        return "several of one"  # "several negative reviews say" where one review is negative
    left_out = all_but(claim)
    if left_out is not None:  # "all but one of the reviewers": a count of all the subject's but one
        count, majority = n - left_out, False
    if label is not None and n >= QUANTITY_DOCUMENTS:
        holders = sum(label(d.group) for d in covered)
        if (count is not None and count != holders) or (majority and 2 * holders <= n) \
                or (minority and not majority and holders > (2 if "couple" in head.lower() else 1)
                    and 2 * holders > n) or (half and not n <= 3 * holders <= 2 * n):
            return "count against the labels"
        return None  # it states the labels, which agree: no detail of one document ("rate it highly")
    if len(documents) < QUANTITY_DOCUMENTS:  # a claim naming a label is checked on that label's documents only
        return None
    opinion, groups = _opinions(claim, example, covered)
    agree = sum(g == opinion for g in groups) if opinion else 0
    against = sum(g == -opinion for g in groups) if opinion else 0
    if len(groups) >= QUANTITY_DOCUMENTS and opinion:
        if majority and 2 * against > len(groups):
            return "most against the groups"
        if minority and not majority and agree >= 2 and 2 * agree > len(groups):
            return "one against the groups"
        if half and not majority and not len(groups) <= 3 * agree <= 2 * len(groups):
            return "half against the groups"
    if majority and not 2 * agree >= len(groups) > 0:
        words = _stems(claim)
        sharing = sum(bool(words & _stems(text)) for text in documents)
        if sharing < SPREAD * len(documents):
            return "most from one document"
    if majority and one_document_detail(claim, documents) and about_several(claim, example, documents):
        return "most from one document"
    return None


def one_document_detail(claim: str, documents: Sequence[str]) -> bool:
    """Whether a majority claim's predicate states a detail of one document: at least two of its content
    words (stemmed) occur in exactly one of the documents, the same one for all of them. A quantifier
    inside reported speech ("another says most parents wanted ...") is not the claim's.

    >>> docs = ["The basket wheels came off in month two.", "Quiet and clean.", "Dries glasses well.",
    ...         "Good value, quiet wash."]
    >>> one_document_detail("Most reviewers say the basket wheels came off", docs)
    True
    >>> one_document_detail("Most reviewers say it is quiet", docs), one_document_detail(
    ...     "and one says most parents found the basket wheels came off", docs)
    (False, False)
    """
    head, predicate = split_subject(claim)
    found = MAJORITY.search(head)
    if found is None or any(w.strip(",.;:").lower() in _REPORTING for w in head[:found.start()].split()):
        return False
    per = [_stems(text) for text in documents]
    single = [w for w in _stems(predicate) if sum(w in p for p in per) == 1]
    return len(single) >= 2 and len({i for i, p in enumerate(per) if any(w in p for w in single)}) == 1


#: Least support of the one document that states a claim about several (``concentrated``).
CONCENTRATION = 0.15


def concentrated(claim: str, example: Example, documents: Sequence[str], support: Sequence[float]) -> bool:
    """Whether a claim about several of the documents' writers ("most reviewers", "several guests", "half",
    "three of the posts") is stated by one document only: its subject names the writers, it is checked
    against at least ``QUANTITY_DOCUMENTS`` documents, one supports it with at least ``CONCENTRATION`` and
    every other one with less than a third of that — unless its opinion is that of most of the groups
    ("most guests loved it" states the ratings, not one review's detail).

    >>> from evenhand.evaluation.data.schema import Document
    >>> ex = Example("x", [Document(t, g) for t, g in (("Pigeons scatter seed.", "3"), ("Nice.", "5"),
    ...     ("Fine.", "4"), ("Good.", "5"))], attribute="rating")
    >>> docs = [d.text for d in ex.documents]
    >>> concentrated("Several reviewers say pigeons scatter seed", ex, docs, [0.9, 0.02, 0.05, 0.01])
    True
    >>> concentrated("One reviewer says pigeons scatter seed", ex, docs, [0.9, 0.02, 0.05, 0.01])
    False
    >>> concentrated("Several reviewers say pigeons scatter seed", ex, docs, [0.9, 0.4, 0.05, 0.01])
    False
    """
    if len(support) < QUANTITY_DOCUMENTS or not about_several(claim, example, documents):
        return False
    top = max(support)
    return top >= CONCENTRATION and sum(p >= top / 3 for p in support) == 1


def about_several(claim: str, example: Example, documents: Sequence[str], opinions: bool = True) -> bool:
    """Whether a claim is about several of its documents' writers, the claims ``concentrated`` and the
    checker's LM test read: a subject that names the writers with "most", "several", "half" or a count of
    two or more, at least ``QUANTITY_DOCUMENTS`` documents, and (``opinions``) an opinion, if any, that is
    not most groups' ("most guests loved it" states the ratings, which the checker does not read).

    >>> from evenhand.evaluation.data.schema import Document
    >>> ex = Example("x", [Document(t, g) for t, g in (("Loud.", "2"), ("Nice.", "5"), ("Good.", "5"))],
    ...     attribute="rating")
    >>> docs = [d.text for d in ex.documents]
    >>> [about_several(c, ex, docs) for c in ("Most guests mention the view", "One guest mentions the view",
    ...     "Most say the view is nice", "Most guests loved it", "Most guests hated it")]
    [True, False, False, False, True]
    >>> about_several("Most guests loved it", ex, docs, opinions=False)
    True
    """
    head = subject(claim)
    if not (MAJORITY.search(head) or HALF.search(head) or (stated_count(claim) or 0) >= 2):
        return False
    if not any(w.lower().strip(",.;:'") in AUTHORS for w in head.split()) or len(documents) < QUANTITY_DOCUMENTS:
        return False
    if not opinions:
        return True
    opinion, groups = _opinions(claim, example, _covered(claim, example, documents))
    return not (opinion and 2 * sum(g == opinion for g in groups) > len(groups))


#: What the checker's LM test reads in place of a claim's subject: one writer (``one_writer``).
ONE_WRITER = "A reviewer"


def one_writer(claim: str) -> str:
    """The claim said of one writer: its predicate after ``ONE_WRITER`` ("Most guests mention the view" ->
    "A reviewer mention the view"; the verb is not re-inflected: the LM test compares one claim across
    documents, so the same words are read after each).

    >>> one_writer("and most speakers say fencing costs too much")
    'A reviewer say fencing costs too much'
    """
    predicate = split_subject(claim)[1]
    return f"{ONE_WRITER} {predicate}" if predicate else claim


_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[A-Za-z]+")
_UNITS = {w: i for i, w in enumerate(UNIT_WORDS)}
_TENS = {w: 10 * i for i, w in enumerate(TENS_WORDS) if w}
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000, "billion": 1_000_000_000}
#: Words after a number that make it a count of people or a rating, not a fact of the source.
_NOT_FACTS = AUTHORS | {"star", "stars", "of", "out", "said", "say", "says", "other", "sides", "groups"}
#: Words after a number that say nothing about what it counts.
_NEUTRAL = {"", "a", "an", "the", "and", "or", "of", "in", "on", "at", "to", "for", "per", "more", "less", "than",
            "is", "are", "was", "were", "that", "with", "by"}


def _value(token: str) -> float | None:
    low = token.lower()
    if token[0].isdigit():
        if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", token):  # 1,200 and 1,836.18
            return float(token.replace(",", ""))
        try:
            return float(token.replace(",", "."))
        except ValueError:  # "1.2.3", a version or a date: not one number
            return None
    if low in _UNITS and low != "one":  # "one" is a pronoun as often as a number
        return float(_UNITS[low])
    if low in _TENS:
        return float(_TENS[low])
    return float(_SCALES[low]) if low in _SCALES else None


def numbers(text: str) -> list[tuple[float, str]]:
    """The numbers of a text that state facts, each with the word after it (what it counts).

    Digits and number words ("twenty-five" is 25), but not "one", ratings ("two-star") or counts of people
    ("two reviewers").

    >>> numbers("Two reviewers waited 50 minutes; a five-star guest paid 1,200 euros for twenty-five nights.")
    [(50.0, 'minutes'), (1200.0, 'euros'), (25.0, 'nights')]
    """
    tokens = _TOKEN.findall(text)
    out: list[tuple[float, str]] = []
    i = 0
    while i < len(tokens):
        value = _value(tokens[i])
        if value is None:
            i += 1
            continue
        j = i + 1
        if tokens[i].lower() in _TENS and j < len(tokens) and 0 < _UNITS.get(tokens[j].lower(), 0) < 10:
            value += _UNITS[tokens[j].lower()]
            j += 1
        while j < len(tokens) and tokens[j].lower() in _SCALES:
            value *= _SCALES[tokens[j].lower()]
            j += 1
        after = tokens[j].lower() if j < len(tokens) else ""
        if after not in _NOT_FACTS:
            out.append((value, after))
        i = j
    return out


def unsupported_numbers(claim: str, documents: Sequence[str]) -> list[float]:
    """The claim's numbers that no document states about the same thing (the same value before a
    word of the same stem, or with no telling word on either side).

    >>> unsupported_numbers("It broke after four days and cost 30 euros", ["Broke after four months.", "30 euros."])
    [4.0]
    """
    stated = [n for doc in documents for n in numbers(doc)]

    def same(a: str, b: str) -> bool:
        return a in _NEUTRAL or b in _NEUTRAL or a[:4] == b[:4]

    return [v for v, word in numbers(claim) if not any(v == dv and same(word, dword) for dv, dword in stated)]


#: A claim that quotes a writer: "WHO wrote/said: "QUOTE"" (``quoted_source``).
_QUOTE_CLAIM = re.compile(
    r'^(?P<who>.{2,80}?)\s+(?:wrote|writes|said|says|added|adds|noted|notes|posted|posts)\s*[:,]\s*'
    r'["“](?P<quote>[^"”]+)["”]\s*\.?$',
    re.IGNORECASE,
)
#: Fewest words of a quotation that ``quoted_source`` reads as the source's own words.
QUOTE_WORDS = 4


def _flat(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def quoted_source(claim: str, example: Example) -> bool | None:
    """Whether a claim of the form ``WHO wrote: "QUOTE"`` quotes its source right: True when QUOTE (at
    least ``QUOTE_WORDS`` words; case, spacing and punctuation aside) is the text of a document of a
    group WHO names (of any document when WHO names none), False when it is only in documents of other
    groups (a quotation given to the wrong group), None when the claim is no such quotation or quotes
    words no document has (the checker reads it then).

    >>> from evenhand.evaluation.data.schema import Document
    >>> ex = Example("x", [Document("The strap broke after two weeks.", "1"), Document("Great sound.", "5")], "rating")
    >>> quoted_source('The one-star reviewer wrote: "The strap broke after two weeks."', ex)
    True
    >>> quoted_source('A five-star reviewer said: "the strap broke after two weeks"', ex)
    False
    >>> quoted_source('The one-star reviewer wrote: "The strap broke after one week."', ex) is None
    True
    """
    match = _QUOTE_CLAIM.match(claim.strip())
    if match is None or len(match.group("quote").split()) < QUOTE_WORDS:
        return None
    quote = _flat(match.group("quote"))
    holders = [d for d in example.documents if f" {quote} " in f" {_flat(d.text)} "]
    if not holders:
        return None
    groups = named_groups(match.group("who"), example)
    return not groups or any(d.group in groups for d in holders)
