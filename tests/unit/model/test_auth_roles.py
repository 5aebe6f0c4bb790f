"""The control plane's token file with names and roles: each line's shapes,
a line without a role is `admin`, a bad role names its line, and the file must be private."""

from __future__ import annotations

from pathlib import Path

import pytest

from stateous.model.auth import AuthTokenError, Grant, check_private, grants_from, read_grants


def token_file(folder: Path, text: str, mode: int = 0o600) -> Path:
    path = folder / "tokens"
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


def test_each_line_gives_a_name_and_a_role(tmp_path: Path) -> None:
    path = token_file(
        tmp_path,
        "viewer: t-read read\nops: t-op operate\n\nworker: t-sup supervise\n"
        "boss: t-admin admin\nold: t-old\nt-plain\nt-bare read\n",
    )
    assert read_grants(path) == {
        "t-read": Grant("viewer", "read"),
        "t-op": Grant("ops", "operate"),
        "t-sup": Grant("worker", "supervise"),
        "t-admin": Grant("boss", "admin"),
        "t-old": Grant("old", "admin"),  # no role: admin, as before roles
        "t-plain": Grant(None, "admin"),
        "t-bare": Grant(None, "read"),
    }


def test_a_single_token_file_is_one_admin_token(tmp_path: Path) -> None:
    assert read_grants(token_file(tmp_path, "s3cret\n")) == {"s3cret": Grant()}


def test_a_bad_role_is_refused_naming_its_line(tmp_path: Path) -> None:
    path = token_file(tmp_path, "viewer: t-read read\nops: t-op operator\n")
    with pytest.raises(AuthTokenError) as refused:
        read_grants(path)
    assert refused.value.message == (
        f"line 2 of the token file {path} gives the role 'operator'; "
        "a role is read, operate, supervise or admin"
    )


@pytest.mark.parametrize("line", ["ops: t-op operate extra", ": t-op", "a b c", "x: \x01 read"])
def test_a_line_of_another_shape_is_refused(tmp_path: Path, line: str) -> None:
    path = token_file(tmp_path, f"fine\n{line}\n")
    with pytest.raises(AuthTokenError) as refused:
        read_grants(path)
    assert refused.value.message == (
        f"line 2 of the token file {path} is not 'name: token role', 'name: token' or 'token' "
        "(a token is one word; a name has 1 to 64 characters)"
    )


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o602, 0o644, 0o660, 0o666])
def test_a_file_others_may_read_or_write_is_refused(tmp_path: Path, mode: int) -> None:
    path = token_file(tmp_path, "s3cret\n", mode)
    message = (
        f"the token file {path} can be read or written by other users than its owner; "
        f"run chmod 600 {path}"
    )
    with pytest.raises(AuthTokenError) as refused:
        read_grants(path)
    assert refused.value.message == message
    with pytest.raises(AuthTokenError):
        check_private(path)


@pytest.mark.parametrize("mode", [0o600, 0o400, 0o700])
def test_a_file_only_its_owner_may_use_is_taken(tmp_path: Path, mode: int) -> None:
    assert read_grants(token_file(tmp_path, "s3cret\n", mode)) == {"s3cret": Grant()}


def test_the_environment_token_is_admin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATEOUS_AUTH_TOKEN", "from-env")
    assert grants_from(None) == {"from-env": Grant(None, "admin")}
    monkeypatch.delenv("STATEOUS_AUTH_TOKEN")
    assert grants_from(None) == {}
