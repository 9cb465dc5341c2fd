"""A PostgreSQL store reached over TLS with a password, as a shared server is: a throwaway server
on 127.0.0.1 that takes only TLS connections (``hostssl``, scram-sha-256) with a certificate of
a CA made here. The URL's TLS options reach the driver (``sslmode``, ``sslrootcert``: both the
store's connection and the second one ``LISTEN`` uses), and the password, from the environment,
the credentials file or the URL, is never written to the store nor shown by any command."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import cli_process
import pytest
from mcp_support import free_port
from pg_cluster import MISSING, PG_BIN, Cluster, running

from io_tui.core import Store, StoreError
from io_tui.core.store import store_location

PASSWORD = "tls-s3cret-pw"


class TlsCluster(Cluster):
    """A server on 127.0.0.1:``port`` for TLS connections with a password only (and the unix
    socket, trusted, for making databases)."""

    def __init__(self, root: Path, port: int) -> None:
        super().__init__(root)
        self.port = port

    def start(self) -> None:
        certs = self.root / "certs"
        certs.mkdir()
        _certificate(certs, "ca", "io-tui test CA")
        _certificate(certs, "other-ca", "another CA")
        _server_certificate(certs)
        pwfile = self.root / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if self._as_user:
            for path in (self.root, certs, certs / "server.key", certs / "server.crt"):
                shutil.chown(path, "nobody")
        self._run(
            PG_BIN / "initdb", "-D", self.data, "-U", "postgres", "--pwfile", pwfile,
            "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--locale=C",
            "--no-sync", "--no-instructions",
        )  # fmt: skip
        (self.data / "pg_hba.conf").write_text(
            "local all all trust\nhostssl all all 127.0.0.1/32 scram-sha-256\n"
        )
        options = (
            f"-k {self.socket_dir} -c listen_addresses=127.0.0.1 -p {self.port} -c ssl=on"
            f" -c ssl_cert_file={certs / 'server.crt'} -c ssl_key_file={certs / 'server.key'}"
            " -c fsync=off"
        )
        self._run(PG_BIN / "pg_ctl", "-D", self.data, "-l", self.root / "log", "-o", options,
                  "-w", "start")  # fmt: skip

    def url(self, database: str = "postgres") -> str:  # the trusted socket: setup only
        return f"postgresql://postgres@/{database}?host={self.socket_dir}&port={self.port}"

    def tls_url(self, database: str, *, sslmode: str = "verify-full", ca: str = "ca") -> str:
        root = self.root / "certs" / f"{ca}.crt"
        return (
            f"postgresql://postgres@127.0.0.1:{self.port}/{database}"
            f"?sslmode={sslmode}&sslrootcert={root}"
        )


def _openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)


def _certificate(certs: Path, name: str, subject: str) -> None:
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
             "-keyout", certs / f"{name}.key", "-out", certs / f"{name}.crt",
             "-subj", f"/CN={subject}")  # fmt: skip


def _server_certificate(certs: Path) -> None:
    """127.0.0.1's certificate, signed by ``ca`` (what verify-full checks the host against)."""
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", certs / "server.key",
             "-out", certs / "server.csr", "-subj", "/CN=127.0.0.1")  # fmt: skip
    (certs / "san.cnf").write_text("subjectAltName = IP:127.0.0.1\n")
    _openssl("x509", "-req", "-in", certs / "server.csr", "-CA", certs / "ca.crt",
             "-CAkey", certs / "ca.key", "-CAcreateserial", "-days", "2",
             "-extfile", certs / "san.cnf", "-out", certs / "server.crt")  # fmt: skip
    (certs / "server.key").chmod(0o600)


@pytest.fixture(scope="module")
def tls_cluster() -> Iterator[TlsCluster]:
    if not (PG_BIN / "initdb").exists():
        pytest.skip(MISSING)
    if shutil.which("openssl") is None:
        pytest.skip("openssl not found: no certificates for the TLS server")
    cluster = TlsCluster(Path(tempfile.mkdtemp(prefix="iotu-tls-", dir="/tmp")), free_port())
    yield from running(cluster, "the TLS test server")


@dataclass
class Tls:
    cluster: TlsCluster
    database: str

    def url(self, **kw: str) -> str:
        return self.cluster.tls_url(self.database, **kw)


@pytest.fixture
def tls(tls_cluster: TlsCluster, monkeypatch: pytest.MonkeyPatch) -> Tls:
    """A fresh database on the TLS server; no password in this process's environment."""
    monkeypatch.delenv("PGPASSWORD", raising=False)
    monkeypatch.delenv("IO_TUI_CREDENTIALS", raising=False)
    url = tls_cluster.new_database()
    return Tls(tls_cluster, urlsplit(url).path.lstrip("/"))


TLS_IN_USE = "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"


async def test_tls_options_reach_the_driver_on_both_connections(tls, monkeypatch):
    monkeypatch.setenv("PGPASSWORD", PASSWORD)  # libpq's own variable
    store = await Store.open(store_location(tls.url()))
    try:
        row = await store.db.fetchone(TLS_IN_USE)
        assert row is not None and row["ssl"] is True
        listener = await store.db.connect()  # the connection LISTEN uses
        try:
            cursor = await listener.execute(TLS_IN_USE)
            assert (await cursor.fetchone()) == (True,)
        finally:
            await listener.close()
    finally:
        await store.close()


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"sslmode": "disable"}, "no encryption"),  # the server takes TLS only
        ({"ca": "other-ca"}, "certificate verify failed"),  # verify-full with another CA
    ],
)
async def test_tls_options_that_do_not_fit_the_server_are_one_line_without_the_password(
    tls, options, said
):
    url = tls.url(**options).replace("postgres@", f"postgres:{PASSWORD}@")
    with pytest.raises(StoreError) as caught:
        await Store.open(store_location(url))
    message = str(caught.value)
    assert said in message and "\n" not in message
    assert PASSWORD not in message and message.startswith("cannot open store postgresql://")


def io_tui(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return cli_process.io_tui(*args, env=cli_process.user_env(env))


def stored_text(tls: Tls) -> str:
    """Every row of every table of the store, as text."""
    import psycopg

    with psycopg.connect(tls.cluster.url(tls.database), autocommit=True) as conn:
        tables = [
            name
            for (name,) in conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
            )
        ]
        assert {"runs", "queue", "workers"} <= set(tables)
        return "\n".join(
            str(row[0])
            for table in tables
            for row in conn.execute(f"SELECT t::text FROM {table} t")
        )


@pytest.mark.parametrize("source", ["credentials file", "url"])
def test_a_queue_over_tls_never_stores_nor_shows_the_password(
    tls, source, tmp_path, workspace, write_script
):
    """``run --queue``, a worker draining it, ``workers`` and ``trace`` over TLS: the password
    from the credentials file (``PGPASSWORD`` in it) or in the URL itself, never in what any
    of them prints nor anywhere in the store."""
    env: dict[str, str] = {}
    url = tls.url()
    if source == "url":
        url = url.replace("postgres@", f"postgres:{PASSWORD}@")
    else:
        credentials = tmp_path / "credentials.toml"
        credentials.write_text(f'PGPASSWORD = "{PASSWORD}"\n')
        credentials.chmod(0o600)
        env["IO_TUI_CREDENTIALS"] = str(credentials)
    script = write_script(
        [
            {"tool_calls": [{"id": "w1", "name": "write_file",
                             "arguments": {"path": "a.txt", "content": "one\n"}}]},
            {"text": "done"},
        ]
    )  # fmt: skip
    policy = tmp_path / "policy.toml"
    policy.write_text('[defaults]\nwrite = "allow"\n')
    store = ("--store", url)
    outputs = [
        io_tui("run", "t", "-w", str(workspace), "--provider", f"scripted:{script}",
               "--policy", str(policy), "--queue", "--json", *store, **env),
        io_tui("worker", "--until-empty", *store, **env),
        io_tui("workers", "--all", *store, **env),
        io_tui("trace", "1", "--json", *store, **env),
    ]  # fmt: skip
    for done in outputs:
        assert done.returncode == 0, done.stderr
        assert PASSWORD not in done.stdout + done.stderr
    assert json.loads(outputs[-1].stdout)["run"]["status"] == "finished"
    assert (workspace / "a.txt").read_text() == "one\n"
    assert PASSWORD not in stored_text(tls)
