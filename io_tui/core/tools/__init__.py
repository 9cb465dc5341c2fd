"""Built-in tools: one small module each, gathered by the registry."""
