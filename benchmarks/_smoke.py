"""A subset of the smoke grid under another name, for the benchmark scripts (bench_scale, soak)."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def smoke_subset(models: list[str] | None, folder: Path, name: str) -> Path:
    """``configs/benchmark/smoke.yaml`` renamed ``name`` (and cut to ``models``), written into ``folder``."""
    spec = yaml.safe_load((ROOT / "configs" / "benchmark" / "smoke.yaml").read_text(encoding="utf-8"))
    if models:
        spec["models"] = models
        spec["model_overrides"] = {m: v for m, v in spec.get("model_overrides", {}).items() if m in models}
    spec["name"] = name
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path
