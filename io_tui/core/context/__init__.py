"""Assemble each request afresh under its ceiling, and say what it carried and why (DESIGN §3.2).

One number drives a request: its ceiling, in tokens estimated by ``core/tokens.py`` (the run loop
passes it divided by the model's drift factor). From it: one entry may take an eighth
(``entry_cap_chars``), the memory block a quarter, stubs of older
steps an eighth before they collapse into one line, a summary an eighth; compaction starts past
``Compaction.threshold`` of it. The fixed frame (``frame.py``: system prompt, tool schemas,
contract, project instructions) is never elided and is counted beside the ceiling, not inside it.

The ladder, cheapest rung first:

1. supersession (``live.py``): a later call with the same ``Observation.key`` (a read, grep,
   find, listing or command), or a later read covering an earlier read's lines, is the one
   answer; the earlier becomes a stub naming it (a read whose lines an earlier read of the same
   file content shows is one from the start, and so is a rerun that gives the open earlier
   result again, to the character, which stays current), and a step whose every result is such
   a stub (none pending) is left out whole (``Step.dead``, state ``dropped``);
2. staleness (``live.py`` marks, ``correct.py`` corrects): a result made from a file that a
   later write changed, or that the injected ``probe`` finds changed on disk since (``seen``:
   stat, then hash), is corrected by appending: its copy stays where the cached prefix holds
   it (``corrected``), and the same call made again through ``refresh`` follows after the
   newest message, naming the cause (the write, or the tool that ran when the file changed),
   or why it could not be made again;
3. newest-first fit (``fit.py``): what does not fit becomes a stub saying how to get it back
   (``stubs.py``);
4. collapse (``fit.py``): when those stubs pass an eighth of the ceiling, their steps become one
   line;
5. compaction (``compaction.py``, ``summary.py``, ``digest.py``): past the threshold, old steps
   fold into a stored summary;
6. after a server's overflow: a forced fold, then the bounded emergency compaction, then a safe
   stop (``ladder.py``, which names the rung each request reached: ``Assembly.rung``).

Between rewrites the requests of a run only append (``plan.py``): superseded results that are
still current, copies out of date with their corrections after them, and large command outputs
the next step has acted on (aged out: ``live.AGE_STEPS``) stay pending; the
window's floor stays put until it must move (then it moves ahead of the coming steps), the
memory block is the last rewrite's; a request that must change an earlier message anyway (a
cut, a fold, a rebuilt frame) takes every pending rewrite with it, and the pending ones are
made on their own only once their savings pay for the cached prefix they throw away
(``CachePrices``); each rewrite is recorded (``plan.Rewrite``). The newest results are always
carried (``fit.py``). A fresh engine given the same plan sends the same.

Requests are role-tagged messages (``messages.py``), and every step is dropped or kept whole: a
tool result never travels without its call, nor a call without a result. The only I/O is the
injected callbacks. ``engine.py`` holds what lasts between builds, ``build.py`` one build's state.

A run's engine builds every request of the run, and history only grows, so the work per request
follows what changed, not how long the history is: ``live.py`` keeps the live steps classified
as they are appended, with each step's costs, stubs and emitted messages cached for its
classification; ``settled.py`` keeps the oldest steps the last fit carried whole as prefix sums
(whether they all fit again is one comparison) and their messages flat (reused with one slice).
The walks stop early where they can (newest-first, once the window is decided). A fresh engine
with the same plan sends exactly what a reused one sends (``tests/core/test_context_incremental.py``).

This package imports none of its modules: each name is imported from its own module
(``from io_tui.core.context.engine import ContextEngine``), so a caller that needs one small
part, such as the trace's reader, does not load the engine.
"""
