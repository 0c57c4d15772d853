"""evenhand.training: the DPO+RR preference-tuning loop."""
