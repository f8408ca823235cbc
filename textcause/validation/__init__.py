"""Input checks shared by every public function.

Each check raises ``ValueError`` with one sentence in scikit-learn's wording, so a user sees what is
wrong and what to do, never a traceback from deep inside numpy or a NaN. With ``owner`` None a
check names a key of a YAML spec instead ("'evaluation.n_boot' must be an int >= 0. Got -1 instead."),
and :mod:`textcause.specs` prefixes the file. The checks live by kind: per-unit arrays
(:mod:`~textcause.validation.arrays`), scalar parameters and config keys
(:mod:`~textcause.validation.params`) and command-line wording (:mod:`~textcause.validation.options`).
"""

from __future__ import annotations

from textcause.validation.arrays import (
    MAX_MAGNITUDE,
    MAX_WEIGHT,
    as_1d_float,
    as_bounded_float,
    check_consistent_length,
    check_paired,
    check_probability,
    check_propensity,
    check_treatment,
    check_weights,
)
from textcause.validation.options import as_typed_options, option_error_sentence
from textcause.validation.params import check_int, check_options, check_real, check_subset, check_that

__all__ = [
    "MAX_WEIGHT",
    "MAX_MAGNITUDE",
    "check_consistent_length",
    "check_paired",
    "as_1d_float",
    "as_bounded_float",
    "check_weights",
    "check_treatment",
    "check_propensity",
    "check_probability",
    "check_int",
    "check_real",
    "check_options",
    "check_subset",
    "check_that",
    "option_error_sentence",
    "as_typed_options",
]
