"""Plain torch ``nn.Module`` propensity networks (no Lightning): features -> logits of shape (batch,).

Each component stores every ``__init__`` argument as an attribute of the same name, so a
LightningModule can record how to rebuild it (see ``textcause.models.propensity.net_config``).
"""

from textcause.models.components.linear import LogisticRegression
from textcause.models.components.mlp import MLP

__all__ = ["LogisticRegression", "MLP"]
