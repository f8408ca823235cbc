"""A callback for tests/run/test_resume.py: SIGKILL this process after a given optimizer step."""

import os
import signal

import lightning as L


class KillAtStep(L.Callback):
    def __init__(self, step: int = 5) -> None:
        self.step = step

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if trainer.global_step >= self.step:
            os.kill(os.getpid(), signal.SIGKILL)
