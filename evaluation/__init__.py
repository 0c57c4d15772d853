"""evenhand.evaluation: data schema, loaders and the field's metrics.

This package imports nothing else of ours (see DEVELOPERS.md layout).
"""
