"""Sentence splitting, AlignScore chunks and Equal Coverage blocks."""

import pytest

from evenhand.evaluation.text.sentences import alignscore_chunks, split_sentences, word_blocks


def test_split_sentences_keeps_abbreviations_and_initials():
    text = "Mr. Smith left.  He was tired! Was he? The U.S. Army said no. J. Doe agreed."
    assert split_sentences(text) == [
        "Mr. Smith left.", "He was tired!", "Was he?", "The U.S. Army said no.", "J. Doe agreed.",
    ]


def test_split_sentences_blank_and_no_stop():
    assert split_sentences("   ") == []
    assert split_sentences("no stop at all") == ["no stop at all"]
    assert split_sentences('She said "go." Then 3 men came.') == ['She said "go."', "Then 3 men came."]


def test_alignscore_chunks_follow_upstream_arithmetic():
    # 4 sentences, 12 words, 5-word chunks: n = 12 // 5 + 1 = 3 chunks wanted, k = max(4 // 3, 1) = 1
    text = "Aa bb cc. Dd ee ff. Gg hh ii. Jj kk ll."
    assert alignscore_chunks(text, chunk_words=5) == ["Aa bb cc.", "Dd ee ff.", "Gg hh ii.", "Jj kk ll."]
    # 6 sentences, 12 words, 10-word chunks: n = 2, k = 3
    text = "Aa bb. Cc dd. Ee ff. Gg hh. Ii jj. Kk ll."
    assert alignscore_chunks(text, chunk_words=10) == ["Aa bb. Cc dd. Ee ff.", "Gg hh. Ii jj. Kk ll."]
    # 7 sentences, n = 2, k = 3: the last chunk takes the one left over
    text = "Aa bb. Cc dd. Ee ff. Gg hh. Ii jj. Kk ll. Mm."
    assert alignscore_chunks(text, chunk_words=10)[-1] == "Mm."
    # short text: one chunk with every sentence
    assert alignscore_chunks("Aa bb. Cc dd.") == ["Aa bb. Cc dd."]
    assert alignscore_chunks("") == [""]


def test_word_blocks_stay_under_the_limit():
    s40, s50, s30 = ("w " * 40).strip() + ".", ("x " * 50).strip() + ".", ("y " * 30).strip() + "."
    blocks = word_blocks([s40, s50, s30], max_words=100)
    assert blocks == [f"{s40} {s50}", s30]
    assert all(len(b.split()) < 100 for b in blocks)
    long = ("z " * 150).strip() + "."
    assert word_blocks([long, s30], 100) == [long, s30]  # an over-long sentence is its own block
    with pytest.raises(ValueError, match="`max_words` must be a positive int"):
        word_blocks([s30], 0)
