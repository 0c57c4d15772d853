"""Fairness-aware beam search: the objective and its settings (``objective``), the beam bookkeeping
(``state``, ``search``), the meaning-level term (``meaning``, ``embeddings``), and its two loops:
inside transformers' ``generate`` (``hf_loop``) and outside any engine (``step_loop``)."""
