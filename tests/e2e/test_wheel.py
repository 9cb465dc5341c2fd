"""io-tui installs like any other package: the sdist and wheel built from this checkout, the
wheel installed into a fresh virtualenv outside it, and that installation's ``io-tui`` run as a
user would: ``--version``, the scripted demo headless, a ``run`` on a scripted provider, and the
app's first frame in tmux. What a wheel must carry (themes, skills, the demo, the licence) and
declare (Python versions, extras, classifiers) is read from the files built.

The virtualenv gets io-tui's dependencies from the package registry, as ``pip install`` does.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.xdist_group("wheel"),
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


def sh(*argv: str | Path, cwd: Path, env: dict[str, str] | None = None, timeout: float = 600):
    done = subprocess.run(
        [str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=timeout,
        env=env,
    )  # fmt: skip
    assert done.returncode == 0, f"{argv}: {done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("dist")
    sh(sys.executable, "-m", "build", "--no-isolation", "--sdist", "--wheel", "--outdir", out,
       ROOT, cwd=out)  # fmt: skip
    (wheel,) = out.glob("io_tui-*.whl")
    (sdist,) = out.glob("io_tui-*.tar.gz")
    return wheel, sdist


@pytest.fixture(scope="module")
def installed(built, tmp_path_factory) -> Path:
    """A fresh virtualenv outside the checkout with the wheel installed; its ``bin``."""
    home = tmp_path_factory.mktemp("venv")
    assert ROOT not in home.parents
    sh(sys.executable, "-m", "venv", home / "venv", cwd=home)
    pip = home / "venv" / "bin" / "pip"
    sh(pip, "install", "--quiet", built[0], cwd=home, timeout=900)
    return home / "venv" / "bin"


def user_env(tmp: Path) -> dict[str, str]:
    """A user's environment: no checkout on the path, config and data of its own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "IO_TUI_", "OTEL_"))}
    env.pop("NO_COLOR", None)
    return env | {"IO_TUI_CONFIG_DIR": str(tmp / "cfg"), "IO_TUI_DATA_DIR": str(tmp / "data"),
                  "HOME": str(tmp)}  # fmt: skip


def test_the_wheel_carries_and_declares_what_a_user_needs(built):
    wheel, sdist = built
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = Parser().parsestr(archive.read(meta_name).decode())
    assert any(n.startswith("io_tui/_bundled/themes/") and n.endswith(".toml") for n in names)
    assert any(n.startswith("io_tui/_bundled/skills/") and n.endswith("SKILL.md") for n in names)
    assert any(n.startswith("io_tui/demo/") for n in names)
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert not any(n.startswith("tests/") for n in names)
    assert meta["Name"] == "io-tui" and meta["Requires-Python"] == ">=3.11"
    assert meta["License-Expression"] == "MIT"
    assert set(meta.get_all("Provides-Extra")) >= {"llama", "pg", "otel"}
    classifiers = meta.get_all("Classifier")
    assert "Programming Language :: Python :: 3.11" in classifiers
    assert any(c.startswith("Development Status") for c in classifiers)
    assert meta.get_payload().lstrip().startswith("# io-tui")  # the README as description
    with tarfile.open(sdist) as archive:
        files = {Path(n).relative_to(Path(n).parts[0]).as_posix() for n in archive.getnames()
                 if len(Path(n).parts) > 1}  # fmt: skip
    assert {"LICENSE", "README.md", "pyproject.toml"} <= files
    assert any(f.startswith("themes/") for f in files) and any(
        f.startswith("skills/") for f in files
    )


def test_the_installed_command_runs_headless(installed, tmp_path):
    env = user_env(tmp_path)
    version = sh(installed / "io-tui", "--version", cwd=tmp_path, env=env)
    assert version.stdout.startswith("io-tui ")
    demo = sh(installed / "io-tui", "--store", tmp_path / "demo.db", "demo", "--headless",
              cwd=tmp_path, env=env, timeout=180)  # fmt: skip
    assert "run 1: finished (success)" in demo.stdout
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("hello\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"model": "scripted", "turns": [
        {"tool_calls": [{"id": "r1", "name": "read_file", "arguments": {"path": "a.txt"}}]},
        {"text": "it says hello"}]}))  # fmt: skip
    run = sh(installed / "io-tui", "--store", tmp_path / "run.db", "run", "read a.txt",
             "-w", workspace, "--provider", f"scripted:{script}", cwd=tmp_path, env=env)  # fmt: skip
    assert "finished" in run.stdout, run.stdout
    # the bundled themes and skills are found in the installed package
    found = sh(installed / "python", "-c",
               "from io_tui.paths import bundled_dir\n"
               "for name in ('themes', 'skills'):\n"
               "    print(bundled_dir(name), sorted(p.name for p in bundled_dir(name).iterdir()))",
               cwd=tmp_path, env=env).stdout  # fmt: skip
    assert found.count("_bundled") == 2 and "io-dark.toml" in found, found


def test_the_installed_app_draws_its_first_frame(installed, tmp_path):
    socket = f"wheel-{os.getpid()}"
    env = user_env(tmp_path) | {"TERM": "xterm-256color"}
    command = f"{installed / 'io-tui'} --store {tmp_path / 'app.db'}"
    subprocess.run(
        ["tmux", "-L", socket, "new-session", "-d", "-s", "io", "-x", "140", "-y", "40", command],
        check=True, env=env, timeout=10, cwd=tmp_path,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        screen = ""
        while time.monotonic() < deadline:
            screen = subprocess.run(
                ["tmux", "-L", socket, "capture-pane", "-p", "-t", "io"],
                capture_output=True, text=True, timeout=10,
            ).stdout  # fmt: skip
            if "io-tui" in screen and "Runs" in screen:
                break
            time.sleep(0.2)
        assert "io-tui" in screen and "Runs" in screen, screen
        assert "Traceback" not in screen
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, timeout=10)
