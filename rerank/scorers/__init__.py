"""Built-in scorers: every module of this package is imported on the registry's first lookup.

A new built-in scorer is one module here with an ``@register("name")`` class;
nothing else needs editing (heavy imports stay inside the scorers' methods).
"""
