"""LightningModules for propensity scores; the networks themselves live in ``components``.

- :class:`PropensityModel`: trains an injected network (``LogisticRegression``, ``MLP``, ...).
- :class:`TunedLogisticRegression`: a logistic regression whose penalty kind and strength scikit-learn
  fits and the validation log-loss chooses (the LR baselines of the weld grids).
- :class:`JointModel`: a propensity head and two outcome heads (``JointLinear``, ``JointSHERBERT``)
  trained together; its outcome predictions feed AIPW and TMLE.
- :class:`OracleModel`, :class:`UnadjustedModel`: the paper's reference baselines.
- :class:`PredictionCollector`: the per-unit outputs a callback turns into ATEs and metrics.
"""

from textcause.metrics.torch import PredictionCollector
from textcause.models.baselines import OracleModel, UnadjustedModel
from textcause.models.components import MLP, JointLinear, JointSHERBERT, LogisticRegression
from textcause.models.joint import JointModel
from textcause.models.nets import build_net, net_config
from textcause.models.propensity import PropensityModel, PropensityModule
from textcause.models.tuned_lr import TunedLogisticRegression

__all__ = [
    "MLP",
    "JointLinear",
    "JointModel",
    "JointSHERBERT",
    "LogisticRegression",
    "OracleModel",
    "PredictionCollector",
    "PropensityModel",
    "PropensityModule",
    "TunedLogisticRegression",
    "UnadjustedModel",
    "build_net",
    "net_config",
]
