""" "What if": one recorded request of a run, sent again with its context changed, the answer
shown beside the recorded one; nothing it proposes is executed.

``edits`` changes the recorded messages (an entry restored, dropped or edited, the memory block
replaced); ``probe`` sends them (to the run's provider or another), stores each probe with the
run, and sends batches that count how often the first proposed call differs.
"""
