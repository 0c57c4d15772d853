"""Text processing shared by the metrics (and by decoding and reranking).

- :mod:`.tokens`: spaCy and NLTK word tokens, stop words, word normalization;
- :mod:`.sentences`: sentence splitting, AlignScore chunks, Equal Coverage windows;
- :mod:`.fairsumm_words`: FairSumm's released word processing, offline and exact;
- :mod:`.treebank_words`: NLTK 3.10.4's Treebank word tokenizer (``word_tokenize``'s), in our code.
"""
