"""Input data: the schema (documents with group labels, examples), loaders, input checks, configs.

- :mod:`.schema`: ``Document`` and ``Example``;
- :mod:`.loaders`: the data formats (generic JSONL/CSV, FairSumm, TheFlipSide) read into examples;
- :mod:`.checks`: the checks every input value goes through (numbers, field types);
- :mod:`.configs`: config dataclasses from YAML files and mappings; :mod:`.lists`: list-valued options.

``fairsumm/`` holds package data: the NLTK tables FairSumm's word processing reads
(:mod:`evenhand.evaluation.text.fairsumm_words`).
"""
