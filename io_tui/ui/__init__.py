"""The Textual app: the only package that imports Textual (DESIGN §1, §5)."""
