"""``textcause gender probe`` / ``finetune``: the masked gender task's probes and fine-tuning.

    textcause gender probe --model PATH_OR_NAME --w years
    textcause gender probe --model runs/gender/finetune_age/version_0/checkpoints/best-...ckpt --w years
    textcause gender probe --model bert-large-uncased --w years --w countries --w subreddits --allow-download
    textcause gender probe --model PATH --w-file my_values.txt --category place --variant softmax
    textcause gender finetune --config configs/gender/finetune_age.yaml [--trainer.max_epochs 2 ...]
    textcause gender experiment --config configs/gender/selection.yaml [--out runs/gender/selection]

Writes, under ``--out`` (default ``runs/gender/<model>``): table 2 as ``*_table2.md`` and
``*_table2.csv``, the per-probe scores of every variant (``*_scores.csv``), ``*_summary.json``
(the gendered words dropped for this tokenizer and why) and figure 2 as ``*_fig2.png`` / ``.svg``.
Models load from local files only unless ``--allow-download``; a checkpoint without a trained
masked-LM head (a sentence encoder) is refused unless ``--allow-untrained-head``. A fine-tuned
masked-gender checkpoint (``.ckpt``) is scored through its binary head: P(female) at the mask,
P(male) = 1 - P(female), so only the female curve is drawn.

``finetune`` is ``python train.py fit`` (the same LightningCLI, every option of it) for the
masked-gender configs in ``configs/gender/``.

``experiment`` runs the controlled selection-bias experiment (strengths x seeds, one fine-tune
each; :mod:`textcause.experiments.gender`): the results go to ``<out>/results.db`` (table
``gender_selection``; a rerun skips finished units), then the dose-response table
(``selection_dose_response.md`` / ``.csv``) and figure (``selection_dose_response.png`` / ``.svg``)
are written under ``<out>/report`` (what ``textcause report --db <out>/results.db`` writes too).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from textcause.cli.parsing import CommandParser, options, progress_option

__all__ = [
    "build_parser",
    "finetune_main",
    "gender_main",
    "run_probe",
]


def build_parser() -> CommandParser:
    """The ``textcause gender`` arguments."""
    from textcause.gender.probes import builtin_w_lists
    from textcause.gender.scoring import VARIANT_ALIASES, VARIANTS
    from textcause.gender.stats import UNITS

    parser = CommandParser(prog="textcause gender", description=__doc__)
    sub = parser.add_subparsers(dest="action", required=True, metavar="{probe,finetune,experiment}")
    sub.add_parser(
        "finetune",
        help="fine-tune a masked-gender model: python train.py fit with the same options "
        "(--config configs/gender/finetune.yaml)",
        add_help=False,
    )
    experiment = sub.add_parser(
        "experiment",
        help="the controlled selection-bias experiment: fine-tune at each selection strength x seed, "
        "probe P(female | W), write the dose-response table and figure",
    )
    experiment.add_argument("--config", required=True, help="the experiment YAML (configs/gender/selection.yaml)")
    experiment.add_argument(
        "--out", default=None, help="the output folder (default: runs/gender/<experiment name>); results.db is there"
    )
    experiment.add_argument("--db", default=None, help="a results database URL (default: sqlite:///<out>/results.db)")
    experiment.add_argument("--threads", type=int, default=None, help="torch threads (default: the config's)")
    probe = sub.add_parser(
        "probe",
        help="score table 1's probes with a masked LM; write table 2 and figure 2",
        description=__doc__,
    )
    probe.add_argument(
        "--model",
        required=True,
        help="a model folder, a Hugging Face model name, or a fine-tuned masked-gender checkpoint (.ckpt)",
    )
    probe.add_argument(
        "--w",
        action="append",
        default=None,
        metavar="NAME",
        help=f"a built-in W list ({', '.join(builtin_w_lists())}); repeat for several "
        "(default: years unless --w-file is given)",
    )
    probe.add_argument(
        "--w-file",
        action="append",
        default=None,
        metavar="FILE",
        help="a W list file: one value per line, or YAML like the built-in lists; repeatable",
    )
    probe.add_argument(
        "--category",
        default=None,
        help="the template set a --w-file fills (date, place, subreddit; default: date for numbers, place otherwise); "
        "only with --w-file",
    )
    probe.add_argument(
        "--variant",
        default="top5",
        choices=list(VARIANTS) + list(VARIANT_ALIASES),
        help="the score of the table and figure (renormalised = softmax_renormalised; "
        "the scores CSV holds every variant)",
    )
    probe.add_argument("--out", default=None, help="the output folder (default: runs/gender/<model>)")
    probe.add_argument("--batch-size", type=int, default=32, help="probes per forward pass")
    probe.add_argument("--templates", default=None, help="a probe spec YAML (default: the paper's table 1)")
    probe.add_argument("--words", default=None, help="a gendered word YAML (default: the paper's table 3)")
    probe.add_argument(
        "--n-boot",
        type=int,
        default=1000,
        help="replicates of the probe bootstrap (the CSV's *_boot_* columns; 0: none); "
        "the table's intervals and the figure's band are the linear fit's, not the bootstrap's",
    )
    probe.add_argument("--seed", type=int, default=0, help="the bootstrap's seed")
    probe.add_argument(
        "--unit",
        default="probe",
        choices=list(UNITS),
        help="what the probe bootstrap resamples: the probes of each W value, or sentence skeletons",
    )
    probe.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    probe.add_argument(
        "--allow-download", action="store_true", help="let transformers download a model missing from the local cache"
    )
    probe.add_argument(
        "--allow-untrained-head",
        action="store_true",
        help="score a model whose masked-LM head is newly initialised (its numbers are noise)",
    )
    probe.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def run_probe(args: argparse.Namespace) -> list[Path]:
    """Run ``textcause gender probe`` from parsed arguments; returns the files written."""
    from textcause.gender.probes import load_w_list
    from textcause.gender.run import probe_model
    from textcause.reports.gender import file_stem, write_probe_outputs

    if args.batch_size < 1:
        raise ValueError(f"The '--batch-size' option must be an int >= 1. Got {args.batch_size} instead.")
    if args.category is not None and not args.w_file:
        raise ValueError(
            "'--category' sets the template set of --w-file lists only (built-in --w lists have their own): "
            "drop --category, or give the values in a --w-file."
        )
    names = args.w if args.w or args.w_file else ["years"]
    lists = [load_w_list(w) for w in names or []]
    for f in args.w_file or []:
        if not Path(f).expanduser().is_file():
            raise ValueError(f"The W file {f!r} does not exist.")
        lists.append(load_w_list(f, category=args.category))
    if args.threads is not None:
        if args.threads < 1:
            raise ValueError(f"The '--threads' option must be an int >= 1. Got {args.threads} instead.")
        import torch

        torch.set_num_threads(args.threads)
    result = probe_model(
        args.model,
        lists,
        **options(args, "variant", "templates", "words", "batch_size", "n_boot", "seed", "unit", "allow_download"),
        allow_untrained=args.allow_untrained_head,
        progress=progress_option(args),
    )
    out = Path(args.out) if args.out else Path("runs") / "gender" / file_stem(args.model)
    return write_probe_outputs(result, out)


def gender_main(argv: Sequence[str]) -> int:
    """The ``textcause gender`` command; returns the exit code (2: a user's mistake)."""
    argv = list(argv)
    if argv[:1] == ["finetune"]:
        return finetune_main(argv[1:])
    args = build_parser().parse_args(argv)
    from textcause.cli.errors import command

    if args.action == "experiment":
        return command(
            lambda: _experiment(args),
            interrupted="finished units are in the results database; rerun the command to do the rest.",
            offline=True,
        )
    return command(
        lambda: _probe(args),
        interrupted="nothing half-written is left; rerun the command.",
        offline=not args.allow_download,
    )


def run_experiment_command(args: argparse.Namespace) -> dict:
    """Run ``textcause gender experiment`` from parsed arguments; returns the run's and the report's summary."""
    import dataclasses

    from textcause.experiments.gender import run_experiment
    from textcause.gender.selection_spec import load_experiment
    from textcause.reports.gender import write_selection_report
    from textcause.store import default_url

    experiment = load_experiment(args.config)
    if args.threads is not None:
        if args.threads < 1:
            raise ValueError(f"The '--threads' option must be an int >= 1. Got {args.threads} instead.")
        experiment = dataclasses.replace(experiment, spec=dataclasses.replace(experiment.spec, threads=args.threads))
    out = Path(args.out) if args.out else Path("runs") / "gender" / experiment.name
    url = args.db or default_url(out)
    run = run_experiment(experiment, out, db=url, echo=lambda line: print(line, file=sys.stderr, flush=True))
    report = write_selection_report(url, out / "report", experiment=experiment.name)
    return {"run": run, "report": report}


def _experiment(args: argparse.Namespace) -> int:
    from textcause.cli.errors import package_warnings

    with package_warnings():
        result = run_experiment_command(args)
    report = result["report"]
    print(Path(report["markdown"]).read_text(encoding="utf-8"))
    run = result["run"]
    print(
        f"ran {len(run['ran'])} unit(s), skipped {len(run['skipped'])} finished, in {run['seconds']:.0f} s; "
        "wrote " + ", ".join(map(str, report["files"])),
        file=sys.stderr,
    )
    return 0


def _probe(args: argparse.Namespace) -> int:
    from textcause.cli.errors import package_warnings

    with package_warnings():
        files = run_probe(args)
    print(files[0].read_text(encoding="utf-8"))
    print("wrote " + ", ".join(map(str, files)), file=sys.stderr)
    return 0


def finetune_main(argv: Sequence[str]) -> int:
    """``textcause gender finetune OPTIONS``: ``python train.py fit OPTIONS`` (exit code 2: a user's mistake)."""
    from textcause.cli.errors import friendly_errors
    from textcause.cli.parsing import lightning_help_kwargs, rewrite_config_args
    from textcause.run.lightning_cli import make_cli

    args = ["fit", *rewrite_config_args(argv, "textcause gender finetune")]
    return friendly_errors(lambda: make_cli(args, **lightning_help_kwargs()))
