"""The one encoder-identity check (``textcause.features.encoder.check_same_encoder``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from textcause.features.encoder_spec import check_same_encoder


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("TEXTCAUSE_CACHE", str(tmp_path / "cache"))


def test_the_same_weights_under_another_path_are_one_encoder(tiny_encoder, tmp_path):
    copy = shutil.copytree(tiny_encoder, tmp_path / "elsewhere")
    check_same_encoder(tiny_encoder, str(copy), "never raised")
    check_same_encoder(tiny_encoder, str(Path(tiny_encoder)) + "/", "never raised")
    check_same_encoder(None, "default", "never raised")  # two names of the packaged MiniLM


def test_other_weights_raise_the_callers_sentence(tiny_encoder):
    with pytest.raises(ValueError, match=r"^the caller's sentence\.$"):
        check_same_encoder(None, tiny_encoder, "the caller's sentence.")


def test_a_missing_encoder_raises_resolve_encoders_sentence(tiny_encoder, tmp_path):
    with pytest.raises(ValueError, match="The encoder .* was not found"):
        check_same_encoder(tiny_encoder, str(tmp_path / "nothing-here"), "not this one")
