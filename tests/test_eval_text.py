from evenhand.evaluation.text.tokens import (
    FAIRSUMM_FILTER_WORDS,
    NLTK_ENGLISH_STOP_WORDS,
    lemma,
    normalize_word,
    spacy_tokens,
    word_tokens,
)


def test_nltk_english_stop_words_list():
    assert len(NLTK_ENGLISH_STOP_WORDS) == 179
    assert {"i", "wouldn't", "ourselves", "ma"} <= NLTK_ENGLISH_STOP_WORDS
    assert {"||", "people", "``", "...", "!", "'"} <= FAIRSUMM_FILTER_WORDS
    assert "n't" not in FAIRSUMM_FILTER_WORDS  # not in the authors' list either


def test_word_tokens_split_sentences_like_word_tokenize():
    # Treebank splits only a string-final period; the sentence split handles the inner one
    assert word_tokens("I loved it. Don't buy || ok") == [
        "I",
        "loved",
        "it",
        ".",
        "Do",
        "n't",
        "buy",
        "||",
        "ok",
    ]


def test_spacy_tokens_keep_whitespace_and_punctuation():
    assert spacy_tokens("It's  fine.\nOK") == ["it", "'s", " ", "fine", ".", "\n", "ok"]


def test_lemma_prefers_noun_then_verb_and_keeps_unknown_words():
    assert lemma("shoes") == "shoe"
    assert lemma("went") == "go"
    assert lemma("xyzzyq") == "xyzzyq"
    assert normalize_word("running") == normalize_word("runs") == "run"
