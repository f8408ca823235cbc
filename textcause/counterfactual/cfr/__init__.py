"""Counterfactual representations (CFRs) and how well they stand in for true counterfactual texts.

Lemberger et al. (2024), "Explaining Text Classifiers with Counterfactual Representations": intervene
on a text's embedding instead of its words, and check against texts whose counterfactual is known.

* :mod:`~textcause.counterfactual.cfr.swap`: the gendered-word swap (a replaceable YAML map, the "her" rule);
* :mod:`~textcause.counterfactual.cfr.pairs`: texts with their true counterfactuals (blog posts swapped
  by rule, EEEC-style templates, a user's CSV);
* :mod:`~textcause.counterfactual.cfr.regression`: the CFR as the authors build it (orthogonal
  erasure, then per target value a regression of the concept coordinate on the erased
  representation, Gaussian noise for the stochastic variant);
* :mod:`~textcause.counterfactual.cfr.erasure`: LEACE and oracle erasure (EleutherAI's
  ``concept-erasure``) and the simpler class-mean / drawn-component CFRs on them;
* :mod:`~textcause.counterfactual.cfr.metrics`: PIP, ATV, the concept's effect, conditional TPR gaps;
* :mod:`~textcause.counterfactual.cfr.evaluate`: :func:`evaluate_cfr`, every intervention beside the
  identity baseline and erasure only;
* :mod:`~textcause.counterfactual.cfr.spec`: the YAML of ``textcause cfr``.

The run (embedding cache, results store) is :mod:`textcause.experiments.cfr`, the files
:mod:`textcause.reports.cfr`, the command :mod:`textcause.cli.cfr`. Importing this package imports
nothing heavy.
"""
