"""Command-line interface of pcs (click). The only package that prints."""
