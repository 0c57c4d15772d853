"""evenhand.training: the DPO+RR preference-tuning loop (Ri, Deas & McKeown 2025), or GRPO on the same scorers.

>>> from evenhand.training import DPORRConfig, train_dpo_rr
>>> config = DPORRConfig(data="train.jsonl", out_dir="run", iterations=2)  # doctest: +SKIP
>>> manifest = train_dpo_rr(config)  # doctest: +SKIP
>>> manifest = train_dpo_rr(DPORRConfig(data="train.jsonl", out_dir="grpo", method="grpo"))  # doctest: +SKIP
"""

from .config import DPORRConfig
from .loop import train_dpo_rr
from .pairs import Pair, build_pairs

__all__ = ["DPORRConfig", "Pair", "build_pairs", "train_dpo_rr"]
