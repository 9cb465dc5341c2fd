"""Model providers: OpenAI-compatible, Anthropic, scripted and replay."""
