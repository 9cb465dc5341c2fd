"""Model providers: OpenAI-compatible, Anthropic, scripted and replay.

``messages`` holds the conversation's messages and tool calls; ``base`` the contract every
provider meets, and ``ProviderConfigError``. ``factory`` builds a
provider from settings or from a run's record: the one place that dispatches on a provider's kind.
Over HTTP: ``presets`` (named presets, what builds them, the model probe), ``credentials``,
``http_provider`` (connections, retries, attempts), one module per wire (``openai_compat``,
``anthropic``), ``sse``, ``errors``, ``retry``, ``secret`` and ``fallback``. Nothing is imported
here, so importing ``messages`` or ``base`` stays cheap and free of httpx.
"""
