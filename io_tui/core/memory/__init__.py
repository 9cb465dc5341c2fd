"""Memory as data: long-term notes (``notes.py``), the daily log's lines (``daily_log.py``) and
the ``MEMORY.md`` form both are read and written in (``markdown.py``). Pure: the store keeps
them, the run loop writes them (DESIGN §3.3).
"""
