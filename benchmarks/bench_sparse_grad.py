#!/usr/bin/env python
"""The sparse first layer's products on real n-gram batches: SciPy's kernels with one thread against the transpose and torch's.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_sparse_grad.py [--rounds 5] [--steps 200] [--evals 30]

On the warm Twitter features of Linguistic Complexity 2, seed 0 (one process, one torch thread: a
grid worker's setting), two workloads, each from the same initial weights on the same batches for
both variants, alternating round by round (the first round left out):

- ``mlp``: the paper's MLP (hidden size 10, column-major first weight, Adam with
  ``configs/model/nn_bigram_counts.yaml``'s learning rate and weight decay) on 1,2-gram counts (maxabs),
  ``--steps`` training steps on batches of 64 users: collating the batch from the feature matrix,
  the forward, the loss, the backward and the Adam step;
- ``lr``: a logistic regression on 1,2-gram binary features, one full batch of every training user
  collated, then ``--evals`` evaluations of the loss and its gradient on it (what each L-BFGS line
  search step does), with a small gradient step between them.

Variants:

- ``before``: the batch collated as COO (converted to CSR by the layer), its transpose built on the
  first product with a gradient, both products by torch's CSR kernel (the code before this change);
- ``now``: the batch collated as CSR; with one thread SciPy computes the gradient of a batch's first
  backward (``x.T @ grad`` with ``x.T`` as CSC: no transpose) and both products of a one-output layer,
  where the probe (``scipy_agrees``, printed) finds SciPy's kernels giving torch's bits on this
  machine; elsewhere (an Intel Xeon) torch's kernels, and only the CSR collation differs.

Prints each variant's best and median milliseconds a step (mlp) or an evaluation (lr, the full
batch's collation spread over its evaluations), the ratios, and whether the weights (mlp) and the
gradients (lr) are bit-identical between the variants after every round (the script exits 1
otherwise).
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from textcause.models.components import linear


class BeforeSparseLinear(torch.autograd.Function):
    """The product as it was: torch's CSR kernel, the gradient through the batch's transpose."""

    @staticmethod
    def forward(ctx, csr, transposed, weight):
        ctx.transposed = transposed
        with torch.autocast(device_type="cpu", enabled=False):
            return linear._product(csr, weight.float().t())

    @staticmethod
    def backward(ctx, grad):
        with torch.autocast(device_type="cpu", enabled=False):
            return None, None, linear._product(ctx.transposed, grad.float()).t()


def before_sparse_matmul(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    cached = getattr(x, "_bench_before", None)
    if cached is None:
        cached = x._bench_before = [linear._as_csr(x), None]
    if cached[1] is None and weight.requires_grad and torch.is_grad_enabled():  # also when an earlier call had none
        cached[1] = linear._transpose(cached[0])
    return BeforeSparseLinear.apply(cached[0], cached[1], weight)


NOW = linear.sparse_matmul
LAYOUT = {"before": "coo", "now": "csr"}


def use(variant: str) -> None:
    linear.sparse_matmul = before_sparse_matmul if variant == "before" else NOW


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--evals", type=int, default=30)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    logging.disable(logging.WARNING)
    warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))

    from textcause.data.build import DataSettings, build_data
    from textcause.features.torch_sparse import collate_sparse_rows
    from textcause.models.components import MLP, LogisticRegression

    counts = build_data(DataSettings(level=2, seed=0, representation="bigram_counts", scale="maxabs"))
    binary = build_data(DataSettings(level=2, seed=0, representation="bigram_binary"))
    train = np.array(counts.task.split["train"])  # a writable copy (the split is read-only)
    rng = np.random.default_rng(0)
    batches = [rng.choice(train, 64, replace=False) for _ in range(args.steps)]
    labels = torch.from_numpy(counts.task.treatment.astype(np.float32))
    print(
        f"torch threads {torch.get_num_threads()}; mlp: {counts.features.shape[1]} columns, {args.steps} batches of 64 "
        f"({counts.features[batches[0]].nnz} non-zeros in the first); lr: {len(train)} users x "
        f"{binary.features.shape[1]} columns ({binary.features[train].nnz} non-zeros), {args.evals} evaluations"
    )
    if torch.get_num_threads() == 1:  # which products SciPy may take on this machine (the probe's verdicts)
        verdicts = {
            f"{p} x{o}": linear.scipy_agrees(p, o) for p, o in (("forward", 1), ("gradient", 1), ("gradient", 10))
        }
        print(f"SciPy's kernels give torch's bits (scipy_agrees): {verdicts}")

    torch.manual_seed(0)
    mlp0 = MLP(input_dim=counts.features.shape[1], hidden_size=10)
    mlp0.use_sparse_layout()
    lr0 = LogisticRegression(input_dim=binary.features.shape[1])

    def run_mlp(variant: str) -> tuple[float, list[torch.Tensor]]:
        use(variant)
        net = MLP(input_dim=counts.features.shape[1], hidden_size=10)
        net.use_sparse_layout()
        net.load_state_dict(mlp0.state_dict())
        opt = torch.optim.Adam(net.parameters(), lr=0.01, weight_decay=0.01)
        start = time.perf_counter()
        for b in batches:
            x = collate_sparse_rows(counts.features, b, layout=LAYOUT[variant])
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.binary_cross_entropy_with_logits(net(x), labels[b]).backward()
            opt.step()
        return (time.perf_counter() - start) / len(batches) * 1e3, [p.detach().clone() for p in net.parameters()]

    def run_lr(variant: str) -> tuple[float, list[torch.Tensor]]:
        use(variant)
        net = LogisticRegression(input_dim=binary.features.shape[1])
        net.load_state_dict(lr0.state_dict())
        grads = []
        start = time.perf_counter()
        x = collate_sparse_rows(binary.features, train, layout=LAYOUT[variant])
        y = labels[train]
        for _ in range(args.evals):
            net.zero_grad(set_to_none=True)
            torch.nn.functional.binary_cross_entropy_with_logits(net(x), y).backward()
            grads.append(net.linear.weight.grad.clone())
            with torch.no_grad():
                for p in net.parameters():
                    p -= 0.5 * p.grad
        return (time.perf_counter() - start) / args.evals * 1e3, grads

    ok = True
    for name, fn in (("mlp", run_mlp), ("lr", run_lr)):
        times: dict[str, list[float]] = {"before": [], "now": []}
        same = []
        for r in range(args.rounds + 1):
            out = {}
            for variant in ("before", "now") if r % 2 == 0 else ("now", "before"):
                ms, out[variant] = fn(variant)
                if r:
                    times[variant].append(ms)
            same.append(all(torch.equal(a, b) for a, b in zip(out["before"], out["now"])))
        unit = "a step" if name == "mlp" else "an evaluation"
        print(f"\n{name}\n| variant | best ms {unit} | median ms {unit} |\n|---|---|---|")
        for variant, v in times.items():
            print(f"| {variant} | {min(v):.3f} | {statistics.median(v):.3f} |")
        best = min(times["before"]) / min(times["now"])
        med = statistics.median(times["before"]) / statistics.median(times["now"])
        print(f"now: {best:.2f}x the step before (best rounds), {med:.2f}x (medians)")
        print(f"identical {'weights' if name == 'mlp' else 'gradients'} in {sum(same)} of {len(same)} rounds")
        ok = ok and all(same)
    use("now")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
