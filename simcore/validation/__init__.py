"""Fidelity against public measurements: the dataset, the runner and the report.

`python -m simcore.validation` runs every case of `dataset.toml` (public kernel-, collective-
and microbenchmark-level Trainium measurements, and end-to-end serving figures kept apart as
the out-of-sample check) through `simcore.capture`, compares the simulated figure with the
measured one and writes docs/validation.md. Calibrate only against cases with `fit = true`.
"""

from simcore.validation.dataset import Case, Excluded, load_dataset
from simcore.validation.report import render
from simcore.validation.runner import Result, run_case, run_cases

__all__ = ["Case", "Excluded", "Result", "load_dataset", "render", "run_case", "run_cases"]
