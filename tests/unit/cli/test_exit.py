"""The `stateous` command leaves its objects out of the interpreter's last collection."""

from __future__ import annotations

import gc

import pytest

from stateous.cli.main import main


def test_every_object_is_frozen_when_the_command_ends() -> None:
    gc.unfreeze()
    assert gc.get_freeze_count() == 0
    try:
        with pytest.raises(SystemExit) as ended:
            main(["--version"])
        assert ended.value.code == 0
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_a_failed_command_freezes_them_too() -> None:
    gc.unfreeze()
    try:
        with pytest.raises(SystemExit) as ended:
            main(["no-such-command"])  # a usage error
        assert ended.value.code == 2
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
