"""The `scorewatch demo` building blocks: a shipped dataset of annotated summaries."""

__all__: list[str] = []
