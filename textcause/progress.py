"""Progress bars for long steps (tqdm, on stderr), shown only where someone is watching.

Every long step (tokenising a corpus, fitting LDA, encoding posts) takes ``progress: bool | None``:
None, the default, shows a bar only when stderr is a terminal, so grid workers (whose output goes
to a log file), runs whose output is captured, and CI stay quiet; True shows it anyway, False never.
A bar appears only once its step has run :data:`DELAY` seconds, so quick steps print nothing.
On a terminal that reports no size (a pseudo-terminal opened by a program: ``script``, an IDE's
console), where tqdm would draw nothing, a bar is :data:`COLUMNS` wide.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import Any

__all__ = [
    "DELAY",
    "show_progress",
    "progress_bar",
    "format_seconds",
]

#: Seconds a step runs before its bar appears.
DELAY = 2.0
#: The width of a bar on a terminal that reports none.
COLUMNS = 80


def show_progress(progress: bool | None) -> bool:
    """Whether to show a bar: ``progress`` itself, or for None whether stderr is a terminal."""
    if progress is None:
        isatty = getattr(sys.stderr, "isatty", None)
        return bool(isatty()) if callable(isatty) else False
    return bool(progress)


def progress_bar(
    iterable: Iterable[Any] | None = None,
    *,
    total: int | None = None,
    desc: str = "",
    unit: str = "it",
    progress: bool | None = None,
    **kwargs: Any,
) -> Any:
    """A tqdm bar on stderr (over ``iterable`` if given), disabled unless :func:`show_progress`.

    Args:
        iterable: iterate through the bar (it counts the items); None: call ``update`` yourself.
        total: the number of items (default: ``len(iterable)``).
        desc: what the step does.
        unit: what one item is.
        progress: True, False or None (only on a terminal).
        **kwargs: other tqdm options.
    """
    from tqdm.auto import tqdm

    kwargs.setdefault("delay", DELAY)
    shown = show_progress(progress)
    size = {"dynamic_ncols": True, **(_unsized(sys.stderr) if shown else {})}
    return tqdm(iterable, total=total, desc=desc, unit=unit, file=sys.stderr, disable=not shown, **{**size, **kwargs})


def _unsized(stream: Any) -> dict[str, Any]:
    """tqdm's size options for a terminal that reports 0 columns or rows (tqdm draws nothing there:
    its bars go to rows at or below the terminal's last): :data:`COLUMNS` wide, fixed."""
    try:
        columns, rows = os.get_terminal_size(stream.fileno())
    except (AttributeError, OSError, ValueError):  # not a real terminal (a test's stream): tqdm decides
        return {}
    if columns > 0 and rows > 0:
        return {}
    return {"dynamic_ncols": False, "ncols": columns or COLUMNS, "nrows": rows or 24}


def format_seconds(seconds: float) -> str:
    """``seconds`` as tqdm writes elapsed time and ETAs (``00:37``, ``12:05``, ``1:02:03``)."""
    from tqdm import tqdm

    return tqdm.format_interval(max(0.0, seconds))
