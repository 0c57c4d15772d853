"""The field's metrics, exactly as published: one module per metric family.

- abstractiveness: :mod:`.mint` (MINT), :mod:`.fragments` (extractive fragments),
  :mod:`.lcs` (their longest common subsequence), :mod:`.corpus` (both over many pairs at once);
- fairness: :mod:`.fairsumm` (BUR/UER/AUC/SOF), :mod:`.coverage` (Equal Coverage, Coverage Parity);
- faithfulness: :mod:`.factuality` (MINT-adjusted factuality, F@50);
- comparing systems and scorers: :mod:`.ranking` (Bradley–Terry, Spearman, winrate),
  :mod:`.bootstrap` (percentile intervals), :mod:`.meta_eval` (scorers against human judgments).

The same metrics as registered scorers are :mod:`evenhand.evaluation.scoring.scorers`.
"""
