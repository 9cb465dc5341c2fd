"""One run: the loop and everything it calls to take a step.

``loop.py`` is the loop (assemble → ask → gate each call → record → commit; resume; child
runs), ``state.py`` one run's mutable state, ``model_turn.py`` the request path, ``calls.py``
one tool call, ``ask.py`` the one ask of a tool call or a server's request (policy, approver,
first decision wins, remembered rule), ``server_asks.py`` an MCP server's requests during a
call, ``harness.py`` what a run is given, ``rebuild.py`` the derived parts checked before each
request, ``sub_agents.py`` a ``spawn_agent`` call's child, ``reconcile.py`` calls in flight at
a crash, ``outcome.py`` how a run ended, ``log_entry.py`` its line in the daily log. Starting
one: ``settings.py`` (what a run is built from), ``request.py`` (a new-run request as data),
``launch.py`` (request → contract, provider, policy), ``origin.py`` (what a run records at its
start and rebuilds on resume).
"""
