"""Reports: figures (PNG + SVG), Markdown / HTML reports of a results database or an observational study."""

__all__: list[str] = []
