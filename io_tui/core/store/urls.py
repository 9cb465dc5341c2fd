"""A PostgreSQL store's URL, told from a SQLite file's path (``is_url``) and kept without its
password (``store_url``): what finding any store needs, apart from the PostgreSQL backend
(``pg.py``), which a SQLite store never loads."""

from __future__ import annotations

import os
from urllib.parse import unquote, urlsplit, urlunsplit

SCHEMES = ("postgresql://", "postgres://")
PASSWORD_VARIABLE = "PGPASSWORD"  # libpq's own variable, and its name in credentials.toml


def is_url(text: str) -> bool:
    return text.startswith(SCHEMES)


class StoreUrl(str):
    """A PostgreSQL store's URL as it may be shown and handed to child processes: without a
    password. One given in the URL is kept in ``password``, never in the text."""

    password: str | None = None


def store_url(text: str) -> StoreUrl:
    """``text`` (a ``postgresql://`` URL) with any password taken out into ``.password``.

    A process that got its password in the URL gives it to its children (the harness worker)
    through ``PGPASSWORD``, as the environment, not on their command line."""
    parts = urlsplit(text)
    userinfo, at, hostinfo = parts.netloc.rpartition("@")
    user, colon, password = userinfo.partition(":")
    url = StoreUrl(urlunsplit(parts._replace(netloc=f"{user}{at}{hostinfo}")))
    if colon and password:
        url.password = unquote(password)
        os.environ.setdefault(PASSWORD_VARIABLE, url.password)
    return url
