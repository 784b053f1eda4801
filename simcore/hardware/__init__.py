"""Hardware model: chip -> NeuronCores -> engines, SBUF, PSUM, DMA, HBM and links, from TOML presets."""

from simcore.hardware.spec import MATMUL_DTYPES, MX_DTYPES, Hardware, load_hardware, preset_names

__all__ = ["MATMUL_DTYPES", "MX_DTYPES", "Hardware", "load_hardware", "preset_names"]
