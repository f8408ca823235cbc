"""The documentation site's generated API pages: one per room, from the modules that declare ``__all__``;
every name those ``__all__`` list exists at run time and is documented where the object lives (a
package's lazy exports and the top level's included)."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _hook():
    spec = importlib.util.spec_from_file_location("api_pages", ROOT / "docs" / "hooks" / "api_pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_room_with_a_public_surface_gets_a_page():
    rooms = _hook().rooms()
    assert {"textcause", "estimators", "metrics", "corpus", "simulation", "methods"} <= set(rooms)
    assert "textcause.estimators" in rooms["estimators"]
    assert all(
        module.split(".")[:2] == ["textcause", room] or room == "textcause"
        for room, ms in rooms.items()
        for module in ms
    )


@pytest.mark.slow  # imports every room (torch, Lightning): about 12 s
def test_every_name_of_every_all_exists():
    hook = _hook()
    for modules in hook.rooms().values():
        for name in modules:
            module = importlib.import_module(name)
            listed = hook._declares_all(hook._path(name))
            assert listed == list(module.__all__), name  # the static reading is the real __all__
            missing = [n for n in listed if not hasattr(module, n)]
            assert missing == [], f"{name}.__all__ lists names it does not have: {missing}"
            for attr, dotted in hook.homes(name).items():  # the page documents the object itself
                home, leaf = dotted.rsplit(".", 1)
                assert getattr(importlib.import_module(home), leaf) is getattr(module, attr), dotted


def test_the_top_level_lazy_exports_are_found_where_they_live():
    lazy = _hook().lazy_exports()
    assert lazy["evaluate"].endswith(".evaluate") and "PropensityMethod" in lazy
    for name, dotted in lazy.items():
        module, attr = dotted.rsplit(".", 1)
        assert getattr(importlib.import_module(module), attr) is getattr(importlib.import_module("textcause"), name)
