"""Table 2's layout: one row per W category (and x), the female and male slope and Pearson r.

:func:`stats_table` gives the flat frame (the CSV: one column per number, intervals included) and
:func:`table_markdown` the Markdown table with ``estimate [low, high]`` cells. The intervals are
the least-squares fit's (:mod:`textcause.gender.stats`: t with ``n_W - 2`` degrees of freedom for
the slope, Fisher's z for r), the same fit as figure 2's band; the probe bootstrap's intervals,
which leave out the points' scatter around the line, are only in the CSV's ``*_boot_*`` columns.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from textcause.gender.stats import Curve
from textcause.gender.words import GENDERS

KEYS = ("w_category", "w_list", "x_kind", "variant")


def stats_table(curves: Sequence[Curve], model: str = "") -> pd.DataFrame:
    """One row per W list, x kind and variant, with each gender's slope and r and their intervals.

    Raises:
        ValueError: no curves.
    """
    if not curves:
        raise ValueError("There are no curves to tabulate: score at least one W list.")
    rows: dict[tuple[str, ...], dict[str, object]] = {}
    for c in curves:
        key = (c.w_category, c.w_list, c.x_kind, c.variant)
        row = rows.setdefault(
            key,
            {
                "model": model,
                **dict(zip(KEYS, key)),
                "n_w": len(c.x),
                "level": c.level,
                "interval": "linear fit: t (n_w - 2 df) for the slope, Fisher z for r",
                "unit": c.unit,
                "n_boot": c.n_boot,
            },
        )
        g = c.gender
        row.update(
            {
                f"{g}_slope": c.slope,
                f"{g}_slope_low": c.slope_ci[0],
                f"{g}_slope_high": c.slope_ci[1],
                f"{g}_r": c.r,
                f"{g}_r_low": c.r_ci[0],
                f"{g}_r_high": c.r_ci[1],
                f"{g}_p": c.p_value,
                f"{g}_slope_boot_low": c.boot_slope_ci[0],
                f"{g}_slope_boot_high": c.boot_slope_ci[1],
                f"{g}_r_boot_low": c.boot_r_ci[0],
                f"{g}_r_boot_high": c.boot_r_ci[1],
                f"{g}_n_probes": c.n_probes,
            }
        )
    return pd.DataFrame(list(rows.values()))


def _cell(row: pd.Series, name: str) -> str:
    if pd.isna(row.get(name)):
        return "undefined"
    if pd.isna(row[name + "_low"]):
        return f"{row[name]:.3g} [no interval]"
    return f"{row[name]:.3g} [{row[name + '_low']:.3g}, {row[name + '_high']:.3g}]"


def table_markdown(table: pd.DataFrame, *, notes: Sequence[str] = ()) -> str:
    """Table 2 in Markdown: W category, x, model, then female and male slope and Pearson r."""
    level = int(round(100 * float(table["level"].iloc[0])))
    head = ["W category", "W list", "x", "Model", "Variant"]
    for g in GENDERS:
        head += [f"{g.capitalize()} slope", f"{g.capitalize()} Pearson's r"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _, row in table.iterrows():
        x = "index of W" if row["x_kind"] == "index" else "value of W"
        cells = [str(row["w_category"]), str(row["w_list"]), x, str(row["model"]), str(row["variant"])]
        for g in GENDERS:
            cells += [_cell(row, f"{g}_slope"), _cell(row, f"{g}_r")]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Slopes are in percentage points of probability per unit of x (per step along the W list "
        f"for the index, per unit of W for its value); r is Pearson's r of the mean probability at each "
        f"value of W against x (scipy.stats.linregress). Brackets: {level}% confidence intervals of that "
        "least-squares fit (the slope's: t with n_W - 2 degrees of freedom from the scatter of the per-W "
        "means around the line; r's: Fisher's z), the same fit as the figure's band. The CSV's *_boot_* "
        "columns hold a percentile bootstrap over probes, which measures only the probes' noise within "
        "each mean and is too narrow when the means scatter around the line.",
    ]
    if (table["n_w"] < 3).any():
        lines[-1] += " With 2 values of W a line has no interval."
    r_cols = [f"{g}_r" for g in GENDERS if f"{g}_r" in table]
    if table[r_cols].isna().to_numpy().any():
        lines[-1] += (
            " An undefined r is a flat curve: the same mean at every value of W (for top5, no "
            "gendered word among any probe's top 5 predictions)."
        )
    lines += [""] + [f"- {n}" for n in notes] if notes else []
    return "\n".join(lines) + "\n"
