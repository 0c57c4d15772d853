"""Built-in evaluation metrics as scorers: every module here is imported on the registry's first lookup.

``mint`` and ``fragments`` (:mod:`.abstractiveness`) and ``fairsumm``
(:mod:`.fairsumm`) are registered like every rerank scorer, so ``evaluate``,
``rerank``, ``meta-eval``... accept them by name.
"""
