"""Logits processors and their math: abstractiveness (Dreyer et al.'s λ_h), the group-coverage bonus
(``group_coverage``, over ``group_vocab``'s tables), the repetition penalty and n-gram ban
(``repetition``), and the wiring from a ``GenerateConfig`` to processors (``builders``)."""
