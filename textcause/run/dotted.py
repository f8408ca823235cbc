"""One lookup of a dotted key (``"model.init_args.net"``) in nested mappings or jsonargparse namespaces."""

from __future__ import annotations

from typing import Any

__all__ = ["dotted_get"]


def dotted_get(config: Any, dotted: str, default: Any = None) -> Any:
    """The value at ``dotted`` in ``config`` (a mapping or a jsonargparse ``Namespace``, nested), or ``default``
    where a part is missing or a value on the way holds no keys.

    >>> dotted_get({"model": {"init_args": {"lr": 0.1}}}, "model.init_args.lr")
    0.1
    >>> dotted_get({"model": "LogisticRegression"}, "model.init_args.lr", "-")
    '-'
    """
    cur = config
    for part in dotted.split("."):
        try:
            if isinstance(cur, (str, bytes)) or part not in cur:
                return default
            cur = cur[part]
        except TypeError:
            return default
    return cur
