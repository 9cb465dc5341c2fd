"""io-tui as an Agent Client Protocol agent (``io-tui acp``): editors and ACP clients (Zed, Toad,
JetBrains, Neovim plugins) drive io-tui's harness over stdio (docs/ACP.md).

A front end like ``ui`` and ``cli``: it takes the core only through its face. ``server`` is the
process (stdio, logging), ``agent`` the protocol's methods, ``session`` a session and its runs,
``updates`` run events as session updates, ``permission`` asks as permission requests,
``editor`` files and commands through the client, ``transport`` the JSON-RPC lines.
"""
