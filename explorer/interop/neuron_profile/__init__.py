"""Neuron Explorer profiles (directories of `<Table>.parquet`, schema 7.x): import into a trnx trace."""

from explorer.interop.neuron_profile.importer import NeuronImportReport, import_neuron_profile
from explorer.interop.neuron_profile.reader import looks_like_profile, read_profile
from explorer.interop.neuron_profile.schema import SCHEMA_VERSION

__all__ = ["NeuronImportReport", "SCHEMA_VERSION", "import_neuron_profile", "looks_like_profile", "read_profile"]
