"""Each task family's experiment: runs of a family's models, their rows in the results store.

* :mod:`textcause.experiments.gender`: the masked gender task's selection experiment.
* :mod:`textcause.experiments.cfr`: counterfactual representations (pairs, embeddings, erasure).
* :mod:`textcause.experiments.counterfactual`: ``evaluate.py`` on a SemEval-2020 Task 5 run.
* :mod:`textcause.experiments.observational`: the models of an observational study (``textcause observe``).
"""

__all__: list[str] = []
