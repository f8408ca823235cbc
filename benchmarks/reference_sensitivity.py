"""Reference numbers for textcause.sensitivity, computed by the field's own packages.

Run in a SEPARATE environment that holds the reference packages (never the project's venv; textcause
is not imported here):

    python3 -m venv /work/refenv-sens
    /work/refenv-sens/bin/pip install dowhy pysensemakr austen-plots
    /work/refenv-sens/bin/python benchmarks/reference_sensitivity.py

It writes ``tests/sensitivity/reference_sensitivity.json``, which ``tests/sensitivity`` compares the
package against (to 1e-6):

- robustness values and partial R^2 by PySensemakr: its Darfur example (Cinelli & Hazlett 2020,
  ``peacefactor ~ directlyharmed + age + farmer_dar + herder_dar + pastvoted + hhsize_darfur + female
  + village``; the arrays are stored so the OLS t-statistic can be recomputed too), and a few
  (t, dof, q, alpha) cases that reach each branch of its formula;
- E-values by DoWhy's ``EValueSensitivityAnalyzer`` (its risk-ratio and odds-ratio paths);
- an Austen curve (ATE and ATT) and benchmark points by austen-plots' ``AustenPlot.fit`` on a
  simulated data set (the arrays, rounded to 12 significant digits before the reference sees them,
  are stored beside the numbers).
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import sensemakr
import statsmodels.formula.api as smf
from austen_plots.AustenPlot import AustenPlot
from dowhy.causal_refuters.evalue_sensitivity_analyzer import EValueSensitivityAnalyzer
from sklearn.linear_model import LinearRegression, LogisticRegression

OUT = Path(__file__).resolve().parents[1] / "tests" / "sensitivity" / "reference_sensitivity.json"
DARFUR_FORMULA = (
    "peacefactor ~ directlyharmed + age + farmer_dar + herder_dar + pastvoted + hhsize_darfur + female + village"
)
#: Every tenth point of the authors' alpha grid is stored (plus the one their plot code sets to 1).
CURVE_STRIDE = 10


def _round(a: np.ndarray) -> list[float]:
    return [float(f"{v:.12g}") for v in np.asarray(a, dtype=np.float64)]


def robustness() -> dict:
    darfur = sensemakr.load_darfur()
    fit = smf.ols(DARFUR_FORMULA, data=darfur).fit()
    out = {
        "darfur": {
            "estimate": float(fit.params["directlyharmed"]),
            "se": float(fit.bse["directlyharmed"]),
            "t_statistic": float(fit.tvalues["directlyharmed"]),
            "dof": int(fit.df_resid),
            # PySensemakr 0.0.8's partial_r2(model=...) indexes a labelled Series by position ([0]), a KeyError
            # under pandas 3: its t-statistic path gives the same number
            "partial_r2": float(
                sensemakr.partial_r2(t_statistic=float(fit.tvalues["directlyharmed"]), dof=int(fit.df_resid))
            ),
            "rv_q1": float(sensemakr.robustness_value(model=fit, covariates="directlyharmed", q=1).iloc[0]),
            "rv_q1_a05": float(
                sensemakr.robustness_value(model=fit, covariates="directlyharmed", q=1, alpha=0.05).iloc[0]
            ),
            "rv_q05_a05": float(
                sensemakr.robustness_value(model=fit, covariates="directlyharmed", q=0.5, alpha=0.05).iloc[0]
            ),
        },
        "arrays": {
            "peacefactor": darfur["peacefactor"].astype(float).tolist(),
            "directlyharmed": darfur["directlyharmed"].astype(int).tolist(),
            "covariates": {
                c: darfur[c].astype(int).tolist()
                for c in ("age", "farmer_dar", "herder_dar", "pastvoted", "hhsize_darfur", "female")
            },
            "village": pd.factorize(darfur["village"])[0].tolist(),
        },
        "cases": [],
    }
    # (t, dof, q, alpha): the binding branch, the non-binding one (fq > 1/f_crit), fqa < 0, q != 1, alpha = 1
    for t_stat, dof, q, alpha in [
        (4.18445, 783, 1.0, 0.05),
        (2.5, 50, 1.0, 0.05),
        (30.0, 20, 1.0, 0.05),
        (1.2, 200, 1.0, 0.05),
        (-3.0, 120, 0.5, 0.10),
        (6.0, 1000, 2.0, 0.01),
        (2.0, 10, 1.0, 1.0),
    ]:
        rv = sensemakr.robustness_value(t_statistic=t_stat, dof=dof, q=q, alpha=alpha)
        out["cases"].append(
            {
                "t_statistic": t_stat,
                "dof": dof,
                "q": q,
                "alpha": alpha,
                "rv": float(rv.iloc[0]),
                "partial_r2": float(sensemakr.partial_r2(t_statistic=t_stat, dof=dof)),
            }
        )
    return out


def evalues() -> list[dict]:
    analyzer = EValueSensitivityAnalyzer.__new__(EValueSensitivityAnalyzer)  # its ratio methods need no estimate
    analyzer.logger = logging.getLogger("reference_sensitivity")
    cases = []
    for rr, lo, hi, true in [
        (3.9, 1.8, 8.7, 1.0),  # VanderWeele & Ding 2017, breastfeeding and infection
        (0.8, 0.71, 0.91, 1.0),  # protective, interval below 1
        (1.3, 0.9, 1.8, 1.0),  # interval contains 1
        (0.7, 0.45, 1.1, 1.0),  # protective, interval contains 1
        (2.0, 1.5, 2.6, 1.2),  # a non-null E-value
        (1.5, None, None, 1.0),  # no interval
    ]:
        r = analyzer._evalue_RR(rr, lo, hi, true)
        cases.append({"kind": "rr", "est": rr, "lo": lo, "hi": hi, "true": true, **_plain(r)})
    for odds, lo, hi, rare in [(2.5, 1.5, 4.1, False), (2.5, 1.5, 4.1, True), (0.5, 0.3, 0.8, False)]:
        r = analyzer._evalue_OR(odds, lo, hi, rare, 1)
        cases.append({"kind": "or", "est": odds, "lo": lo, "hi": hi, "rare": rare, **_plain(r)})
    return cases


def _plain(d: dict) -> dict:
    return {k: (None if v is None else float(v)) for k, v in d.items()}


def austen() -> dict:
    rng = np.random.default_rng(45)
    n = 400
    x = rng.normal(size=(n, 4))
    t = rng.binomial(1, 1 / (1 + np.exp(-(0.8 * x[:, 0] - 0.6 * x[:, 1] + 0.3 * x[:, 2]))))
    y = 1.0 * t + 1.5 * x[:, 0] + 0.8 * x[:, 1] + 0.5 * x[:, 3] + rng.normal(size=n)
    groups = {"first": [0], "second_and_fourth": [1, 3]}

    def fit(cols: list[int]) -> tuple[np.ndarray, np.ndarray]:
        g = LogisticRegression(C=1.0).fit(x[:, cols], t).predict_proba(x[:, cols])[:, 1]
        q = LinearRegression().fit(np.column_stack([t, x[:, cols]]), y).predict(np.column_stack([t, x[:, cols]]))
        return np.array(_round(g)), np.array(_round(q))

    g, q = fit([0, 1, 2, 3])
    loo = {name: fit([c for c in range(4) if c not in drop]) for name, drop in groups.items()}
    bias = 0.6
    out: dict = {
        "arrays": {"t": t.tolist(), "y": _round(y), "g": g.tolist(), "Q": q.tolist()},
        "benchmarks": {name: {"g": gj.tolist(), "Q": qj.tolist()} for name, (gj, qj) in loo.items()},
        "bias": bias,
    }
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "covariates").mkdir()
        pd.DataFrame({"g": g, "Q": q, "t": t, "y": out["arrays"]["y"]}).to_csv(root / "input_df.csv", index=False)
        for name, (gj, qj) in loo.items():
            frame = pd.DataFrame({"g": gj, "Q": qj, "t": t, "y": out["arrays"]["y"]})
            frame.to_csv(root / "covariates" / f"{name}.csv", index=False)
        plot = AustenPlot(str(root / "input_df.csv"), str(root / "covariates"))
        for target, att in (("ate", False), ("att", True)):
            _, coords, variables = plot.fit(bias=bias, do_att=att)
            rsq = coords["Rsq"].to_numpy()
            modified = [int(i) for i in np.flatnonzero(rsq == 1.0)]
            index = sorted(set(range(0, len(rsq), CURVE_STRIDE)) | set(modified))
            out[target] = {
                "index": index,
                "alpha": [float(coords["alpha"].iloc[i]) for i in index],
                "Rsq": [float(rsq[i]) for i in index],
                "set_to_one": modified,
                "variables": {
                    row.covariate_name: {"ahat": float(row.ahat), "Rsqhat": float(row.Rsqhat)}
                    for row in variables.itertuples()
                },
            }
    return out


def main() -> None:
    versions = {p: importlib.metadata.version(p) for p in ("dowhy", "PySensemakr", "austen-plots", "numpy", "scipy")}
    fixture = {
        "generated_by": "benchmarks/reference_sensitivity.py",
        "versions": versions,
        "robustness": robustness(),
        "evalue": evalues(),
        "austen": austen(),
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(fixture) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({OUT.stat().st_size / 1e3:.0f} kB) with {versions}")


if __name__ == "__main__":
    main()
