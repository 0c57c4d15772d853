"""An offline faithfulness checker the project trains itself (issue 33).

``pairs`` builds FactCC-style synthetic pairs from source texts only
(``corpus.jsonl``); ``model`` fine-tunes a cross-encoder from the embedded
all-MiniLM-L6-v2 on them and caches it by content; ``claims`` splits a
summary into claims and aggregates per-document support by quantifier and
named group. The ``checker`` scorer (``rerank/scorers/checker.py``) scores
summaries with it; ``evenhand build-checker`` builds it.
"""
