"""Renderers: turn result payloads into text tables, CSV, Parquet and plots."""
