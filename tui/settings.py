"""The console's user settings: `console.yaml` in the platform's user config folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import platformdirs
import yaml


@dataclass(frozen=True)
class Settings:
    """The supervisor folders last used, and the theme.

    The control plane's URL is not among them: the console finds it as every command does
    (`--url`, else `STATEOUS_URL`, else `http://127.0.0.1:8080`). A file written by an older
    console may still hold a `url`: it is ignored."""

    supervisors: tuple[str, ...] = ()
    theme: str | None = None


def settings_path() -> Path:
    """`console.yaml` in the user config folder of the app `stateous` (platformdirs)."""
    return platformdirs.user_config_path("stateous") / "console.yaml"


def load_settings(path: Path) -> tuple[Settings, str | None]:
    """The settings in `path`, and a warning when the file was broken (then ignored).

    A missing file is no problem: the defaults, and no warning.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Settings(), None
    except OSError as exc:
        return Settings(), f"cannot read the settings file {path}: {exc.strerror or exc}; ignored"
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return Settings(), f"the settings file {path} is not valid YAML; ignored"
    if data is None:
        return Settings(), None
    if not isinstance(data, dict):
        return Settings(), f"the settings file {path} is not a mapping; ignored"
    return _from_mapping(data, path)


def _from_mapping(data: dict[object, object], path: Path) -> tuple[Settings, str | None]:
    theme, folders = data.get("theme"), data.get("supervisors", [])
    bad = [
        name
        for name, ok in (
            ("theme", theme is None or isinstance(theme, str)),
            ("supervisors", isinstance(folders, list) and all(isinstance(f, str) for f in folders)),
        )
        if not ok
    ]
    if bad:
        return Settings(), f"the settings file {path} has a bad {', '.join(bad)}; ignored"
    assert isinstance(folders, list)
    settings = Settings(
        supervisors=tuple(str(f) for f in folders),
        theme=theme if isinstance(theme, str) else None,
    )
    return settings, None


def save_settings(path: Path, settings: Settings) -> str | None:
    """Write `settings` to `path`; a sentence when it could not be written (never raises)."""
    data: dict[str, object] = {"supervisors": list(settings.supervisors)}
    if settings.theme:
        data["theme"] = settings.theme
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".yaml.tmp")
        tmp.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        return f"cannot write the settings file {path}: {exc.strerror or exc}"
    return None
