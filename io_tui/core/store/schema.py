"""The store's schema as forward-only migrations, versioned with ``PRAGMA user_version`` in a
SQLite file and the ``io_tui_schema`` table in a PostgreSQL database (the same numbers).

Append a migration to ``MIGRATIONS`` to change the schema; never edit one that has shipped.
They are written in SQLite's SQL; ``postgresql()`` maps their types for PostgreSQL.
"""

from __future__ import annotations

import re

MIGRATIONS: tuple[str, ...] = (
    # 1: runs, steps, observations, requests, events, approvals, rules, memory, summaries
    """
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        goal TEXT NOT NULL,
        workspace TEXT NOT NULL,
        status TEXT NOT NULL,
        outcome TEXT,
        parent_run_id INTEGER REFERENCES runs(id),
        seed_run_id INTEGER REFERENCES runs(id),
        contract TEXT NOT NULL,
        provider TEXT NOT NULL,
        policy TEXT NOT NULL,
        steps INTEGER NOT NULL DEFAULT 0,
        tokens INTEGER NOT NULL DEFAULT 0,
        error TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        finished_at REAL
    );
    CREATE INDEX runs_parent ON runs(parent_run_id);
    CREATE TABLE steps (
        run_id INTEGER NOT NULL REFERENCES runs(id),
        step INTEGER NOT NULL,
        text TEXT NOT NULL DEFAULT '',
        tool_calls TEXT NOT NULL DEFAULT '[]',
        decision TEXT NOT NULL DEFAULT '{}',
        result TEXT NOT NULL DEFAULT '',
        tokens INTEGER NOT NULL DEFAULT 0,
        operator_messages TEXT NOT NULL DEFAULT '[]',
        created_at REAL NOT NULL,
        PRIMARY KEY (run_id, step)
    );
    CREATE TABLE observations (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id),
        step INTEGER NOT NULL,
        call_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        kind TEXT NOT NULL,
        target TEXT NOT NULL,
        span TEXT NOT NULL DEFAULT '',
        text TEXT NOT NULL,
        full_text TEXT NOT NULL,
        is_error INTEGER NOT NULL DEFAULT 0,
        UNIQUE (run_id, call_id)
    );
    CREATE INDEX observations_run ON observations(run_id, step);
    CREATE TABLE requests (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id),
        step INTEGER NOT NULL,
        attempt INTEGER NOT NULL,
        purpose TEXT NOT NULL DEFAULT 'work',
        ceiling_tokens INTEGER NOT NULL,
        est_tokens INTEGER NOT NULL,
        frame_tokens INTEGER NOT NULL DEFAULT 0,
        reported_tokens INTEGER,
        usage TEXT,
        messages TEXT NOT NULL,
        manifest TEXT NOT NULL,
        attempts TEXT NOT NULL DEFAULT '[]',
        provider TEXT NOT NULL DEFAULT '',
        model TEXT NOT NULL DEFAULT '',
        error TEXT,
        created_at REAL NOT NULL
    );
    CREATE INDEX requests_run ON requests(run_id, step, attempt);
    CREATE TABLE events (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL,
        step INTEGER NOT NULL,
        kind TEXT NOT NULL,
        detail TEXT NOT NULL,
        at REAL NOT NULL
    );
    CREATE INDEX events_run ON events(run_id, id);
    CREATE TABLE approvals (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id),
        step INTEGER NOT NULL,
        call_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        arguments TEXT NOT NULL,
        act TEXT NOT NULL,
        target TEXT NOT NULL,
        content TEXT NOT NULL,
        rule TEXT NOT NULL,
        layer TEXT NOT NULL,
        workspace TEXT NOT NULL,
        status TEXT NOT NULL DEFAULT 'pending',
        decision TEXT,
        performed TEXT,
        created_at REAL NOT NULL,
        decided_at REAL
    );
    CREATE INDEX approvals_pending ON approvals(status, id);
    CREATE TABLE rules (
        id INTEGER PRIMARY KEY,
        act TEXT NOT NULL,
        effect TEXT NOT NULL,
        pattern TEXT NOT NULL,
        scope TEXT NOT NULL,
        workspace TEXT,
        run_id INTEGER,
        approval_id INTEGER,
        created_at REAL NOT NULL,
        revoked_at REAL
    );
    CREATE TABLE memory (
        id INTEGER PRIMARY KEY,
        scope TEXT NOT NULL,
        workspace TEXT NOT NULL DEFAULT '',
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        run_id INTEGER,
        step INTEGER,
        written_at REAL NOT NULL,
        pinned INTEGER NOT NULL DEFAULT 0,
        recalls INTEGER NOT NULL DEFAULT 0,
        last_recalled REAL,
        UNIQUE (scope, workspace, key)
    );
    CREATE TABLE memory_recalls (
        id INTEGER PRIMARY KEY,
        request_id INTEGER,
        run_id INTEGER NOT NULL,
        step INTEGER NOT NULL,
        scope TEXT NOT NULL,
        workspace TEXT NOT NULL DEFAULT '',
        key TEXT NOT NULL,
        at REAL NOT NULL
    );
    CREATE TABLE summaries (
        run_id INTEGER NOT NULL REFERENCES runs(id),
        through_step INTEGER NOT NULL,
        text TEXT NOT NULL,
        created_at REAL NOT NULL,
        PRIMARY KEY (run_id, through_step)
    );
    CREATE TABLE operator_messages (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id),
        text TEXT NOT NULL,
        created_at REAL NOT NULL,
        delivered_step INTEGER
    );
    """,
    # 2: a request may be stored as a delta against an earlier request of its run: the first
    # messages_keep messages and entries_keep manifest entries of request base_id, then the ones
    # its own columns hold (TraceRepo.requests reads every request whole)
    """
    ALTER TABLE requests ADD COLUMN base_id INTEGER REFERENCES requests(id);
    ALTER TABLE requests ADD COLUMN messages_keep INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE requests ADD COLUMN entries_keep INTEGER NOT NULL DEFAULT 0;
    """,
    # 3: what each result was made from (Observation.seen: path, size, mtime_ns, digest) and when
    # its tool ran, as JSON {"seen": [...], "ran_ns": [start, end]}; '' for older rows
    """
    ALTER TABLE observations ADD COLUMN seen TEXT NOT NULL DEFAULT '';
    """,
    # 4: durable runs. An intent per tool call, written before the call executes (its exact
    # arguments, act, target, the approval that allowed it, what a file held before) and closed
    # in the transaction that commits its observation; a run's lease (who drives it: owner id,
    # host, pid, heartbeat), so a run whose process died is found and turned `interrupted`
    """
    CREATE TABLE intents (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id),
        step INTEGER NOT NULL,
        call_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        arguments TEXT NOT NULL,
        act TEXT NOT NULL DEFAULT '',
        target TEXT NOT NULL DEFAULT '',
        approval_id INTEGER REFERENCES approvals(id),
        before TEXT,
        status TEXT NOT NULL DEFAULT 'started',
        started_at REAL NOT NULL,
        ended_at REAL
    );
    CREATE INDEX intents_call ON intents(run_id, call_id, id);
    ALTER TABLE runs ADD COLUMN lease_owner TEXT;
    ALTER TABLE runs ADD COLUMN lease_host TEXT;
    ALTER TABLE runs ADD COLUMN lease_pid INTEGER;
    ALTER TABLE runs ADD COLUMN lease_heartbeat REAL;
    """,
    # 5: how a run was started (``core.run.origin.RunOrigin`` as JSON: its run settings and MCP
    # servers, env and header values as names only), so a resume rebuilds the same harness;
    # NULL for a run from before it
    """
    ALTER TABLE runs ADD COLUMN origin TEXT;
    """,
    # 6: the run queue and its workers. A queued run is a runs row (status 'queued') with a
    # queue row: the labels a worker must serve, where its workspace comes from (the run's
    # workspace path, or a git remote and ref a worker checks out, optionally pushing a branch
    # back), who claimed it last and how often, the operator's reconcile choice for its next
    # claim, and why it is held for the operator. A worker is a long-running process that
    # claims queued runs and drives them under their leases (``store/queue.py``)
    """
    CREATE TABLE queue (
        run_id INTEGER NOT NULL PRIMARY KEY REFERENCES runs(id),
        labels TEXT NOT NULL DEFAULT '[]',
        git_remote TEXT,
        git_ref TEXT,
        push_branch TEXT,
        enqueued_at REAL NOT NULL,
        claimed_by TEXT,
        claimed_at REAL,
        claims INTEGER NOT NULL DEFAULT 0,
        reconcile TEXT,
        held TEXT,
        pushed TEXT
    );
    CREATE TABLE workers (
        id TEXT PRIMARY KEY,
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        labels TEXT NOT NULL DEFAULT '[]',
        concurrency INTEGER NOT NULL,
        started_at REAL NOT NULL,
        heartbeat REAL NOT NULL,
        draining INTEGER NOT NULL DEFAULT 0,
        stopped_at REAL
    );
    """,
    # 7: the progress ledger of a run (``core/progress``), one revision per change of what it
    # says: objective, constraints, decisions, modified resources with digests, evidence, open
    # failures and operations, remaining work, next safe action, as JSON with its digest
    """
    CREATE TABLE progress (
        run_id INTEGER NOT NULL REFERENCES runs(id),
        revision INTEGER NOT NULL,
        step INTEGER NOT NULL,
        digest TEXT NOT NULL,
        ledger TEXT NOT NULL,
        created_at REAL NOT NULL,
        PRIMARY KEY (run_id, revision)
    );
    """,
    # 8: two-tier memory. A note's provenance: its MEMORY.md section (preferences, project,
    # lessons), type (fact, preference, inference), verification status (unverified, verified),
    # source reference, expiry and the key that supersedes it. Notes from before keep what they
    # were: an agent's an unverified inference, the operator's a verified fact. The daily log:
    # lines the harness appends per workspace at each run's end (goal, outcome, files, tests,
    # decisions), never recalled whole, and the key of the note a line was promoted to
    """
    ALTER TABLE memory ADD COLUMN section TEXT NOT NULL DEFAULT 'project';
    ALTER TABLE memory ADD COLUMN kind TEXT NOT NULL DEFAULT 'inference';
    ALTER TABLE memory ADD COLUMN status TEXT NOT NULL DEFAULT 'unverified';
    ALTER TABLE memory ADD COLUMN source TEXT NOT NULL DEFAULT '';
    ALTER TABLE memory ADD COLUMN expires_at REAL;
    ALTER TABLE memory ADD COLUMN superseded_by TEXT;
    UPDATE memory SET kind = 'fact', status = 'verified' WHERE run_id IS NULL;
    CREATE TABLE memory_log (
        id INTEGER PRIMARY KEY,
        workspace TEXT NOT NULL,
        day TEXT NOT NULL,
        run_id INTEGER,
        field TEXT NOT NULL,
        text TEXT NOT NULL,
        at REAL NOT NULL,
        promoted TEXT
    );
    CREATE INDEX memory_log_day ON memory_log(workspace, day, id);
    """,
    # 9: fenced leases on the store's clock. A take of a run's lease (a start, a resume, a claim)
    # increments its epoch, and every write its driver makes checks owner and epoch first
    # (``store/leases.py``); the renewal is stamped on the store's clock (``lease_renewed``:
    # PostgreSQL's clock_timestamp(), or on SQLite this host's monotonic clock) and says which
    # clock (``lease_clock``: 'postgresql', or 'boot:' and the SQLite host's boot id); a
    # worker's heartbeat the same way (``renewed``, ``clock``), for ``io-tui workers``
    """
    ALTER TABLE runs ADD COLUMN lease_epoch INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE runs ADD COLUMN lease_renewed REAL;
    ALTER TABLE runs ADD COLUMN lease_clock TEXT;
    ALTER TABLE workers ADD COLUMN renewed REAL;
    ALTER TABLE workers ADD COLUMN clock TEXT;
    """,
    # 10: rewind, fork and "what if". A checkpoint of a run's workspace (a commit and tree in
    # the workspace's shadow git store, ``core/checkpoints``): the step it was taken at, its
    # phase (before the step's calls, after them, around a rewind), what it left out; pruned
    # ones keep their row. A fork is a run that starts from another run's step (``forked_from``,
    # ``fork_step``): its first request is that step's, as recorded. The tool schemas a request
    # offered, by digest (``tool_sets``; the manifest names it), so a request can be sent again
    # as it was. A probe: one recorded request sent again with its context changed, and the
    # answer, never executed
    """
    ALTER TABLE runs ADD COLUMN forked_from INTEGER REFERENCES runs(id);
    ALTER TABLE runs ADD COLUMN fork_step INTEGER;
    CREATE TABLE checkpoints (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id),
        step INTEGER NOT NULL,
        phase TEXT NOT NULL,
        workspace TEXT NOT NULL,
        git_commit TEXT NOT NULL,
        tree TEXT NOT NULL,
        changed INTEGER NOT NULL DEFAULT 0,
        skipped TEXT NOT NULL DEFAULT '[]',
        took_ms REAL NOT NULL DEFAULT 0,
        created_at REAL NOT NULL,
        pruned_at REAL
    );
    CREATE INDEX checkpoints_run ON checkpoints(run_id, id);
    CREATE INDEX checkpoints_workspace ON checkpoints(workspace, id);
    CREATE TABLE tool_sets (
        digest TEXT PRIMARY KEY,
        specs TEXT NOT NULL,
        created_at REAL NOT NULL
    );
    CREATE TABLE probes (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id),
        step INTEGER NOT NULL,
        request_id INTEGER,
        batch TEXT,
        variant TEXT NOT NULL,
        changes TEXT NOT NULL,
        provider TEXT NOT NULL,
        model TEXT NOT NULL,
        messages TEXT NOT NULL,
        tools_digest TEXT,
        answer TEXT,
        usage TEXT,
        error TEXT,
        latency_s REAL,
        created_at REAL NOT NULL
    );
    CREATE INDEX probes_run ON probes(run_id, step, id);
    """,
    # 11: corrections (``Observation.corrects``): the harness's re-read of a result that went out
    # of date, stored with the step at whose boundary it was sent, naming the call it corrects
    """
    ALTER TABLE observations ADD COLUMN corrects TEXT NOT NULL DEFAULT '';
    """,
    # 12: a workspace's .mcp.json is started only once the operator trusted that exact content:
    # its digest, per workspace, who trusted it and when
    """
    CREATE TABLE mcp_trust (
        workspace TEXT NOT NULL,
        digest TEXT NOT NULL,
        trusted_by TEXT NOT NULL,
        trusted_at REAL NOT NULL,
        PRIMARY KEY (workspace, digest)
    );
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)


# SQLite's types as PostgreSQL spells them: a rowid alias becomes an identity column (ids from
# 1, never reused), every INTEGER 64 bits as SQLite's are, REAL (timestamps) a double. TEXT,
# JSON included, stays TEXT: what was written is what is read.
_PG_TYPES = (
    (re.compile(r"\bINTEGER PRIMARY KEY\b"), "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"),
    (re.compile(r"\bINTEGER\b"), "BIGINT"),
    (re.compile(r"\bREAL\b"), "DOUBLE PRECISION"),
)


def postgresql(migration: str) -> str:
    """``migration`` with PostgreSQL's types."""
    for pattern, replacement in _PG_TYPES:
        migration = pattern.sub(replacement, migration)
    return migration


def id_tables() -> frozenset[str]:
    """The tables whose ``id`` is generated: an insert into one returns it (``lastrowid``)."""
    return frozenset(
        re.findall(r"CREATE TABLE (\w+) \(\s*id INTEGER PRIMARY KEY", "".join(MIGRATIONS))
    )
