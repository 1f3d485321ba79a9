"""Conversions between levels: FX import, ptensor -> loop, loop -> buffer."""
