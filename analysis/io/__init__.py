"""Stored runs in: FileStorage folders or MongoDB read as documents (stores.py), then as tidy frames,
cached (load.py); a runs folder as one CSV row per run (`python -m analysis.io.baseline_table`)."""
