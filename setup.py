"""Packaging beyond setup.cfg: the top-level configs/ folder is installed as package data.

``configs/`` stays where users know it (the top of the checkout) and is installed as
``textcause/configs`` (``package_dir`` maps it), so a regular, non-editable install finds the
trainer, data, model, benchmark and study configs through :func:`textcause.paths.config_dir`.
"""

from pathlib import Path

from setuptools import find_packages, setup

ROOT = Path(__file__).resolve().parent
CONFIG_PACKAGES = ["textcause.configs"] + sorted(
    "textcause.configs." + ".".join(p.relative_to(ROOT / "configs").parts)
    for p in (ROOT / "configs").rglob("*")
    if p.is_dir()
)

setup(
    packages=find_packages(include=["textcause", "textcause.*"]) + CONFIG_PACKAGES,
    package_dir={"textcause.configs": "configs"},
    package_data={
        "textcause": ["simulation/banks/*.yaml", "gender/data/*.yaml", "gender/data/w/*.yaml"],
        **{pkg: ["*.yaml"] for pkg in CONFIG_PACKAGES},
    },
    include_package_data=True,
)
