"""``evaluate.py RUN_DIR`` for a SemEval-2020 Task 5 run: fine-tuned (subtask 1 or 2) or a fitted subtask-1 baseline.

A run trained by ``train.py fit --config configs/counterfactual/<...>.yaml`` is reloaded from its
``config.yaml`` (checked by :func:`~textcause.run.class_paths.check_class_paths` before anything
it names is imported) and its best checkpoint, and evaluated by
:func:`textcause.counterfactual.finetuned.evaluate_finetuned`: the threshold (subtask 1) or the
"no consequent" margin (subtask 2) chosen on the validation split, then the test file scored once.
A fitted baseline (``configs/counterfactual/subtask1_svm.yaml``, ``subtask1_minilm_lr.yaml``) is
rebuilt from its checkpoint's tensors and plain values (read with ``weights_only=True``, like every
checkpoint here) and scored at the C and threshold its fit chose on the same validation part.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

from textcause.io import load_torch
from textcause.run.evaluation import find_checkpoint
from textcause.run.fit import instantiate, merge, nest, read_config

__all__ = [
    "PACKAGE",
    "evaluate_counterfactual_run",
    "is_counterfactual_run",
]

#: The room whose models this evaluation serves.
PACKAGE = "textcause.counterfactual."


def is_counterfactual_run(run_dir: str | Path) -> bool:
    """Whether ``run_dir`` holds a ``config.yaml`` whose model is a counterfactual-recognition model."""
    path = Path(run_dir) / "config.yaml"
    if not path.is_file():
        return False
    try:
        model = read_config(path).get("model")
    except ValueError:
        return False
    return isinstance(model, dict) and str(model.get("class_path", "")).startswith(PACKAGE)


def evaluate_counterfactual_run(
    run_dir: str | Path,
    *,
    ckpt: Optional[str | Path] = None,
    out: Optional[str | Path] = None,
    allow_modules: Sequence[str] = (),
) -> dict[str, Any]:
    """Reload a fine-tuned or fitted run and score the official test file (see the module docstring).

    Args:
        run_dir: the run's log folder (``config.yaml`` and ``checkpoints/``).
        ckpt: the checkpoint (default: the run's best).
        out: where ``subtask<k>.csv`` and ``results.json`` go (default: the run folder).
        allow_modules: more packages whose classes the run's config may name.

    Raises:
        FileNotFoundError: no ``config.yaml`` or no checkpoint.
        ValueError: the config names a class outside the allowed packages or of the wrong kind.
    """

    from textcause.counterfactual.finetuned import evaluate_finetuned
    from textcause.run.class_paths import check_class_paths

    run_dir = Path(run_dir)
    config_path = run_dir / "config.yaml"
    if not config_path.is_file():
        raise FileNotFoundError(f"No config.yaml in '{run_dir}': give the folder of a run made by train.py.")
    checkpoint = Path(ckpt) if ckpt else find_checkpoint(run_dir)
    if checkpoint is None or not checkpoint.is_file():
        raise FileNotFoundError(
            f"No checkpoint in '{run_dir}' (or at '{checkpoint}'): a model must be trained (or fitted) before it "
            "is evaluated; run train.py fit, or pass --ckpt."
        )
    saved = read_config(config_path)
    for key in ("ckpt_path", "weights_only"):
        saved.pop(key, None)
    overrides = {
        "trainer.logger": False,
        "trainer.devices": 1,
        "trainer.num_nodes": 1,
        "trainer.strategy": "auto",
        "trainer.callbacks": [],
        "trainer.enable_progress_bar": False,
        "trainer.enable_model_summary": False,
    }
    config = merge(saved, nest(overrides))
    check_class_paths(config, str(config_path), allow=allow_modules)
    cli = instantiate(config, save_config_callback=None)
    state = load_torch(checkpoint)  # tensors and plain values only
    if "state_dict" not in state:
        raise ValueError(f"The checkpoint '{checkpoint}' holds no state_dict: it is not a Lightning checkpoint.")
    cli.model.load_state_dict(state["state_dict"])
    cli.model.eval()
    cli.datamodule.setup("predict")
    out_dir = Path(out) if out else run_dir
    return evaluate_finetuned(cli.trainer, cli.model, cli.datamodule, out_dir, meta={"checkpoint": str(checkpoint)})
