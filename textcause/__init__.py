"""textcause: causal inference with text, on semi-synthetic tasks built from real user histories.

Data flows one way: corpus -> simulation -> features -> data -> models -> estimators/metrics
-> experiments. Importing the top-level package is cheap: it does not import torch or Lightning.
"""

__version__ = "0.1.0"
