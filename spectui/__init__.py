"""spectui: speculative decoding, made visible."""

__version__ = "0.1.0"
