"""Plain + one attributed quote: a summary, then one source sentence quoted verbatim, its group named.

An extractive way to make a summary fairer without letting the model write new claims: the
summary is kept as it is and one sentence of the sources is appended word for word, in
quotation marks, with its writer's group named ("One of the one-star reviewers wrote: "The
strap broke after two weeks.""). Nothing is paraphrased, so the added sentence says only what
a document of that group says.

* **Shortfall** (``shortfall``): the text's FairSumm UER with the N-gram target (Zhang et al.
  2024), exactly as the ``fairsumm`` metric computes it by default (the authors' released
  pipeline: ``evaluation.scoring.scorers.fairsumm``), and the groups whose UER term
  max(0, s_g − t_g) is positive: each content word of the text counts for every group whose
  documents hold it, t_g is a group's share of those counts, s_g its share of the sources'
  content words (``"ratio"``; ``"equal"``: uniform; or given shares). Fair beam search lowers
  the same terms while it decodes (on evenhand's word pipeline).
* **Which sentence** (``quote_sentence``): every sentence of ``MIN_WORDS`` to ``MAX_WORDS`` words
  (``evaluation.text.sentences.split_sentences``) that starts with a capital letter or a digit,
  holds no double quote (a quotation inside the quotation would not read back) and no two
  sentences glued together ("shoot.Opteka"), of a group whose term is positive, is tried after
  the summary with its attribution; the one that leaves the lowest UER is quoted, if it is below
  the summary's own. The earliest sentence wins a tie. A leading "NAME:" of the group's own name
  (a debate transcript's speaker label) is dropped.
* **Which group** (``groups``): when the caller knows which groups the summary leaves out (the
  demo and the reranker pass the groups that per-group coverage, ``rerank.group_coverage``, finds
  not covered), only the groups both left out and short of their share are tried, so the quote
  speaks for a group the summary did not cover; when some group is left out but none of them is
  short, there is no quote (a quote from a group already covered would add to it while another
  stays out). When every group is covered (``groups`` empty) or nothing is known (None), every
  short group is tried as above. The candidate records which rule chose (``quote_for``:
  "uncovered" or "shortfall").
* **Attribution** (``attribution``): ``groupwise.group_phrase`` names the group; a group of
  several documents is "One of the ..."; reviews and posts "wrote", named speakers and sides
  "said".

The sentence is chosen to lower FairSumm's UER itself: a lower UER of the quoted summary is by
construction, not evidence. What the recipe has to show is elsewhere: that the quote adds no
unsupported statement (read) and that fairness measures that do not read these word counts
agree (docs/reranking.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ..evaluation.data.schema import Example
from ..evaluation.text.sentences import split_sentences
from .groupwise import group_phrase
from .processors.group_vocab import Fairness, parse_fairness

#: The recipe name of a plain summary + one attributed quote among reranked candidates (demo, rerank).
QUOTE_RECIPE = "beam+quote"
#: Fewest and most words of a quoted sentence (a shorter one says too little, a longer one crowds the summary).
MIN_WORDS = 6
MAX_WORDS = 30
#: Two sentences run together without a space ("point and shoot.Opteka HG-5 ..."; scraped reviews): not one
#: sentence to quote.
_GLUED = re.compile(r"[a-z][.!?][A-Z]")
#: Attributes whose groups speak rather than write (named speakers, sides of a debate).
_SPEAKING = frozenset({"speaker", "stance", "side", "name", "author"})


def shortfall(example: Example, text: str, fairness: Fairness = "ratio") -> tuple[float, list[str]]:
    """(FairSumm UER of ``text``, the groups whose UER term is positive, in the example's order).

    >>> from evenhand.evaluation.data.schema import Document
    >>> ex = Example("x", [Document("tent dry", "5"), Document("zipper broke", "1")], "rating")
    >>> shortfall(ex, "The tent stayed dry."), shortfall(ex, "The tent was dry and the zipper broke.")
    ((0.25, ['1']), (0.0, []))
    """
    from ..evaluation.metrics.fairsumm import content_tokenizer, ngram_target, sample_fairness
    from ..evaluation.scoring.scorers.fairsumm import source_profile

    counts, vocab = source_profile(example)
    reference: Any = parse_fairness(fairness)
    target = ngram_target(vocab, content_tokenizer("authors")(text))
    result = sample_fairness(counts, target, reference=reference, cumulative="float")  # the authors' cutoff
    return result.uer, [g for g in example.groups if result.terms.get(g, 0.0) > 0]


def _own_label(sentence: str, group: str) -> str:
    """``sentence`` without a leading "GROUP:" (a transcript's speaker label)."""
    return re.sub(r"^" + re.escape(" ".join(group.split())) + r"\s*:\s*", "", sentence, flags=re.IGNORECASE)


def quote_sentence(
    example: Example, summary: str, fairness: Fairness = "ratio", groups: Sequence[str] | None = None,
) -> tuple[int, str, str] | None:
    """(document index, group, sentence) to quote after ``summary`` (module docstring); None when no
    group falls short of its share or no sentence lowers the UER. ``groups``: the groups the summary
    leaves out; when there are some, only the short ones among them are tried.

    >>> from evenhand.evaluation.data.schema import Document
    >>> ex = Example("x", [Document("The tent stayed dry in the storm.", "5"),
    ...                    Document("Fine. The zipper broke on the second night out.", "1")], "rating")
    >>> quote_sentence(ex, "The tent stayed dry.")
    (1, '1', 'The zipper broke on the second night out.')
    """
    from ..evaluation.errors import DataError

    try:
        uer, short = shortfall(example, summary, fairness)
    except DataError:  # fewer than two groups, or no content words: nothing to balance
        return None
    if not short:
        return None
    if groups:  # some group is left out: quote only for one of those
        short = [g for g in short if g in groups]
        if not short:
            return None
    body = _ending(summary)
    who = {group: attribution(example, group) for group in short}
    best: tuple[float, int, str, str] | None = None
    for index, doc in enumerate(example.documents):
        if doc.group not in short:
            continue
        for raw in split_sentences(doc.text):
            sentence = _own_label(raw, doc.group)
            if not MIN_WORDS <= len(sentence.split()) <= MAX_WORDS or not re.match(r"[A-Z0-9]", sentence) \
                    or any(q in sentence for q in '"“”') or _GLUED.search(sentence):
                continue
            after = shortfall(example, _joined(body, who[doc.group], sentence), fairness)[0]
            if after < uer and (best is None or after < best[0]):
                best = (after, index, doc.group, sentence)
    return None if best is None else best[1:]


def _ending(summary: str) -> str:
    body = summary.rstrip()
    return body + "." if body and body[-1] not in ".!?\"'”’)" else body


def _joined(body: str, who: str, sentence: str) -> str:
    return f"{body} {who}: \"{sentence}\"".lstrip()


def attribution(example: Example, group: str) -> str:
    """Who is quoted: "One of the one-star reviewers wrote", "The negative reviewer wrote", "Kim said".

    >>> from evenhand.evaluation.data.schema import Document
    >>> ex = Example("x", [Document("a", "1"), Document("b", "1"), Document("c", "5")], "rating")
    >>> attribution(ex, "1"), attribution(ex, "5")
    ('One of the one-star reviewers wrote', 'The five-star reviewer wrote')
    >>> attribution(Example("y", [Document("a", "Kim"), Document("b", "Lee")], "speaker"), "Kim")
    'Kim said'
    """
    documents = sum(d.group == group for d in example.documents)
    phrase = group_phrase(example, group, documents)
    verb = "said" if (example.attribute or "").strip().lower() in _SPEAKING else "wrote"
    if phrase.startswith("The ") and documents > 1:
        phrase = "One of the " + phrase[len("The "):]
    elif not phrase.startswith("The "):
        verb = "said"  # a name: "Councillor Reyes said"
    return f"{phrase} {verb}"


def quoted_summary(example: Example, summary: str, fairness: Fairness = "ratio") -> str | None:
    """``summary`` + one attributed quote (module docstring); None when no sentence lowers its shortfall.

    >>> from evenhand.evaluation.data.schema import Document
    >>> ex = Example("x", [Document("The tent stayed dry in the storm.", "5"),
    ...                    Document("The zipper broke on the second night out.", "1")], "rating")
    >>> quoted_summary(ex, "Reviewers say the tent stayed dry.")
    'Reviewers say the tent stayed dry. The one-star reviewer wrote: "The zipper broke on the second night out."'
    """
    found = quote_candidate(example, summary, fairness)
    return None if found is None else found["text"]


def quote_candidate(
    example: Example, plain: str, fairness: Fairness = "ratio", index: int = 0, groups: Sequence[str] | None = None,
) -> dict[str, Any] | None:
    """The reranking candidate of recipe ``QUOTE_RECIPE`` built on the plain summary ``plain``, or None
    (``quoted_summary``): ``{"text", "recipe", "index", "written", "quoted_group", "quote_for"}``,
    ``written`` being the plain summary, what the model wrote (the floors on writing read it:
    ``rerank.reranker.WRITING_FLOORS``), ``quoted_group`` the group of the quoted sentence's writer,
    ``quote_for`` "uncovered" when that group is one of ``groups`` (those the summary leaves out), else
    "shortfall" (chosen by the UER terms alone)."""
    found = quote_sentence(example, plain, fairness, groups)
    if found is None:
        return None
    _, group, sentence = found
    text = _joined(_ending(plain), attribution(example, group), sentence)
    why = "uncovered" if groups is not None and group in groups else "shortfall"
    return {"text": text, "recipe": QUOTE_RECIPE, "index": index, "written": plain, "quoted_group": group,
            "quote_for": why}
