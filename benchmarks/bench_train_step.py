"""Training-step time of SHERBERT (pooled) and OrderCountNet with torch's dropout and with FastDropout.

One process, the same network weights, batch and optimiser for both; a step is the forward under
bf16 autocast (as ``sherbert_pooled.yaml``'s ``precision: bf16-mixed``), the loss, the backward and
the Adam step on a (32 users, 60 posts, 384) batch, the shape of a Twitter training batch. The two
variants alternate over ``--rounds`` rounds and the best round of each is printed, with the ratio.

    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/bench_train_step.py [--rounds 4] [--steps 20]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textcause.models.components import SHERBERT, OrderCountNet


def make_step(cls: type, kwargs: dict, fast: bool):
    torch.manual_seed(0)
    net = cls(input_dim=384, dropout=0.1, **kwargs)
    if not fast:
        net.drop = torch.nn.Dropout(0.1)  # what both networks used before issue 18
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, weight_decay=1e-4)
    x = {"posts": torch.randn(32, 60, 384), "post_mask": torch.ones(32, 60, dtype=torch.bool)}
    y = torch.randint(0, 2, (32,)).float()

    def step() -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logit = net(x)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(logit.float(), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    nets = (
        (SHERBERT, {"hidden_size": 1000, "use_tokens": False}),
        (OrderCountNet, {"hidden_size": 128, "use_tokens": False}),
    )
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    for cls, kwargs in nets:
        steps = {fast: make_step(cls, kwargs, fast) for fast in (False, True)}
        best = {False: float("inf"), True: float("inf")}
        for _ in range(args.rounds):
            for fast, step in steps.items():
                for _ in range(3):
                    step()
                t0 = time.perf_counter()
                for _ in range(args.steps):
                    step()
                best[fast] = min(best[fast], (time.perf_counter() - t0) / args.steps * 1e3)
        print(
            f"{cls.__name__}: best step {best[False]:.1f} ms with nn.Dropout, {best[True]:.1f} ms with "
            f"FastDropout ({best[False] / best[True]:.2f}x)",
            flush=True,
        )


if __name__ == "__main__":
    main()
