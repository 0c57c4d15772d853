"""evenhand's entailment model (issue 48): one learned p(premise supports hypothesis).

``model`` is the cross-encoder on the embedded all-MiniLM-L6-v2, how it is
trained from a JSONL of labelled public pairs (``evenhand build-checker
--train-file``) and how its shipped weights (``weights/entail.safetensors``:
the trained top layers and the head; the rest is the installed base model)
are stored and loaded. ``inferencer`` scores summaries with it: AlignScore's
chunk x sentence max-mean over short source chunks, each summary sentence read
with its ``k`` closest chunks only. Every output that uses it names it
``evenhand-entail <sha8>``.
"""
