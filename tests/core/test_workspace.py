"""Workspace containment, file helpers and exec: the floor every file and command tool stands on."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from waits import until

from io_tui.core.boundary.workspace import LISTED_ON_LOOP, Workspace, WorkspaceError
from io_tui.core.tools.base import ToolError


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text("outside secret\n")
    return out


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "ws"
    (r / "src").mkdir(parents=True)
    (r / "src" / "app.py").write_text("print('hi')\n")
    return r


@pytest.fixture
def ws(root: Path) -> Workspace:
    return Workspace(root)


# -- the root ---------------------------------------------------------------------------------


def test_root_must_exist(tmp_path: Path) -> None:
    with pytest.raises(WorkspaceError, match="does not exist"):
        Workspace(tmp_path / "nope")


def test_root_must_be_a_directory(tmp_path: Path) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(WorkspaceError, match="not a directory"):
        Workspace(f)


def test_workspace_error_is_a_tool_error() -> None:
    assert issubclass(WorkspaceError, ToolError)


def test_root_given_through_a_symlink_is_resolved(tmp_path: Path, root: Path) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(root, target_is_directory=True)
    ws = Workspace(alias)
    assert ws.root == root.resolve()
    assert ws.relative("src/app.py") == "src/app.py"


# -- containment ------------------------------------------------------------------------------


def test_relative_paths_resolve_inside(ws: Workspace, root: Path) -> None:
    assert ws.resolve("src/app.py") == (root / "src" / "app.py").resolve()
    assert ws.relative("src/app.py") == "src/app.py"
    assert ws.relative("./src/../src/app.py") == "src/app.py"
    assert ws.relative(".") == "."
    assert ws.relative("") == "."


def test_absolute_path_inside_root_is_accepted(ws: Workspace, root: Path) -> None:
    assert ws.relative(str(root / "src" / "app.py")) == "src/app.py"


@pytest.mark.parametrize(
    "path", ["..", "../outside/secret.txt", "src/../../outside", "a/b/../../.."]
)
def test_dotdot_escapes_are_refused(ws: Workspace, path: str) -> None:
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        ws.resolve(path)


def test_absolute_path_outside_is_refused(ws: Workspace, outside: Path) -> None:
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        ws.resolve(str(outside / "secret.txt"))
    with pytest.raises(WorkspaceError):
        ws.resolve("/etc/passwd")


def test_sibling_with_common_prefix_is_outside(tmp_path: Path, ws: Workspace) -> None:
    """/x/ws2 starts with the string /x/ws but is not inside it."""
    (tmp_path / "ws2").mkdir()
    with pytest.raises(WorkspaceError):
        ws.resolve(str(tmp_path / "ws2"))


def test_file_symlink_pointing_out_is_refused(ws: Workspace, root: Path, outside: Path) -> None:
    (root / "link.txt").symlink_to(outside / "secret.txt")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        ws.resolve("link.txt")


def test_symlinked_directory_pointing_out_is_refused(
    ws: Workspace, root: Path, outside: Path
) -> None:
    (root / "linkdir").symlink_to(outside, target_is_directory=True)
    with pytest.raises(WorkspaceError):
        ws.resolve("linkdir")
    with pytest.raises(WorkspaceError):
        ws.resolve("linkdir/secret.txt")


def test_new_path_under_symlinked_dir_pointing_out_is_refused(
    ws: Workspace, root: Path, outside: Path
) -> None:
    (root / "linkdir").symlink_to(outside, target_is_directory=True)
    with pytest.raises(WorkspaceError):
        ws.resolve("linkdir/new/deeper/file.txt")


def test_dangling_symlink_pointing_out_is_refused(ws: Workspace, root: Path, outside: Path) -> None:
    """A write through a dangling link would create a file outside the root."""
    (root / "dangling").symlink_to(outside / "not-yet.txt")
    with pytest.raises(WorkspaceError):
        ws.resolve("dangling")


def test_symlink_inside_is_resolved_to_its_target(ws: Workspace, root: Path) -> None:
    (root / ".env").write_text("KEY=1\n")
    (root / "notes.txt").symlink_to(root / ".env")
    assert ws.relative("notes.txt") == ".env"


def test_nonexistent_path_inside_resolves(ws: Workspace, root: Path) -> None:
    assert ws.resolve("new/dir/file.txt") == root.resolve() / "new" / "dir" / "file.txt"


def test_dotdot_after_missing_component_cannot_escape(ws: Workspace) -> None:
    with pytest.raises(WorkspaceError):
        ws.resolve("missing/../../outside")


def test_nul_byte_is_refused(ws: Workspace) -> None:
    with pytest.raises(WorkspaceError, match="NUL"):
        ws.resolve("a\0b")


def test_contains_never_raises(ws: Workspace) -> None:
    assert ws.contains("src/app.py")
    assert not ws.contains("../x")


_segment = st.one_of(
    st.sampled_from(["..", ".", "src", "app.py", "linkdir", "", "...", "a..b"]),
    st.text(alphabet="abc./", min_size=1, max_size=6),
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(segments=st.lists(_segment, min_size=1, max_size=8), absolute=st.booleans())
def test_property_nothing_resolves_outside_root(
    root: Path, outside: Path, segments: list[str], absolute: bool
) -> None:
    """Whatever path is built from these segments, resolve either refuses it or stays inside."""
    link = root / "linkdir"
    if not link.is_symlink():
        link.symlink_to(outside, target_is_directory=True)
    ws = Workspace(root)
    raw = "/".join(segments)
    if absolute:
        raw = "/" + raw
    try:
        resolved = ws.resolve(raw)
    except WorkspaceError:
        return
    real_root = root.resolve()
    assert resolved == real_root or real_root in resolved.parents
    assert os.path.realpath(resolved) == str(resolved)


@pytest.fixture
def linked(root: Path, outside: Path) -> Path:
    """The root with links of every kind: to a folder and a file inside, out, dangling, a loop."""
    if not (root / "inner").is_symlink():
        (root / "inner").symlink_to(root / "src", target_is_directory=True)
        (root / "shortcut.py").symlink_to(Path("src") / "app.py")
        (root / "linkdir").symlink_to(outside, target_is_directory=True)
        (root / "dangling").symlink_to(root / "not-yet")
        (root / "loop").symlink_to(root / "loop")
    return root


_part = st.sampled_from(
    ["src", "app.py", "inner", "shortcut.py", "linkdir", "dangling", "loop", "missing", "..", "."]
)


@settings(max_examples=400, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(_part, max_size=6))
def test_property_a_path_resolves_as_realpath_resolves_it(linked: Path, parts: list[str]) -> None:
    """``resolve`` takes a plain path below the root as it is (``_plain``): whatever the path,
    it gives what ``os.path.realpath`` gives, and refuses exactly what that puts outside."""
    ws = Workspace(linked)
    raw = "/".join(parts)
    expected = Path(os.path.realpath(ws.root / raw))
    inside = expected == ws.root or ws.root in expected.parents
    try:
        assert ws.resolve(raw) == expected and inside
    except WorkspaceError:
        assert not inside


def test_a_root_whose_path_now_leads_elsewhere_is_not_trusted(
    tmp_path: Path, root: Path, outside: Path
) -> None:
    """The root's path replaced by a link to another folder: its paths are resolved again,
    and land outside."""
    ws = Workspace(root)
    assert ws.resolve("src/app.py") == root / "src" / "app.py"
    root.rename(tmp_path / "moved")
    root.symlink_to(outside, target_is_directory=True)
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        ws.resolve("secret.txt")


# -- files ------------------------------------------------------------------------------------


async def test_read_and_write_text_roundtrip_exact_bytes(ws: Workspace, root: Path) -> None:
    existed = await ws.write_text("deep/new/file.txt", "a\r\nb\n")
    assert existed is False
    assert (root / "deep" / "new" / "file.txt").read_bytes() == b"a\r\nb\n"
    assert await ws.read_text("deep/new/file.txt") == "a\r\nb\n"
    assert await ws.write_text("deep/new/file.txt", "c") is True


async def test_write_to_a_fifo_is_refused_without_blocking(ws: Workspace, root: Path) -> None:
    os.mkfifo(root / "pipe")
    with pytest.raises(WorkspaceError, match=r"pipe is a named pipe \(FIFO\), not a regular"):
        await ws.write_text("pipe", "x")
    with pytest.raises(WorkspaceError, match="not a regular file"):
        await ws.read_text("pipe")


async def test_read_text_refuses_binary(ws: Workspace, root: Path) -> None:
    (root / "img.bin").write_bytes(b"\x89PNG\0\0\x01")
    with pytest.raises(WorkspaceError, match="binary"):
        await ws.read_text("img.bin")


async def test_read_text_refuses_non_utf8(ws: Workspace, root: Path) -> None:
    (root / "latin.txt").write_bytes("café".encode("latin-1"))
    with pytest.raises(WorkspaceError, match="not UTF-8"):
        await ws.read_text("latin.txt")


async def test_missing_file_and_directory_errors(ws: Workspace) -> None:
    with pytest.raises(WorkspaceError, match="no such file"):
        await ws.read_text("nope.txt")
    with pytest.raises(WorkspaceError, match="is a directory"):
        await ws.read_text("src")


async def test_write_through_symlink_out_is_refused(
    ws: Workspace, root: Path, outside: Path
) -> None:
    (root / "linkdir").symlink_to(outside, target_is_directory=True)
    with pytest.raises(WorkspaceError):
        await ws.write_text("linkdir/pwned.txt", "x")
    assert not (outside / "pwned.txt").exists()


async def test_listing(ws: Workspace, root: Path) -> None:
    (root / "b.txt").write_text("")
    assert await ws.listing(".") == (".", [("b.txt", False), ("src", True)])
    with pytest.raises(WorkspaceError, match="not a directory"):
        await ws.listing("b.txt")
    os.mkfifo(root / "pipe")
    with pytest.raises(WorkspaceError, match="not a directory"):  # refused, never opened
        await ws.listing("pipe")
    with pytest.raises(WorkspaceError, match="no such file or directory"):
        await ws.listing("gone")


@pytest.mark.parametrize("count", [LISTED_ON_LOOP - 1, LISTED_ON_LOOP, 3 * LISTED_ON_LOOP + 5])
async def test_a_listing_is_whole_whatever_its_size(ws: Workspace, root: Path, count: int) -> None:
    """Its first entries are read on the loop, the rest of a larger folder in a thread: every
    entry once, sorted."""
    folder = root / "many"
    folder.mkdir()
    for index in range(count):
        (folder / f"f{index:04d}").mkdir() if index % 3 == 0 else (folder / f"f{index:04d}").touch()
    shown, entries = await ws.listing("many")
    assert shown == "many"
    assert entries == [(f"f{index:04d}", index % 3 == 0) for index in range(count)]


# -- exec -------------------------------------------------------------------------------------


async def test_exec_merges_output_and_reports_exit_code(ws: Workspace) -> None:
    code = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"
    result = await ws.exec([sys.executable, "-c", code], timeout_s=30)
    assert result.exit_code == 3
    assert not result.timed_out
    assert "out" in result.output and "err" in result.output


async def test_exec_runs_in_root_without_a_shell(ws: Workspace, root: Path) -> None:
    result = await ws.exec(
        [sys.executable, "-c", "import os,sys; print(os.getcwd()); print(sys.argv[1])", "$HOME;x"],
        timeout_s=30,
    )
    assert result.output.splitlines() == [str(ws.root), "$HOME;x"]


async def test_exec_missing_program(ws: Workspace) -> None:
    with pytest.raises(WorkspaceError, match="command not found"):
        await ws.exec(["definitely-not-a-program-xyz"], timeout_s=5)


def _alive(pid: int) -> bool:
    """A process exists and is not a zombie (containers may leave zombies unreaped)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


async def _wait_dead(pid: int) -> None:
    await until(lambda: not _alive(pid), f"process {pid} to end", timeout_s=5)


_SPAWN_GRANDCHILD = (
    "import subprocess, sys, time\n"
    "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    "print(p.pid, flush=True)\n"
    "{tail}"
)


async def test_exec_timeout_kills_the_process_group(ws: Workspace) -> None:
    code = _SPAWN_GRANDCHILD.format(tail="time.sleep(60)\n")
    result = await ws.exec([sys.executable, "-c", code], timeout_s=1.5)
    assert result.timed_out
    assert result.exit_code is not None and result.exit_code < 0
    grandchild = int(result.output.split()[0])  # output printed before the timeout is kept
    await _wait_dead(grandchild)


async def test_exec_does_not_wait_for_stragglers_holding_the_pipe(ws: Workspace) -> None:
    """A child that exits while a background process keeps stdout open is not a timeout."""
    code = _SPAWN_GRANDCHILD.format(tail="")
    result = await ws.exec([sys.executable, "-c", code], timeout_s=20)
    assert not result.timed_out
    assert result.exit_code == 0
    await _wait_dead(int(result.output.split()[0]))


async def test_exec_cancelled_kills_the_process_group(ws: Workspace, root: Path) -> None:
    code = "import os, time\nopen('pid', 'w').write(str(os.getpid()))\ntime.sleep(60)\n"
    task = asyncio.create_task(ws.exec([sys.executable, "-c", code], timeout_s=60))
    pid = root / "pid"
    await until(lambda: pid.exists() and pid.read_text(), "the command to write its pid")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await _wait_dead(int((root / "pid").read_text()))


async def test_exec_keeps_head_and_tail_of_runaway_output(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io_tui.core.boundary.workspace as workspace

    monkeypatch.setattr(workspace, "EXEC_KEEP_HEAD_BYTES", 100)
    monkeypatch.setattr(workspace, "EXEC_KEEP_TAIL_BYTES", 100)
    code = "print('FIRST' + 'x' * 5000 + 'LAST')"
    result = await ws.exec([sys.executable, "-c", code], timeout_s=30)
    assert result.output.startswith("FIRST")
    assert result.output.rstrip().endswith("LAST")
    assert "bytes of output dropped" in result.output


_ESCAPE = (  # a grandchild that leaves the session (setsid) and its parent (double fork)
    "import os, subprocess, sys\n"
    "p = subprocess.Popen(['setsid', 'sh', '-c', 'echo $$; exec sleep 1000'],\n"
    "                     stdout=subprocess.PIPE, text=True)\n"
    "print(p.stdout.readline().strip(), flush=True)\n"
    "{tail}"
)


@pytest.mark.parametrize("tail", ["import time; time.sleep(60)\n", ""], ids=["timeout", "exit"])
async def test_exec_kills_setsid_grandchildren_that_left_its_session(
    ws: Workspace, tail: str
) -> None:
    result = await ws.exec([sys.executable, "-c", _ESCAPE.format(tail=tail)], timeout_s=1.5)
    escaped = int(result.output.split()[0])
    assert os.getsid(escaped) != os.getsid(0) or not _alive(escaped)  # it did leave
    await _wait_dead(escaped)


async def test_a_setsid_background_job_through_a_shell_dies_at_the_timeout(
    ws: Workspace, root: Path
) -> None:
    argv = ["sh", "-c", "setsid sh -c 'echo $$ > bg.pid; exec sleep 1000' & sleep 60"]
    result = await ws.exec(argv, timeout_s=1)
    assert result.timed_out
    pid = root / "bg.pid"
    await until(lambda: pid.exists() and pid.read_text().strip(), "the job to write its pid")
    await _wait_dead(int(pid.read_text()))


async def test_commands_see_only_allow_listed_variables(tmp_path, monkeypatch):
    secrets = {
        "OPENAI_API_KEY": "sk-test-never-leak-1234",
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY",
        "DATABASE_URL": "postgres://app:hunter2@db:5432/app",
        "SOMETHING_ELSE": "not on the list",
    }
    for name, value in secrets.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("IO_TUI_HARMLESS", "visible")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    result = await Workspace(tmp_path).exec(["env"], 10)
    for value in secrets.values():
        assert value not in result.output
    assert "IO_TUI_HARMLESS" not in result.output
    assert "LC_ALL=C.UTF-8" in result.output  # LC_* is allowed
    assert f"PATH={os.environ['PATH']}" in result.output

    allowed = await Workspace(tmp_path, env_allow=["IO_TUI_HARM*", "DATABASE_URL"]).exec(
        ["env"], 10
    )
    assert "IO_TUI_HARMLESS=visible" in allowed.output
    assert "DATABASE_URL=postgres://app:hunter2@db:5432/app" in allowed.output  # asked for
    assert "AWS_SECRET_ACCESS_KEY" not in allowed.output
