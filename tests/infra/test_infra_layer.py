"""The shared layer, built without Docker by infra/bundle.py."""
from __future__ import annotations

from pathlib import Path

import pytest

from infra import bundle

pytestmark = pytest.mark.infra

REPO_ROOT = Path(__file__).resolve().parents[2]


def _layer_asset(synthesized) -> Path:
    _, layer = synthesized.only("AWS::Lambda::LayerVersion")
    return synthesized.file_asset_dir(layer["Properties"]["Content"]["S3Key"])


def test_layer_asset_holds_the_credgate_core_and_its_dependencies(synthesized):
    site_packages = _layer_asset(synthesized) / "python"
    assert (site_packages / "credgate" / "__init__.py").is_file()
    assert (site_packages / "pydantic").is_dir()
    assert (site_packages / "mangum").is_dir()
    assert (site_packages / "aws_lambda_powertools").is_dir()


def test_layer_leaves_out_gateway_servers_and_the_runtime_sdk(synthesized):
    site_packages = _layer_asset(synthesized) / "python"
    for absent in ("uvicorn", "uvloop", "httptools", "boto3", "botocore", "bin"):
        assert not (site_packages / absent).exists(), absent


def test_layer_ships_bytecode_for_the_lambda_runtime_only(synthesized):
    """Lambda cannot write .pyc files, so the layer brings them, compiled by a Python 3.12."""
    if bundle._lambda_interpreter() is None:
        pytest.skip("no python3.12 on this machine: the layer is built without bytecode")
    site_packages = _layer_asset(synthesized) / "python"
    compiled = {path.name.split(".")[-2] for path in site_packages.rglob("*.pyc")}
    assert compiled == {"cpython-312"}
    assert (site_packages / "credgate" / "__pycache__" / "keys.cpython-312.pyc").is_file()
    assert (site_packages / "fastapi" / "__pycache__" / "applications.cpython-312.pyc").is_file()


def test_layer_binaries_are_built_for_lambda_python312_on_arm64(synthesized):
    site_packages = _layer_asset(synthesized) / "python"
    (pydantic_core,) = (site_packages / "pydantic_core").glob("_pydantic_core*.so")
    assert pydantic_core.name.endswith("cpython-312-aarch64-linux-gnu.so")
    assert (pydantic_core.read_bytes()[:4], pydantic_core.read_bytes()[18]) == (b"\x7fELF", 0xB7)  # EM_AARCH64


def test_layer_requirements_come_from_pyproject_without_gateway_only_packages(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[project]\nname = "x"\ndependencies = ["fastapi>=0.115", "uvicorn[standard]>=0.30", "Boto3>=1.35",'
        ' "pydantic_settings>=2.5", "httptools>=0.6", "uvloop>=0.21; sys_platform != \'win32\'"]\n'
    )
    assert bundle.layer_requirements(pyproject) == ["fastapi>=0.115", "pydantic_settings>=2.5"]


def test_layer_is_not_rebuilt_while_its_requirements_are_unchanged(monkeypatch):
    bundle.build_layer(REPO_ROOT)

    def no_pip(*_args, **_kwargs):
        raise AssertionError("pip ran although the cached layer matches pyproject.toml")

    monkeypatch.setattr(bundle, "_install_wheels", no_pip)
    assert bundle.build_layer(REPO_ROOT) == REPO_ROOT / ".build" / "layer"


def test_sync_tree_copies_changes_removes_leftovers_and_leaves_equal_files_alone(tmp_path):
    source, destination = tmp_path / "source", tmp_path / "destination"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "same.py").write_text("same")
    (source / "pkg" / "changed.py").write_text("new")
    (source / "pkg" / "__pycache__").mkdir()
    (source / "pkg" / "__pycache__" / "same.cpython-312.pyc").write_bytes(b"\0")
    (destination / "pkg" / "gone").mkdir(parents=True)
    (destination / "pkg" / "same.py").write_text("same")
    (destination / "pkg" / "changed.py").write_text("old")
    (destination / "pkg" / "gone" / "stale.py").write_text("stale")
    untouched_mtime = (destination / "pkg" / "same.py").stat().st_mtime_ns

    bundle._sync_tree(source, destination)

    assert sorted(str(p.relative_to(destination)) for p in destination.rglob("*")) == [
        "pkg",
        "pkg/changed.py",
        "pkg/same.py",
    ]
    assert (destination / "pkg" / "changed.py").read_text() == "new"
    assert (destination / "pkg" / "same.py").stat().st_mtime_ns == untouched_mtime
