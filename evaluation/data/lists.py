"""List-valued options given as a comma-separated string or as a list.

>>> split_list("mint, fragments,,fairsumm", "metrics")
['mint', 'fragments', 'fairsumm']
>>> split_list(["q_proj", " v_proj "], "lora_target")
['q_proj', 'v_proj']
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def split_list(value: str | Iterable[Any] | None, what: str, *, empty_ok: bool = False) -> list[str]:
    """The items of a comma-separated string or a list, each stripped, blanks dropped.

    Args:
        value: ``"a,b"``, ``["a", "b"]`` or None (no items).
        what: the option's name, for the error message.
        empty_ok: return ``[]`` when there are no items instead of raising.

    Raises:
        ValueError: naming ``what`` when there are no items and ``empty_ok`` is False.
    """
    if value is None:
        items: list[str] = []
    elif isinstance(value, str):
        items = value.split(",")
    else:
        items = [str(v) for v in value]
    items = [t.strip() for t in items if t.strip()]
    if not items and not empty_ok:
        raise ValueError(f"`{what}` is empty; give at least one value, comma-separated (e.g. 'a,b')")
    return items
