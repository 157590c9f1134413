"""Analysis of stored runs (reads results only; never imports architectures/). Planned: issue 6."""
