"""The seed floors are computed (scipy.stats) and 'not judged' is given exactly when open units could change a verdict."""

from __future__ import annotations

import pytest
from scipy import stats

from textcause.analysis.verdicts import decide, rate_min_seeds, rate_power, sign_test_min_p, total


def test_sign_test_cannot_reject_at_005_before_six_seeds():
    assert [sign_test_min_p(n) for n in (3, 5, 6)] == pytest.approx([0.25, 0.0625, 0.03125])


def test_rate_power_by_hand():
    # 3 seeds: the interval lies above 0.05 from 2 false discoveries (k = 1: lower end 0.008), so power = P(k >= 2).
    assert rate_power(3) == pytest.approx(stats.binom.sf(1, 3, 0.5)) == pytest.approx(0.5)
    assert rate_power(5) == pytest.approx(stats.binom.sf(1, 5, 0.5))  # 2 of 5: lower end 0.053
    assert rate_min_seeds() == 5 and rate_power(6) < 0.8  # discrete: 6 seeds need 3 false discoveries


def test_decide_only_judges_what_open_units_cannot_change():
    def rule(c):
        share = total(c, "for") / max(1, total(c, "for") + total(c, "against"))
        return "reproduced" if share > 0.5 else ("refuted" if share <= 0.25 else "mixed")

    assert decide({"all": ["for", "for", "for", "open"]}, rule) == "reproduced"  # 3 of 4 at worst
    assert decide({"all": ["for", "against", "open"]}, rule) == "not judged"
    assert decide({"all": ["against"] * 4 + ["open"]}, rule) == "refuted"  # 1 of 5 at most
    assert decide({"all": ["for", "against"]}, rule) == "mixed"
