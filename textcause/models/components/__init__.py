"""Plain torch ``nn.Module`` propensity networks (no Lightning): features -> logits of shape (batch,).

Each component stores every ``__init__`` argument as an attribute of the same name, so a
LightningModule can record how to rebuild it (see ``textcause.models.nets.net_config``).

* ``LogisticRegression``, ``MLP``: over n-gram / topic features (sparse or dense).
* ``SHERBERT``: hierarchical attention over frozen-encoder token states and post vectors (Weld et al., E.1).
* ``JointLinear``, ``JointSHERBERT``: a propensity head and two outcome heads (T=0, T=1) on
  n-gram / topic features or on SHERBERT's history vector, for ``textcause.models.JointModel``:
  features -> (batch, 3).
* ``OrderCountNet``: position-aware attention with counting pools, for order and signal intensity.
* ``EncoderClassifier``, ``SpanExtractor``: fine-tuned Hugging Face encoders with a sentence head or
  QA-style start/end span heads (SemEval-2020 Task 5, ``textcause.counterfactual``).
"""

from textcause.models.components.hierarchical import SHERBERT, JointSHERBERT
from textcause.models.components.linear import JointLinear, LogisticRegression
from textcause.models.components.mlp import MLP
from textcause.models.components.order_count import OrderCountNet
from textcause.models.components.text_heads import EncoderClassifier, SpanExtractor

__all__ = [
    "EncoderClassifier",
    "JointLinear",
    "JointSHERBERT",
    "LogisticRegression",
    "MLP",
    "OrderCountNet",
    "SHERBERT",
    "SpanExtractor",
]
