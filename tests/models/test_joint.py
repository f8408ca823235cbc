"""The joint model (a propensity head and two outcome heads) and its networks JointLinear / JointSHERBERT.

The sign test: ``ToyData`` has a known positive effect (P(Y=1) = 0.1 + 0.3 T + 0.4 X_0, so
ATE = +0.3) and confounding through X_0 (which raises both T and Y, so the difference in means is
about +0.57 on the held-out units). A fitted joint linear model's mu1 - mu0, AIPW and TMLE must
recover +0.3 (a model whose heads were read in the wrong order would give about -0.3). Observed here
(torch 2.13 CPU, n = 3000, 1001 held out): mean(mu1 - mu0) 0.33 (mu1 > mu0 for 99% of the units),
AIPW 0.24, TMLE 0.25 (the logistic outcome heads are misspecified for this linear-probability DGP).
The joint hierarchical model has its own data (:class:`HistoryToy`) with the same effect.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import lightning as L
import numpy as np
import pytest
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from torch.utils.data import DataLoader
from toydata import ToyData

from textcause.estimators import aipw, tmle, unadjusted
from textcause.models import JointLinear, JointModel, JointSHERBERT, LogisticRegression
from textcause.models.components import SHERBERT

TRAINER = dict(
    accelerator="cpu",
    logger=False,
    enable_progress_bar=False,
    enable_model_summary=False,
    num_sanity_val_steps=0,
    deterministic=True,
)
D = 8


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/models/conftest.py


class HistoryToy(L.LightningDataModule):
    """Random pooled post vectors (N users, 2-5 posts of width D) with a known effect.

    A user's signal s ~ Bernoulli(0.5), which shifts the first coordinate of every post by +/-2, raises
    the treatment probability and the outcome: P(T=1) = 0.3 + 0.4 s, Y = 1 + 2 T + 1.5 s + noise (``outcome="normal"``) or
    P(Y=1) = 0.1 + 0.3 T + 0.4 s (``"binary"``). Batches hold the whole split when ``batch_size`` is None.
    """

    def __init__(
        self, n: int = 400, n_val: int = 101, outcome: str = "binary", batch_size: int | None = None, seed: int = 0
    ) -> None:
        super().__init__()
        rng = np.random.default_rng(seed)
        n_posts = rng.integers(2, 6, size=n)
        s = (rng.random(n) < 0.5).astype(np.float32)
        self.posts = rng.normal(size=(n, 5, D)).astype(np.float32)
        self.posts[:, :, 0] += 2.0 * (2 * s[:, None] - 1)  # every post shows the signal (attention ignores order)
        self.mask = np.arange(5)[None, :] < n_posts[:, None]
        self.p = (0.3 + 0.4 * s).astype(np.float32)
        self.t = (rng.random(n) < self.p).astype(np.float32)
        if outcome == "normal":
            self.y = (1 + 2 * self.t + 1.5 * s + rng.normal(scale=0.5, size=n)).astype(np.float32)
        else:
            self.y = (rng.random(n) < 0.1 + 0.3 * self.t + 0.4 * s).astype(np.float32)
        self.split = {"train": np.arange(n - n_val), "val": np.arange(n - n_val, n)}
        self.batch_size = batch_size

    def collate(self, idx: list[int]) -> dict:
        i = np.asarray(idx, dtype=np.int64)
        as_t = lambda a: torch.from_numpy(np.asarray(a[i], dtype=np.float32))  # noqa: E731
        x = {"posts": torch.from_numpy(self.posts[i]), "post_mask": torch.from_numpy(self.mask[i])}
        return {"x": x, "t": as_t(self.t), "y": as_t(self.y), "p_true": as_t(self.p), "index": torch.from_numpy(i)}

    def loader(self, split: str) -> DataLoader:
        ids = self.split[split].tolist()
        return DataLoader(ids, batch_size=self.batch_size or len(ids), collate_fn=self.collate)

    def train_dataloader(self) -> DataLoader:
        return self.loader("train")

    def val_dataloader(self) -> DataLoader:
        return self.loader("val")

    def predict_dataloader(self) -> DataLoader:
        return self.loader("val")


def predictions(model: L.LightningModule, dm: L.LightningDataModule) -> dict[str, np.ndarray]:
    out = L.Trainer(**TRAINER).predict(model, dm)
    return {k: torch.cat([b[k] for b in out]).numpy() for k in out[0]}


def lbfgs_linear(dm: ToyData, **kwargs) -> JointModel:
    return JointModel(JointLinear(dm.input_dim), optimizer="lbfgs", lr=1.0, weight_decay=1e-3, **kwargs)


# ---------------------------------------------------------------------- networks
def test_joint_sherbert_shares_sherberts_history_vector():
    torch.manual_seed(0)
    sherbert = SHERBERT(D, 6, use_tokens=True, dropout=0.1).eval()
    joint = JointSHERBERT(D, 6, use_tokens=True, dropout=0.1).eval()
    state = {k: v for k, v in sherbert.state_dict().items() if not k.startswith("out.")}
    assert set(joint.load_state_dict(state, strict=False).missing_keys) == {"out.weight", "out.bias"}
    x = {"posts": torch.randn(3, 4, D), "tokens": torch.randn(3, 4, 5, D), "post_mask": torch.ones(3, 4, dtype=bool)}
    history, attention = sherbert.history(x)
    joint_history, joint_attention = joint.history(x)
    assert history.shape == (3, 6) and torch.equal(history, joint_history)
    assert set(attention) == set(joint_attention) == {"posts", "tokens"}
    torch.testing.assert_close(
        sherbert(x), sherbert.out(history).squeeze(-1), rtol=0, atol=0
    )  # SHERBERT: the same logit
    heads, att = joint(x, return_attention=True)
    assert heads.shape == (3, 3) and torch.equal(att["posts"], attention["posts"])
    torch.testing.assert_close(heads, joint.out(history), rtol=0, atol=0)
    assert set(sherbert.state_dict()) == set(SHERBERT(D, 6).state_dict())  # SHERBERT's checkpoints keep their keys


def test_joint_sherbert_heads_on_a_tiny_bert(tiny_encoder):
    """With the top layer of a tiny random BERT unfrozen: three heads, gradients reach the encoder layer."""
    torch.manual_seed(0)
    net = JointSHERBERT(input_dim=32, hidden_size=8, unfreeze_top=1, encoder=tiny_encoder)
    assert net.data_requirements() == {"representation": "post_tokens", "encoder": tiny_encoder, "encoder_layer": 1}
    tokens = torch.randn(4, 3, 6, 32)
    token_mask = torch.arange(6)[None, None, :] < torch.randint(1, 7, (4, 3, 1))
    x = {"posts": torch.randn(4, 3, 32), "tokens": tokens, "token_mask": token_mask}
    model = JointModel(net)
    batch = {"x": x, "t": torch.tensor([0.0, 1.0, 1.0, 0.0]), "y": torch.tensor([1.0, 0.0, 1.0, 0.0])}
    p, loss = model.propensity_and_loss(batch)
    assert net(x).shape == (4, 3) and p.shape == (4,) and loss.dim() == 0 and torch.isfinite(loss)
    loss.backward()
    grads = [w.grad for w in net.top_layers.parameters()]
    assert all(g is not None for g in grads) and sum(float(g.abs().sum()) for g in grads) > 0
    mu0, mu1 = model.predict_outcomes(batch)
    assert mu0.shape == mu1.shape == (4,) and mu0.dtype == mu1.dtype == torch.float32
    assert bool(((mu0 > 0) & (mu0 < 1) & (mu1 > 0) & (mu1 < 1)).all())


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_joint_linear_sparse_equals_dense_and_its_heads_are_linear(layout):
    torch.manual_seed(0)
    net = JointLinear(6)
    dense = (torch.rand(5, 6) < 0.4).float()
    sparse = dense.to_sparse_coo() if layout == "coo" else dense.to_sparse_csr()
    out = net(sparse)
    assert out.shape == (5, 3) and out.layout == torch.strided
    torch.testing.assert_close(out, net(dense))
    torch.testing.assert_close(out, dense @ net.linear.weight.T + net.linear.bias)
    assert JointLinear(6, bias=False).linear.bias is None


# ---------------------------------------------------------------------- the sign test
def test_the_sign_joint_linear_recovers_a_known_positive_effect(tmp_path):
    L.seed_everything(0)
    dm = ToyData(n=3000, dim=20, n_val=1001, batch_size=100_000, layout="coo")
    model = lbfgs_linear(dm)
    L.Trainer(max_epochs=3, default_root_dir=tmp_path, enable_checkpointing=False, **TRAINER).fit(model, dm)
    out = predictions(model, dm)
    assert set(out) == {"propensity", "index", "t", "y", "p_true", "mu0", "mu1"}
    t, y, p, mu0, mu1 = (out[k].astype(np.float64) for k in ("t", "y", "propensity", "mu0", "mu1"))
    assert out["mu0"].dtype == out["mu1"].dtype == np.float32
    assert mu0.min() > 0 and mu1.max() < 1  # probabilities
    # The outcome heads learned the arms apart: Y(1) is more likely than Y(0) for every kind of unit.
    assert (mu1 - mu0).mean() == pytest.approx(dm.true_ate, abs=0.06)
    assert (mu1 > mu0).mean() > 0.95
    naive = unadjusted(t, y).ate
    for estimate in (aipw(t, y, p, mu0, mu1), tmle(t, y, p, mu0, mu1, outcome="binary")):
        assert estimate.ate == pytest.approx(dm.true_ate, abs=0.08), estimate.method
        assert abs(estimate.ate - dm.true_ate) < abs(naive - dm.true_ate) / 3  # confounding removed
    # The propensity head is the logistic regression on T (it finds feature 0).
    w = model.net.linear.weight.detach()
    assert int(w[0].abs().argmax()) == 0 and float(w[0, 0]) > 1.0


def assert_sherbert_recovers(tmp_path, dm, *, epochs, lr, ate, heads_tol, tol, naive_above, outcome="binary"):
    """Fit a joint SHERBERT on ``dm``: its heads' mean ``mu1 - mu0`` within ``heads_tol`` of ``ate``, AIPW and
    TMLE within ``tol``, and the confounded difference in means above ``naive_above``."""
    model = JointModel(JointSHERBERT(D, 16, use_tokens=False, dropout=0.0), outcome=outcome, lr=lr)
    L.Trainer(max_epochs=epochs, default_root_dir=tmp_path, enable_checkpointing=False, **TRAINER).fit(model, dm)
    out = {k: v.astype(np.float64) for k, v in predictions(model, dm).items()}
    t, y, p, mu0, mu1 = (out[k] for k in ("t", "y", "propensity", "mu0", "mu1"))
    assert (mu1 - mu0).mean() == pytest.approx(ate, abs=heads_tol)
    assert aipw(t, y, p, mu0, mu1).ate == pytest.approx(ate, abs=tol)
    tmle_outcome = "binary" if outcome == "binary" else "continuous"
    assert tmle(t, y, p, mu0, mu1, outcome=tmle_outcome).ate == pytest.approx(ate, abs=tol)
    assert unadjusted(t, y).ate > naive_above  # confounded


def test_the_sign_joint_sherbert_recovers_a_known_positive_effect(tmp_path):
    L.seed_everything(0)
    dm = HistoryToy(n=4000, n_val=1500, batch_size=128)
    # Observed on data seeds 0-3: mu1 - mu0 0.27-0.32, AIPW and TMLE 0.29-0.32, difference in means 0.44-0.46.
    assert_sherbert_recovers(tmp_path, dm, epochs=5, lr=0.01, ate=0.3, heads_tol=0.08, tol=0.08, naive_above=0.4)


# ---------------------------------------------------------------------- the loss
def test_the_outcome_loss_uses_only_the_observed_arms_head():
    torch.manual_seed(0)
    model = JointModel(JointLinear(4))
    x = torch.randn(6, 4)

    def grads(t: list[float], y: list[float]) -> torch.Tensor:
        model.zero_grad()
        _, loss = model.propensity_and_loss({"x": x, "t": torch.tensor(t), "y": torch.tensor(y)})
        loss.backward()
        return model.net.linear.weight.grad.clone()

    control = grads([0.0] * 6, [1, 0, 1, 1, 0, 0])
    assert torch.all(control[2] == 0) and control[1].abs().sum() > 0  # T=0 units: no gradient for the T=1 head
    treated = grads([1.0] * 6, [1, 0, 1, 1, 0, 0])
    assert torch.all(treated[1] == 0) and treated[2].abs().sum() > 0
    # In a mixed batch, the T=0 units' outcomes do not move the T=1 head, and vice versa.
    t = [0.0, 1.0, 0.0, 1.0, 1.0, 0.0]
    a, b = grads(t, [1, 1, 1, 0, 1, 1]), grads(t, [0, 1, 0, 0, 1, 0])
    assert torch.equal(a[2], b[2]) and not torch.equal(a[1], b[1])
    # The value: propensity_weight * BCE(T) + outcome_weight * BCE of the observed arm's head, one mean over the batch.
    model = JointModel(JointLinear(4), propensity_weight=0.1, outcome_weight=2.0)
    batch = {"x": x, "t": torch.tensor(t), "y": torch.tensor([1.0, 1.0, 1.0, 0.0, 1.0, 1.0])}
    heads = model(x)
    _, loss = model.propensity_and_loss(batch)
    bce = torch.nn.functional.binary_cross_entropy_with_logits
    observed = torch.stack([heads[i, 1 + int(ti)] for i, ti in enumerate(t)])
    expected = 0.1 * bce(heads[:, 0], batch["t"]) + 2.0 * bce(observed, batch["y"])
    torch.testing.assert_close(loss, expected)


def test_a_continuous_outcome_has_linear_heads_and_squared_error(tmp_path):
    L.seed_everything(0)
    torch.manual_seed(0)
    model = JointModel(JointLinear(3), outcome="normal")
    x, t, y = torch.randn(5, 3), torch.tensor([0.0, 1.0, 1.0, 0.0, 1.0]), torch.tensor([2.5, -1.0, 7.0, 0.3, 4.0])
    heads = model(x)
    _, loss = model.propensity_and_loss({"x": x, "t": t, "y": y})
    observed = torch.where(t > 0.5, heads[:, 2], heads[:, 1])
    bce = torch.nn.functional.binary_cross_entropy_with_logits(heads[:, 0], t)
    torch.testing.assert_close(loss, bce + ((observed - y) ** 2).mean())
    mu0, mu1 = model.predict_outcomes({"x": x})
    torch.testing.assert_close(mu0, heads[:, 1].detach())
    torch.testing.assert_close(mu1, heads[:, 2].detach())
    # Fitted: Y = 1 + 2 T + 1.5 s + noise, so mu1 - mu0 = 2 for every user; AIPW and TMLE find +2.
    dm = HistoryToy(n=2000, n_val=600, outcome="normal", batch_size=64)
    # Observed on data seeds 0-2: mu1 - mu0 1.87-2.13, AIPW and TMLE 1.97-2.07, difference in means 2.54-2.73.
    assert_sherbert_recovers(
        tmp_path, dm, epochs=10, lr=0.05, ate=2.0, heads_tol=0.25, tol=0.15, naive_above=2.4, outcome="normal"
    )


# ---------------------------------------------------------------------- checkpoints
@pytest.mark.parametrize("kind", ["linear", "sherbert"])
def test_checkpoint_round_trip_without_arguments(tmp_path, kind):
    L.seed_everything(0)
    if kind == "linear":
        dm = ToyData(n=300, batch_size=100_000)
        model = lbfgs_linear(dm, outcome="binary", propensity_weight=0.5)
    else:
        dm = HistoryToy(n=200, n_val=51, outcome="normal", batch_size=32)
        model = JointModel(JointSHERBERT(D, 6, use_tokens=False), outcome="normal", outcome_weight=2.0, lr=0.01)
    ckpt = ModelCheckpoint(dirpath=tmp_path, filename="last")
    L.Trainer(max_epochs=2, default_root_dir=tmp_path, callbacks=[ckpt], **TRAINER).fit(model, dm)
    before = predictions(model, dm)
    loaded = JointModel.load_from_checkpoint(tmp_path / "last.ckpt")
    assert type(loaded.net) is type(model.net)
    assert (loaded.outcome, loaded.propensity_weight, loaded.outcome_weight) == (
        model.outcome,
        model.propensity_weight,
        model.outcome_weight,
    )
    after = predictions(loaded, dm)
    assert set(after) == set(before) >= {"propensity", "mu0", "mu1"}
    for key in before:
        np.testing.assert_array_equal(after[key], before[key], err_msg=key)


# ---------------------------------------------------------------------- DDP
def fit(model: JointModel, dm: L.LightningDataModule, root, ddp: bool, epochs: int) -> float:
    from lightning.pytorch.strategies import DDPStrategy

    strategy = (
        DDPStrategy(
            start_method="fork",
            process_group_backend="gloo",
            find_unused_parameters=True,
            timeout=timedelta(seconds=60),
        )
        if ddp
        else "auto"
    )
    trainer = L.Trainer(
        max_epochs=epochs,
        devices=2 if ddp else 1,
        strategy=strategy,
        default_root_dir=root,
        enable_checkpointing=False,
        **TRAINER,
    )
    trainer.fit(model, dm)
    return float(trainer.callback_metrics["val_loss"])


@pytest.mark.slow  # two forked process groups: about 10 s
@pytest.mark.parametrize("kind", ["linear_lbfgs", "sherbert_adam"])
def test_ddp_gives_the_one_process_model(tmp_path, kind):
    """Full batch, no dropout, equal shards (Lightning's sampler would repeat a unit of an odd split):
    two forked gloo ranks train the model of one process. L-BFGS steers by
    the loss value, which every rank sees averaged over ranks; the outcome loss is one mean over
    the batch, so the mean over equal shards is the one-process loss."""

    def build() -> tuple[JointModel, L.LightningDataModule]:
        L.seed_everything(0)
        if kind == "linear_lbfgs":
            # A penalty at which one L-BFGS step reaches the optimum. With weaker ones (0.02 here) L-BFGS
            # stops once the float32 loss stops changing, short of the optimum and at a point that
            # depends on the summation order (about 3e-4 apart in propensity, one process or two).
            dm = ToyData(n=300, dim=20, n_val=100, batch_size=100_000, layout="csr")
            return JointModel(JointLinear(dm.input_dim), optimizer="lbfgs", lr=1.0, weight_decay=0.1), dm
        dm = HistoryToy(n=300, n_val=100, batch_size=None)
        return JointModel(JointSHERBERT(D, 8, use_tokens=False, dropout=0.0), lr=0.01), dm

    epochs = 1 if kind == "linear_lbfgs" else 3  # one L-BFGS step: 50 iterations (as tests/models/test_ddp.py)
    one, dm = build()
    loss_one = fit(one, dm, tmp_path / "one", ddp=False, epochs=epochs)
    two, dm = build()
    loss_two = fit(two, dm, tmp_path / "two", ddp=True, epochs=epochs)
    assert loss_two == pytest.approx(loss_one, rel=1e-4)
    a, b = predictions(one, dm), predictions(two, dm)  # rank 0's weights came back to this process
    # one L-BFGS step stops once the float32 loss stops changing: 1.5e-4 apart in propensity at most
    # on an Intel host (tests/models/test_ddp.py)
    rtol = 1e-3 if kind == "linear_lbfgs" else 1e-4
    for key in ("propensity", "mu0", "mu1"):
        np.testing.assert_allclose(b[key], a[key], rtol=rtol, atol=1e-6, err_msg=key)
    assert not np.allclose(a["mu0"], a["mu1"])  # the heads were trained apart


# ---------------------------------------------------------------------- the shipped configs
@pytest.mark.parametrize("config", ["joint_lr_bigram_binary.yaml", "joint_pooled.yaml"])
def test_the_joint_configs_train_and_give_doubly_robust_rows(tiny_corpus, tiny_encoder, tmp_path, config):
    """``configs/joint_*.yaml`` through the one run path (LightningCLI, checkpoint, test split):
    the outcome predictions reach the evaluation, which reports AIPW and TMLE beside IPW."""
    from textcause.estimators import OUTCOME_ESTIMATORS, PROPENSITY_ESTIMATORS
    from textcause.run.fit import EvaluationSettings, RunSettings, fit_and_evaluate

    root = Path(__file__).resolve().parents[2] / "configs" / "model"
    overrides = {"data.corpus": tiny_corpus, "data.min_users": 3, "trainer.max_epochs": 1}
    if config == "joint_pooled.yaml":
        overrides |= {
            "data.encoder": tiny_encoder,
            "data.max_tokens": 16,
            "model.init_args.net.init_args.hidden_size": 16,
        }
    evaluation = EvaluationSettings(n_boot=20, estimators=PROPENSITY_ESTIMATORS + OUTCOME_ESTIMATORS)
    run = fit_and_evaluate(
        RunSettings((root / config,), overrides, run_dir=tmp_path, evaluation=evaluation, quiet=True)
    )
    rows = {r["estimator"]: r for r in run.rows}
    assert {"unadjusted", "ipw", "aipw", "tmle"} <= set(rows)
    for name in ("aipw", "tmle"):
        assert np.isfinite(rows[name]["ate"]) and rows[name]["ci_low"] <= rows[name]["ate"] <= rows[name]["ci_high"]
    loaded = JointModel.load_from_checkpoint(run.checkpoint)
    assert type(loaded.net) is (JointLinear if "lr" in config else JointSHERBERT)


# ---------------------------------------------------------------------- errors
def test_joint_model_errors():
    with pytest.raises(
        ValueError, match="The 'outcome' parameter of JointModel must be one of \\['binary', 'normal'\\]"
    ):
        JointModel(JointLinear(3), outcome="poisson")
    with pytest.raises(
        ValueError, match="The 'propensity_weight' parameter of JointModel must be a float > 0.0. Got 0"
    ):
        JointModel(JointLinear(3), propensity_weight=0)
    with pytest.raises(ValueError, match="The 'outcome_weight' parameter of JointModel must be a float > 0.0"):
        JointModel(JointLinear(3), outcome_weight=-1.0)
    with pytest.raises(ValueError, match="The 'optimizer' parameter of JointModel must be one of"):
        JointModel(JointLinear(3), optimizer="sgd")
    with pytest.raises(ValueError, match="The 'net' parameter of JointModel must be a torch nn.Module"):
        JointModel("JointLinear")
    x = torch.randn(4, 3)
    with pytest.raises(
        ValueError, match="JointModel needs a net that returns heads of shape \\(batch, 3\\).*Got \\(4,\\)"
    ):
        JointModel(LogisticRegression(3))(x)
    model = JointModel(JointLinear(3))
    with pytest.raises(ValueError, match="outcome='binary' needs outcomes in \\[0, 1\\]. Got values in \\[0, 2.5\\]"):
        model.propensity_and_loss({"x": x, "t": torch.tensor([0.0, 1, 0, 1]), "y": torch.tensor([0.0, 2.5, 1, 0])})
    model.propensity_and_loss({"x": x, "t": torch.tensor([0.0, 1, 0, 1]), "y": torch.tensor([0.0, 0.5, 1, 0.25])})


def test_joint_network_errors(tiny_encoder):
    with pytest.raises(ValueError, match="The 'input_dim' parameter of JointLinear must be an int >= 1. Got 0"):
        JointLinear(0)
    with pytest.raises(ValueError, match="Expected features of shape \\(batch, 3\\)"):
        JointLinear(3)(torch.randn(2, 4))
    with pytest.raises(ValueError, match="The 'hidden_size' parameter of JointSHERBERT must be an int >= 1"):
        JointSHERBERT(D, 0)
    with pytest.raises(ValueError, match="The 'unfreeze_top' parameter of JointSHERBERT needs use_tokens=True"):
        JointSHERBERT(32, unfreeze_top=1, use_tokens=False, encoder=tiny_encoder)
    with pytest.raises(ValueError, match="JointSHERBERT expects a dict with a 'posts' tensor"):
        JointSHERBERT(D, 4)(torch.randn(2, 3, D))
    with pytest.raises(ValueError, match="JointSHERBERT with unfreeze_top > 0 needs token states"):
        JointSHERBERT(32, 4, unfreeze_top=1, encoder=tiny_encoder)({"posts": torch.randn(2, 3, 32)})


@pytest.mark.parametrize("model_outcome, data_kind", [("normal", "binary"), ("binary", "continuous")])
def test_the_model_refuses_data_of_the_other_outcome_kind(model_outcome, data_kind):
    model = JointModel(JointLinear(3), outcome=model_outcome)

    class Data:
        outcome_kind = data_kind

    class Trainer:
        datamodule = Data()

    model._trainer = Trainer()
    with pytest.raises(ValueError, match=f"outcome={model_outcome!r} but the data's outcome is {data_kind}"):
        model.setup("fit")
    Data.outcome_kind = {"normal": "continuous", "binary": "binary"}[model_outcome]
    model.setup("fit")  # the matching kind passes
