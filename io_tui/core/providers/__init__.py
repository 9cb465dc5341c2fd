"""Model providers: OpenAI-compatible, Anthropic, scripted and replay.

``base`` holds the contract every provider meets. Over HTTP: ``presets`` (named presets and the
factories the CLI calls), ``http_provider`` (connections, retries, attempts), one module per wire
(``openai_compat``, ``anthropic``), ``sse``, ``errors``, ``retry``, ``secret`` and ``fallback``.
Nothing is imported here, so importing ``base`` stays cheap and free of httpx.
"""
