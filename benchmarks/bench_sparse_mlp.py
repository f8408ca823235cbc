#!/usr/bin/env python
"""The training step of the paper's MLP on sparse n-gram batches, with its first weight row-major and column-major.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_sparse_mlp.py [--config configs/model/nn_bigram_counts.yaml] [--rounds 5]

On the warm features of ``--config`` (default data: Twitter, Linguistic Complexity 2, seed 0; the
config's own batch size, learning rate and weight decay), one process, the same initial weights and
the same training batches (sampled once, each already a torch sparse tensor with its CSR form and
transpose built, so that both variants take torch's gradient kernel) for both variants: the zeroing
of gradients, the forward, the loss, the backward and the Adam step, alternating round by round.

- ``row-major``: the hidden layer's weight as ``nn.Linear`` makes it, as before issue 18's last
  change: every forward copies it into the (in, out) layout of the sparse product, and autograd
  copies every gradient (which the sparse product returns column-major) back into that layout;
- ``column-major``: the weight re-laid by ``MLP.use_sparse_layout`` (what ``PropensityModel`` does
  before an Adam fit), so neither copy happens.

Prints each variant's best and median milliseconds a step, the ratio, and whether the two runs'
weights are identical after every round (they must be: the layout changes no value).
"""

from __future__ import annotations

import argparse
import copy
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--config", default="configs/model/nn_bigram_counts.yaml")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    logging.disable(logging.WARNING)

    from textcause.features.torch_sparse import collate_sparse_rows
    from textcause.models.components.linear import sparse_batch
    from textcause.run.fit import RunSettings, instantiate, run_config

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    settings = RunSettings(configs=(ROOT / args.config,), run_dir=Path(tempfile.mkdtemp()))
    cli = instantiate(run_config(settings))
    data, model = cli.datamodule, cli.model
    data.setup("fit")
    loader = data.train_dataloader()
    features = loader.collate_fn.features
    rng = np.random.default_rng(0)
    batches = [rng.choice(features.shape[0], loader.batch_size, replace=False) for _ in range(args.steps)]
    xs = [collate_sparse_rows(features, b) for b in batches]
    for x in xs:
        sparse_batch(x).transpose()
    t = [torch.from_numpy(rng.integers(0, 2, len(b)).astype(np.float32)) for b in batches]

    row = model.net
    col = copy.deepcopy(row)
    col.use_sparse_layout()
    nets = {"row-major": row, "column-major": col}
    opts = {k: torch.optim.Adam(n.parameters(), lr=model.lr, weight_decay=model.weight_decay) for k, n in nets.items()}
    print(
        f"{args.config}: {features.shape[0]} users x {features.shape[1]} columns, "
        f"batches of {loader.batch_size}, {args.steps} steps a round, "
        f"hidden weight {tuple(row.hidden.weight.shape)}, strides {row.hidden.weight.stride()} "
        f"and {col.hidden.weight.stride()}"
    )

    def steps(name: str) -> float:
        net, opt = nets[name], opts[name]
        start = time.perf_counter()
        for x, y in zip(xs, t):
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(net(x), y)
            loss.backward()
            opt.step()
        return (time.perf_counter() - start) / len(xs) * 1e3

    times: dict[str, list[float]] = {k: [] for k in nets}
    same = []
    for r in range(args.rounds):
        for name in nets if r % 2 == 0 else reversed(list(nets)):
            times[name].append(steps(name))
        same.append(all(torch.equal(a, b) for a, b in zip(row.parameters(), col.parameters())))

    print("\n| variant | best ms a step | median ms a step |\n|---|---|---|")
    for name, v in times.items():
        print(f"| {name} | {min(v):.3f} | {statistics.median(v):.3f} |")
    ratio = min(times["row-major"]) / min(times["column-major"])
    print(f"\ncolumn-major: {ratio:.2f}x the row-major step (best rounds)")
    print(f"identical weights after {sum(same)} of {len(same)} rounds")
    return 0 if all(same) else 1


if __name__ == "__main__":
    raise SystemExit(main())
