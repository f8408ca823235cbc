"""Training-step time of SHERBERT (pooled) and OrderCountNet with torch's dropout and with FastDropout.

One process, the same network weights, batch and optimiser for all; a step is the forward under
bf16 autocast (as ``sherbert_pooled.yaml``'s ``precision: bf16-mixed``), the loss, the backward and
the Adam step on a (32 users, 60 posts, 384) batch, the shape of a Twitter training batch. Three
variants alternate over ``--rounds`` rounds and the best round of each is printed, with the ratios:
``nn.Dropout`` (before issue 18), FastDropout applying a boolean mask (its first version, commit
``d1fc0fa``: the same values, torch's mixed-type multiply) and FastDropout as it is (a 0/1 mask of
the activations' dtype).

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
from textcause.models.components.dropout import MIN_ELEMENTS, FastDropout, fast_dropout_mask


class BoolMaskDropout(FastDropout):
    """FastDropout's first version: the same mask as a boolean tensor (bit-identical outputs)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or x.numel() < MIN_ELEMENTS:
            return super().forward(x)
        keep, p_used = fast_dropout_mask(x.shape, self.p)
        return (x * keep).mul_(1.0 / (1.0 - p_used))


VARIANTS = ("nn.Dropout", "FastDropout, boolean mask", "FastDropout")


def make_step(cls: type, kwargs: dict, variant: str):
    torch.manual_seed(0)
    net = cls(input_dim=384, dropout=0.1, **kwargs)
    if variant == "nn.Dropout":
        net.drop = torch.nn.Dropout(0.1)  # what both networks used before issue 18
    elif variant == "FastDropout, boolean mask":
        net.drop = BoolMaskDropout(0.1)
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
        steps = {v: make_step(cls, kwargs, v) for v in VARIANTS}
        best = dict.fromkeys(VARIANTS, float("inf"))
        for _ in range(args.rounds):
            for variant, step in steps.items():
                for _ in range(3):
                    step()
                t0 = time.perf_counter()
                for _ in range(args.steps):
                    step()
                best[variant] = min(best[variant], (time.perf_counter() - t0) / args.steps * 1e3)
        now = best["FastDropout"]
        print(
            f"{cls.__name__}: best step " + ", ".join(f"{best[v]:.1f} ms with {v}" for v in VARIANTS) + " ("
            f"{best['nn.Dropout'] / now:.2f}x and {best['FastDropout, boolean mask'] / now:.2f}x faster now)",
            flush=True,
        )


if __name__ == "__main__":
    main()
