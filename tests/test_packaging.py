"""What a user installing the wheel meets: one version, the metadata PyPI shows, a
light import, and a release workflow that builds and tests every platform."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib.metadata import metadata
from pathlib import Path

import yaml

import histoscope

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / ".github" / "workflows" / "release.yml"

# Imported only by the features that need them: the viewer's server, the optional
# extras, and PyTorch (only when a tensor is logged).
NOT_AT_IMPORT = ("starlette", "uvicorn", "anyio", "pandas", "pyarrow", "fsspec", "dask", "torch")


def cargo_version() -> str:
    return tomllib.loads((REPO / "Cargo.toml").read_text())["package"]["version"]


def test_the_version_is_written_once_in_cargo_toml() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert histoscope.__version__ == cargo_version()
    assert metadata("histoscope")["Version"] == cargo_version()


def test_version_flag() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "histoscope.cli", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"histoscope {cargo_version()}"


def test_installed_metadata_has_license_urls_and_classifiers() -> None:
    meta = metadata("histoscope")
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta.get_all("License-File") == ["LICENSE"]
    urls = dict(url.split(", ", 1) for url in meta.get_all("Project-URL") or [])
    assert {"Homepage", "Source", "Issues", "Changelog"} <= set(urls)
    classifiers = set(meta.get_all("Classifier") or [])
    for system in ("POSIX :: Linux", "MacOS", "Microsoft :: Windows"):
        assert f"Operating System :: {system}" in classifiers
    assert "Programming Language :: Python :: 3.9" in classifiers
    assert meta["Requires-Python"] == ">=3.9"


def test_import_loads_no_server_extra_or_torch() -> None:
    probe = (
        "import sys, histoscope, histoscope.cli; "
        "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split())
    assert "histoscope" in loaded
    assert loaded.isdisjoint(NOT_AT_IMPORT), sorted(loaded & set(NOT_AT_IMPORT))


def test_rust_version_is_declared_and_checked_by_ci() -> None:
    package = tomllib.loads((REPO / "Cargo.toml").read_text())["package"]
    assert re.fullmatch(r"1\.\d+", package["rust-version"])
    assert "bash .ci/check-rust" in (REPO / ".ci" / "test").read_text()


def workflow() -> dict:
    # YAML 1.1 reads the key `on` as True; PyYAML follows it.
    loaded = yaml.safe_load(WORKFLOW.read_text())
    loaded["on"] = loaded.pop(True, loaded.get("on"))
    return loaded


def test_release_workflow_builds_every_target_with_maturin_action() -> None:
    jobs = workflow()["jobs"]
    builds = [
        (step.get("with", {}), entry)
        for job in jobs.values()
        for entry in job.get("strategy", {}).get("matrix", {}).get("include", [{}])
        for step in job["steps"]
        if str(step.get("uses", "")).startswith("PyO3/maturin-action@")
    ]
    assert builds, "no PyO3/maturin-action step"
    wheels = {
        (str(entry.get("os")), str(entry.get("target")), str(entry.get("manylinux", "")))
        for step, entry in builds
        if step.get("command", "build") == "build"
    }
    assert wheels >= {
        ("linux", "x86_64", "2014"),
        ("linux", "aarch64", "2014"),
        ("linux", "x86_64", "musllinux_1_2"),
        ("macos", "x86_64", ""),
        ("macos", "aarch64", ""),
        ("windows", "x64", ""),
    }
    assert any(step.get("command") == "sdist" for step, _ in builds)
    for step, _ in builds:
        if step.get("command", "build") == "build":
            assert "--release" in step["args"] and "--locked" in step["args"]


def test_release_workflow_tests_every_wheel_installed_and_publishes_tags() -> None:
    loaded = workflow()
    jobs = loaded["jobs"]
    assert "v*" in loaded["on"]["push"]["tags"]
    test_jobs = [job for name, job in jobs.items() if name.startswith("test")]
    tested = {
        (entry["os"], entry["target"], str(entry.get("manylinux", "")))
        for job in test_jobs
        for entry in job["strategy"]["matrix"]["include"]
    }
    built = {
        (entry["os"], entry["target"], str(entry.get("manylinux", "")))
        for entry in jobs["wheels"]["strategy"]["matrix"]["include"]
    }
    assert tested >= built
    publish = jobs["publish"]
    assert publish["permissions"]["id-token"] == "write"  # PyPI trusted publishing
    assert "refs/tags/" in publish["if"]
    assert set(publish["needs"]) >= {"wheels", "sdist", *[n for n in jobs if n.startswith("test")]}
    uses = [step.get("uses", "") for step in publish["steps"]]
    assert any(use.startswith("pypa/gh-action-pypi-publish@") for use in uses)
    assert not any("password" in step.get("with", {}) for step in publish["steps"])
