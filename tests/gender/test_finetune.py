"""Masked-gender fine-tuning: the model, the CLI path (train.py fit), probing a fine-tuned head, DDP."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import lightning as L
import numpy as np
import pandas as pd
import pytest
import torch
from lightning.pytorch.strategies import DDPStrategy

from textcause.cli.gender import gender_main
from textcause.gender.components import GenderTagger
from textcause.gender.datamodule import GenderDataModule
from textcause.gender.masking import IGNORE
from textcause.gender.model import GenderMaskedModel, load_finetuned
from textcause.gender.run import probe_model
from textcause.gender.scoring import BinaryHead, load_probe_model
from textcause.run.lightning_cli import make_cli

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "gender"
TRAINER = dict(
    accelerator="cpu", logger=False, enable_progress_bar=False, enable_model_summary=False, enable_checkpointing=False
)
VAL_KEYS = ("val_loss", "val_acc", "val_f1")


def data_module(corpus: str, encoder: str, **kwargs) -> GenderDataModule:
    return GenderDataModule(**{"source": corpus, "encoder": encoder, "n_sentences": 120, "batch_size": 8, **kwargs})


def fit_args(corpus: str, encoder: str, root: Path, config: str = "finetune_age.yaml", *extra: str) -> list[str]:
    return [
        "fit",
        "--config",
        str(CONFIGS / config),
        "--data.source",
        corpus,
        "--data.encoder",
        encoder,
        "--data.n_sentences",
        "80",
        "--data.batch_size",
        "8",
        "--model.init_args.net.init_args.encoder",
        encoder,
        "--model.init_args.lr",
        "0.001",
        "--trainer.precision",
        "32",
        "--trainer.default_root_dir",
        str(root),
        "--trainer.logger",
        json.dumps({"class_path": "lightning.pytorch.loggers.CSVLogger", "init_args": {"save_dir": str(root)}}),
        "--trainer.enable_progress_bar",
        "false",
        *extra,
    ]


def metrics(trainer: L.Trainer) -> dict[str, float]:
    return {k: float(trainer.callback_metrics[k]) for k in VAL_KEYS}


def direct_metrics(model: GenderMaskedModel, dm: GenderDataModule) -> dict[str, float]:
    """The validation metrics computed by hand from the model's logits at the masks."""
    model.eval()
    logits, labels = [], []
    with torch.no_grad():
        for batch in dm.val_dataloader():
            z, y = model.masked_logits(batch)
            logits.append(z.double())
            labels.append(y)
    z, y = torch.cat(logits), torch.cat(labels)
    pred = (torch.sigmoid(z) > 0.5).long()
    tp, fp, fn = (
        int(((pred == 1) & (y == 1)).sum()),
        int(((pred == 1) & (y == 0)).sum()),
        int(((pred == 0) & (y == 1)).sum()),
    )
    return {
        "val_loss": float(torch.nn.functional.binary_cross_entropy_with_logits(z, y.double())),
        "val_acc": float((pred == y).double().mean()),
        "val_f1": 2 * tp / (2 * tp + fp + fn),
    }


@pytest.fixture(scope="module")
def trained(gender_corpus, tiny_encoder, tmp_path_factory):
    """A tiny GenderTagger fine-tuned for 3 epochs on the synthetic corpus (no prefix)."""
    L.seed_everything(0)
    dm = data_module(gender_corpus, tiny_encoder, fractions=(0.7, 0.2, 0.1))
    model = GenderMaskedModel(GenderTagger(encoder=tiny_encoder), lr=3e-3, warmup=0.2)
    trainer = L.Trainer(max_epochs=3, devices=1, default_root_dir=tmp_path_factory.mktemp("fit"), **TRAINER)
    trainer.fit(model, dm)
    return model, dm, trainer


def test_validation_metrics_are_computed_at_the_masks_only(trained):
    model, dm, trainer = trained
    got = metrics(trainer)
    assert got == pytest.approx(direct_metrics(model, dm), rel=1e-5)
    assert 0.6 < got["val_acc"] < 1  # learnt from the context of the masks (and not perfect: a real test of F1)
    assert trainer.optimizers[0].__class__ is torch.optim.AdamW
    assert trainer.lr_scheduler_configs[0].scheduler.get_last_lr()[0] == pytest.approx(0.0, abs=1e-4)  # decayed


def test_only_masked_positions_enter_the_loss(trained):
    model, dm, _ = trained
    model.eval()
    batch = next(iter(dm.val_dataloader()))
    with torch.no_grad():
        z, y = model.masked_logits(batch)
        every = model(batch["input_ids"], batch["attention_mask"])
    at_mask = batch["input_ids"] == model.tokenizer.mask_token_id
    assert torch.equal(batch["labels"] != IGNORE, at_mask)
    assert torch.allclose(z, every[at_mask].float()) and torch.equal(y, batch["labels"][at_mask])
    loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y.float())
    assert float(loss) == pytest.approx(
        float(np.mean([np.logaddexp(0, -float(v)) if lab == 1 else np.logaddexp(0, float(v)) for v, lab in zip(z, y)])),
        rel=1e-5,
    )


def test_female_probability_and_the_checkpoint_round_trip(trained, tmp_path):
    model, _, trainer = trained
    texts = ["[MASK] was a child in 1950.", "In 1990, [MASK] is an adult."]
    p = model.female_probability(texts, batch_size=1)
    assert p.shape == (2,) and ((p > 0) & (p < 1)).all()
    ckpt = tmp_path / "m.ckpt"
    trainer.save_checkpoint(ckpt)
    loaded = load_finetuned(str(ckpt))
    assert np.allclose(loaded.female_probability(texts), p, atol=1e-6)
    assert loaded.net.encoder == model.net.encoder and not loaded.training
    with pytest.raises(
        ValueError, match="holds 0 mask tokens in the model.s window of 512 tokens: exactly one is needed"
    ):
        model.female_probability(["no mask here"])
    with pytest.raises(ValueError, match="There are no texts to score"):
        model.female_probability([])


def test_probing_a_fine_tuned_checkpoint_uses_its_binary_head(trained, tmp_path, capsys):
    model, _, trainer = trained
    ckpt = tmp_path / "run" / "version_0" / "checkpoints" / "best.ckpt"
    ckpt.parent.mkdir(parents=True)
    trainer.save_checkpoint(ckpt)
    head = load_probe_model(ckpt)
    assert isinstance(head, BinaryHead)
    result = probe_model(head, [["1850", "1900", "1950", "2000"]], n_boot=50)
    assert result.head == "binary" and "mirrors the female one" in result.notes[0]
    scores = result.scores
    for v in ("top5", "softmax", "softmax_renormalised"):
        assert np.allclose(scores[f"female_{v}"] + scores[f"male_{v}"], 1.0)
    probes = scores["text"].tolist()
    assert np.allclose(scores["female_top5"], model.female_probability(probes))
    row = result.table.iloc[0]
    assert row["variant"] == "binary_head"
    assert row["female_slope"] == pytest.approx(-row["male_slope"]) and row["female_r"] == pytest.approx(-row["male_r"])
    w = tmp_path / "years.txt"
    w.write_text("1850\n1900\n1950\n2000\n", encoding="utf-8")
    out = tmp_path / "out"
    code = gender_main(["probe", "--model", str(ckpt), "--w-file", str(w), "--out", str(out), "--n-boot", "50"])
    assert code == 0, capsys.readouterr().err
    stem = "gender_run-version_0_binary_head"
    assert {f"{stem}_table2.md", f"{stem}_fig2.png", f"{stem}_fig2.svg"} <= {p.name for p in out.iterdir()}
    assert json.loads((out / f"{stem}_summary.json").read_text())["head"] == "binary"
    table = pd.read_csv(out / f"{stem}_table2.csv")
    assert np.allclose(table["female_slope"], -table["male_slope"])


def test_a_checkpoint_of_another_model_is_refused(tmp_path):
    bad = tmp_path / "other.ckpt"
    torch.save({"state_dict": {}, "hyper_parameters": {}}, bad)
    with pytest.raises(ValueError, match="is not a fine-tuned masked-gender model"):
        load_probe_model(bad)


def test_the_encoder_of_the_data_must_be_the_networks(gender_corpus, tiny_encoder, tmp_path):
    dm = data_module(gender_corpus, None)  # masked by the real MiniLM's tokenizer, not the tiny encoder's
    model = GenderMaskedModel(GenderTagger(encoder=tiny_encoder))
    trainer = L.Trainer(fast_dev_run=True, devices=1, default_root_dir=tmp_path, **TRAINER)
    with pytest.raises(
        ValueError, match="The data were masked with the tokenizer of the encoder None, but the network"
    ):
        trainer.fit(model, dm)


def test_bad_arguments_are_one_sentence(tiny_encoder):
    net = GenderTagger(encoder=tiny_encoder)
    with pytest.raises(ValueError, match="'lr' parameter of GenderMaskedModel must be a float > 0"):
        GenderMaskedModel(net, lr=0)
    with pytest.raises(ValueError, match="'warmup' parameter of GenderMaskedModel must be a float >= 0.0 and < 1.0"):
        GenderMaskedModel(net, warmup=1.0)
    with pytest.raises(ValueError, match="'net' parameter of GenderMaskedModel must be a torch nn.Module"):
        GenderMaskedModel("net")
    with pytest.raises(ValueError, match="'dropout' parameter of GenderTagger must be a float"):
        GenderTagger(encoder=tiny_encoder, dropout=1.0)


# ---------------------------------------------------------------------- the CLI path
def test_train_py_fit_runs_the_gender_config_fast_dev_run(gender_corpus, tiny_encoder, tmp_path):
    cli = make_cli(
        fit_args(gender_corpus, tiny_encoder, tmp_path, "finetune_age.yaml", "--trainer.fast_dev_run", "true")
    )
    assert isinstance(cli.datamodule, GenderDataModule) and isinstance(cli.model, GenderMaskedModel)
    assert cli.trainer.state.finished and set(VAL_KEYS) <= set(cli.trainer.callback_metrics)
    assert cli.datamodule.settings.prefix == "age" and cli.datamodule.hparams.seed == 0  # seed_everything's
    assert cli.datamodule.built.prefixes[0].startswith("age: ")
    assert not any(type(c).__name__ == "CausalMetricsCallback" for c in cli.trainer.callbacks)


def test_a_gender_run_checkpoints_and_probes_from_the_cli(gender_corpus, tiny_encoder, tmp_path, capsys):
    from textcause.cli.gender import finetune_main

    code = finetune_main(fit_args(gender_corpus, tiny_encoder, tmp_path, "finetune.yaml", "--seed_everything", "1")[1:])
    assert code == 0
    (ckpt,) = (tmp_path / "lightning_logs" / "version_0" / "checkpoints").glob("best-*.ckpt")
    saved = (tmp_path / "lightning_logs" / "version_0" / "config.yaml").read_text()
    assert "class_path: textcause.gender.GenderDataModule" in saved and "prefix: null" in saved
    w = tmp_path / "years.txt"
    w.write_text("1850\n1950\n2000\n", encoding="utf-8")
    code = gender_main(
        ["probe", "--model", str(ckpt), "--w-file", str(w), "--out", str(tmp_path / "p"), "--n-boot", "20"]
    )
    assert code == 0
    assert "read the female curve" in capsys.readouterr().out


def test_plain_data_options_stay_the_causal_data_module(tiny_corpus):
    cli = make_cli(["--config", str(CONFIGS.parent / "model" / "oracle.yaml"), "--data.corpus", tiny_corpus], run=False)
    assert type(cli.datamodule).__name__ == "CausalTextDataModule" and cli.datamodule.hparams.corpus == tiny_corpus


# ---------------------------------------------------------------------- DDP
def run_validate(model: GenderMaskedModel, dm: GenderDataModule, devices: int, tmp_path: Path) -> dict[str, float]:
    strategy = DDPStrategy(start_method="fork", timeout=timedelta(seconds=60)) if devices > 1 else "auto"
    trainer = L.Trainer(devices=devices, strategy=strategy, default_root_dir=tmp_path / str(devices), **TRAINER)
    trainer.validate(model, dm)
    return metrics(trainer)


def test_ddp_two_processes_give_the_one_process_metrics(trained, tmp_path):
    model, dm, _ = trained
    assert len(dm.built.split.val) % 2 == 1  # an odd split: a padding sampler would repeat an example
    one, two = (run_validate(model, dm, devices, tmp_path) for devices in (1, 2))
    for key in VAL_KEYS:
        assert two[key] == pytest.approx(one[key], rel=1e-6, abs=1e-9), key


def test_ddp_two_processes_train(gender_corpus, tiny_encoder, tmp_path):
    L.seed_everything(0)
    dm = data_module(gender_corpus, tiny_encoder, n_sentences=40)
    model = GenderMaskedModel(GenderTagger(encoder=tiny_encoder))
    strategy = DDPStrategy(start_method="fork", timeout=timedelta(seconds=60))
    trainer = L.Trainer(max_epochs=1, devices=2, strategy=strategy, default_root_dir=tmp_path, **TRAINER)
    trainer.fit(model, dm)
    assert trainer.state.finished and np.isfinite(metrics(trainer)["val_loss"])


def test_a_fine_tune_shorter_than_an_epoch_leaves_a_checkpoint_the_probe_loads(
    gender_corpus, tiny_encoder, tmp_path, capsys
):
    """max_steps below one epoch: validation runs where training stops, so best-*.ckpt exists and probes."""
    from textcause.cli.gender import finetune_main

    args = fit_args(gender_corpus, tiny_encoder, tmp_path, "finetune.yaml", "--trainer.max_steps", "2")[1:]
    assert finetune_main(args) == 0
    (ckpt,) = (tmp_path / "lightning_logs" / "version_0" / "checkpoints").glob("best-*.ckpt")
    state = torch.load(ckpt, map_location="cpu", weights_only=False)
    assert state["global_step"] == 2  # stopped inside the first epoch (8 batches), not at its end
    assert not list(ckpt.parent.glob("final-step=*.ckpt"))  # validated: no unvalidated copy beside it
    w = tmp_path / "years.txt"
    w.write_text("1850\n1950\n2000\n", encoding="utf-8")
    code = gender_main(["probe", "--model", str(ckpt), "--w-file", str(w), "--out", str(tmp_path / "p")])
    assert code == 0, capsys.readouterr().err


def test_a_checkpoint_that_could_never_save_is_refused_before_training(gender_corpus, tiny_encoder, tmp_path, capsys):
    from textcause.cli.gender import finetune_main

    args = fit_args(gender_corpus, tiny_encoder, tmp_path, "finetune.yaml", "--trainer.limit_val_batches", "0")[1:]
    assert finetune_main(args) == 2
    err = capsys.readouterr().err
    assert "The checkpoint watches 'val_loss' but validation is switched off" in err
    assert "Traceback" not in err and not list(tmp_path.rglob("*.ckpt"))


@pytest.mark.parametrize("extra", [("--trainer.min_epochs", "1"), ("--trainer.check_val_every_n_epoch", "2")])
def test_a_fine_tune_whose_settings_skip_validation_still_leaves_a_checkpoint_the_probe_loads(
    gender_corpus, tiny_encoder, tmp_path, capsys, extra
):
    """Settings under which Lightning stops at max_steps without validating: the final weights are
    saved as final-step=N.ckpt (best-*.ckpt would need a validation loss), with a warning, and they probe."""
    from textcause.cli.gender import finetune_main

    args = fit_args(gender_corpus, tiny_encoder, tmp_path, "finetune.yaml", "--trainer.max_steps", "2", *extra)[1:]
    with pytest.warns(UserWarning, match=r"No validation ran before the fine-tune stopped at step 2 .* not validated"):
        assert finetune_main(args) == 0
    folder = tmp_path / "lightning_logs" / "version_0" / "checkpoints"
    assert not list(folder.glob("best-*.ckpt"))
    (ckpt,) = folder.glob("final-step=2.ckpt")
    assert torch.load(ckpt, map_location="cpu", weights_only=False)["global_step"] == 2
    w = tmp_path / "years.txt"
    w.write_text("1850\n1950\n2000\n", encoding="utf-8")
    code = gender_main(["probe", "--model", str(ckpt), "--w-file", str(w), "--out", str(tmp_path / "p")])
    assert code == 0, capsys.readouterr().err


def test_a_save_last_checkpoint_without_validation_is_not_saved_twice(gender_corpus, tiny_encoder, tmp_path):
    """With save_last, ModelCheckpoint leaves last.ckpt itself when no validation ran: no final-step copy."""
    import warnings

    from textcause.cli.gender import finetune_main

    callback = {
        "class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
        "init_args": {"monitor": "val_loss", "save_top_k": 1, "save_last": True},
    }
    args = fit_args(
        gender_corpus,
        tiny_encoder,
        tmp_path,
        "finetune.yaml",
        "--trainer.max_steps",
        "2",
        "--trainer.check_val_every_n_epoch",
        "2",
        "--trainer.callbacks",
        json.dumps([callback]),
    )[1:]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert finetune_main(args) == 0
    assert list(tmp_path.rglob("last.ckpt")) and not list(tmp_path.rglob("final-step=*.ckpt"))
    assert not [w for w in caught if "No validation ran" in str(w.message)]
