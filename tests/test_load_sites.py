"""Every place the package loads a checkpoint, cache or pickle-like file refuses a crafted file.

:data:`SITES` lists each load site (file and enclosing function) with a way to hand it a file whose
unpickling would run code (make a folder). The first test walks the package's source (its syntax
tree, so docstrings and comments do not count) for every call that can unpickle or that hands a
checkpoint to Lightning; a site not in :data:`SITES` fails it, so a new load site has to join.
Each listed site is then given the crafted file: the code must not run, and the site refuses it
(one ``ValueError`` sentence; a cache entry or shard is a named, warned miss instead, by its contract).
"""

from __future__ import annotations

import ast
import json
import os
import warnings
from pathlib import Path

import lightning as L
import numpy as np
import pytest
import torch
import yaml

import textcause

PACKAGE = Path(textcause.__file__).resolve().parent
#: Call names (the attribute or function called) that can unpickle or load a checkpoint.
LOADERS = {
    "load", "loads", "load_from_checkpoint", "load_npz", "read_pickle", "unsafe_load", "full_load",
    "Unpickler", "open_shelf",
}  # fmt: skip
#: Modules whose ``load`` / ``loads`` those are (``json.loads`` and friends are not pickle-like).
PICKLE_LIKE = {"torch", "pickle", "np", "numpy", "joblib", "yaml", "dill", "cloudpickle", "marshal", "jit", "shelve"}
REFUSED = "was refused: it holds objects that a weights-only load does not allow"


def _call_name(call: ast.Call) -> tuple[str | None, str]:
    func = call.func
    if isinstance(func, ast.Attribute):
        owner = func.value
        base = owner.attr if isinstance(owner, ast.Attribute) else owner.id if isinstance(owner, ast.Name) else None
        return base, func.attr
    if isinstance(func, ast.Name):
        return None, func.id
    return None, ""


def _is_load_site(call: ast.Call) -> bool:
    owner, name = _call_name(call)
    if any(kw.arg == "ckpt_path" for kw in call.keywords):  # a checkpoint handed to trainer.fit / predict / ...
        return True
    if name in ("load", "loads"):
        return owner in PICKLE_LIKE
    return name in LOADERS


def load_sites() -> set[str]:
    """``relative/path.py:Qualified.function`` of every load call in the package."""
    found: set[str] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        rel = path.relative_to(PACKAGE.parent).as_posix()

        def visit(node: ast.AST, scope: tuple[str, ...], rel: str = rel) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    visit(child, (*scope, child.name))
                    continue
                if isinstance(child, ast.Call) and _is_load_site(child):
                    found.add(f"{rel}:{'.'.join(scope) or '<module>'}")
                visit(child, scope)

        visit(tree, ())
    return found


# --------------------------------------------------------------------------------------- crafted files
class Planted:
    """Unpickling it makes the folder ``marker``: the proof that code ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = str(marker)

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def crafted_checkpoint(tmp: Path) -> tuple[Path, Path]:
    marker = tmp / "ran"
    path = tmp / "crafted.ckpt"
    torch.save(
        {"state_dict": {}, "hyper_parameters": {"x": Planted(marker)}, "pytorch-lightning_version": "2.6.0"}, path
    )
    return path, marker


def crafted_npy(path: Path, marker: Path) -> Path:
    arr = np.empty(1, dtype=object)
    arr[0] = Planted(marker)
    np.save(path, arr, allow_pickle=True)
    return path


class _Tiny(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)

    def predict_step(self, batch, batch_idx):
        return {"index": batch[0][:, 0], "propensity": torch.sigmoid(self.layer(batch[0])).squeeze(-1)}


class _TinyData(L.LightningDataModule):
    def predict_dataloader(self):
        x = torch.zeros(4, 2)
        return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x), batch_size=2)


def _trainer() -> L.Trainer:
    return L.Trainer(accelerator="cpu", devices=1, logger=False, enable_progress_bar=False, enable_model_summary=False)


# ----------------------------------------------------------------------------------------- exercisers
def _io_load_torch(tmp: Path) -> Path:
    from textcause.io import load_torch

    path, marker = crafted_checkpoint(tmp)
    with pytest.raises(ValueError, match=REFUSED):
        load_torch(path)
    return marker


def _io_load_npy(tmp: Path) -> Path:
    from textcause.io import load_npy

    marker = tmp / "ran"
    path = crafted_npy(tmp / "x.npy", marker)
    with pytest.raises(ValueError, match=REFUSED):
        load_npy(path)
    return marker


def _io_load_yaml(tmp: Path) -> Path:
    from textcause.io import load_yaml

    marker = tmp / "ran"
    with pytest.raises(yaml.YAMLError, match="could not determine a constructor"):
        load_yaml(f"a: !!python/object/apply:os.mkdir ['{marker}']\n")
    return marker


def _gender_load_finetuned(tmp: Path) -> Path:
    from textcause.gender.model import load_finetuned

    path, marker = crafted_checkpoint(tmp)
    with pytest.raises(ValueError, match=REFUSED):
        load_finetuned(str(path))
    return marker


def _predict_score_texts(tmp: Path) -> Path:
    from textcause.run.predict import score_texts

    path, marker = crafted_checkpoint(tmp)
    with pytest.raises(ValueError, match=REFUSED):
        score_texts(
            "textcause.models.propensity.PropensityModel", path, {}, [["a post"]],
            config={}, data_hparams={}, batch_size=2, progress=False,
        )  # fmt: skip
    return marker


def _evaluation_predict(gathered: bool):
    def run(tmp: Path) -> Path:
        from textcause.run import evaluation

        path, marker = crafted_checkpoint(tmp)
        fn = evaluation._predict_gathered if gathered else evaluation.predict_propensities
        with pytest.raises(ValueError, match=REFUSED):
            fn(_trainer(), _Tiny(), _TinyData(), path)
        return marker

    return run


def _representation_cache(tmp: Path) -> Path:
    """A cache entry whose matrix file was swapped for a pickled one, its checksums forged to match."""
    import hashlib

    from textcause.features import representation as rep_mod

    texts = [["rain coffee", "train music"], ["coffee dog"], ["rain dog cat"]] * 4
    rep = rep_mod.build_representation("unigram_binary", texts, np.arange(8), min_users=1, cache_dir=tmp)
    marker = tmp / "ran"
    arr = np.empty(1, dtype=object)
    arr[0] = Planted(marker)
    npz = tmp / f"{rep.key}.npz"
    np.savez(npz, matrix=arr, allow_pickle=True)
    meta = json.loads((tmp / f"{rep.key}.json").read_text())["entry"]
    blob = npz.read_bytes()
    meta["sparse"] = False
    meta["file"] = {"bytes": len(blob), "sha256": hashlib.sha256(blob).hexdigest()}
    (tmp / f"{rep.key}.json").write_bytes(rep_mod._meta_bytes(meta))
    with pytest.warns(RuntimeWarning, match=rf"damaged feature cache entry {npz} .*allow_pickle"):
        again = rep_mod.build_representation("unigram_binary", texts, np.arange(8), min_users=1, cache_dir=tmp)
    assert not again.from_cache
    return marker


def _shard(part: str):
    def run(tmp: Path) -> Path:
        from textcause.features.embed_cache import ShardStore
        from textcause.features.shard_checks import DamagedShard

        keys = [bytes([i]) * 16 for i in range(3)]
        store = ShardStore(tmp / "store", "pooled", dim=4)
        name = store.write(keys, vec=np.ones((3, 4), dtype=np.float16))
        (tmp / "store" / f"{name}.manifest.json").unlink()  # an old shard: no sizes to catch the swap first
        marker = tmp / "ran"
        victim = crafted_npy(tmp / "store" / f"{name}.{part}.npy", marker)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fresh = ShardStore(tmp / "store", "pooled", dim=4)
            try:
                fresh.read_vectors(keys)
                said = " ".join(str(w.message) for w in caught)
            except (DamagedShard, KeyError, ValueError) as err:
                said = str(err) + " ".join(str(w.message) for w in caught)
        assert str(victim) in said and ("allow_pickle" in said or "Python objects" in said)
        return marker

    return run


#: Every load site of the package, and how to hand it a crafted file.
SITES = {
    "textcause/io.py:load_torch": _io_load_torch,
    "textcause/io.py:load_npy": _io_load_npy,
    "textcause/io.py:load_yaml": _io_load_yaml,
    "textcause/gender/model.py:load_finetuned": _gender_load_finetuned,
    "textcause/run/predict.py:score_texts": _predict_score_texts,
    "textcause/run/evaluation.py:predict_propensities": _evaluation_predict(gathered=False),
    "textcause/run/evaluation.py:_predict_gathered": _evaluation_predict(gathered=True),
    "textcause/features/representation.py:_load_cached": _representation_cache,
    "textcause/features/embed_cache.py:ShardStore._read_keys": _shard("keys"),
    "textcause/features/embed_cache.py:ShardStore._open": _shard("vec"),
}


def test_every_load_site_is_listed():
    found = load_sites()
    assert found - set(SITES) == set(), "new load sites: add them to SITES with a crafted file"
    assert set(SITES) - found == set(), "listed sites that no longer load: remove them from SITES"


@pytest.mark.parametrize("site", sorted(SITES))
def test_a_crafted_file_runs_no_code(site, tmp_path):
    marker = SITES[site](tmp_path)
    assert not Path(marker).exists(), f"{site} ran code planted in a file"


def test_the_crafted_file_would_run_code(tmp_path):
    """The check above is real: an unrestricted load of the same file makes the folder."""
    path, marker = crafted_checkpoint(tmp_path)
    torch.load(path, weights_only=False)
    assert marker.is_dir()
