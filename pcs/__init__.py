"""pcs: the prefix-cache replay engine.

Four views, each a command and a Python API: capacity budget
(:func:`budget`), KV footprint (:func:`footprint`), bandwidth envelope
(:func:`envelope`) and cache replay (:func:`replay`, :func:`curve`).
Units: bytes as int, bandwidth in bytes/s, times in seconds; GB decimal.
"""
__version__ = "0.1.0"
