"""Hardware model: chip -> NeuronCores -> engines, SBUF, PSUM, DMA, HBM and links, from TOML presets."""

from simcore.hardware.spec import Hardware, load_hardware, preset_names

__all__ = ["Hardware", "load_hardware", "preset_names"]
