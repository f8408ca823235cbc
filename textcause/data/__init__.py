"""LightningDataModules wiring corpus + simulation + features to DataLoaders."""

from textcause.data.datamodule import CausalTextDataModule

__all__ = ["CausalTextDataModule"]
