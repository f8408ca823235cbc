"""Analysis of result rows: the results frame, inference across seeds, agreement, headline tables.

Pure functions of result tables (pandas / scipy); nothing here trains or draws.
"""

__all__: list[str] = []
