"""Where Jarvis may write a client's config file: one policy for every client format.

A config path reaches the file system from a caller, so it is confined:

- a custom path (anything but the client's own default location) is parsed here; the
  aggregator lets only `admin` tokens set one;
- the file is resolved with every symlink followed, and the real file must stay inside the
  directory the path names (the home directory for default paths, the named directory for
  custom ones), so a symlink never leads a write out of it;
- nothing inside Jarvis's own data directory (its config, tokens database, client state) is
  ever a client config;
- the file name must end in one of the client format's suffixes, and an existing file must be a
  regular file; `config.load_config` then refuses one whose content is not that format, so an
  existing file of another kind is never replaced.

Client formats added later (TOML, YAML) only declare their `suffixes`; the rest applies as is.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from jarvis.common.errors import FailedPrecondition, InvalidArgument, PermissionDenied

from .formats import ClientFormat


class ConfigPathPolicy:
    """Checks config paths against the home directory and the directories Jarvis keeps for itself."""

    def __init__(self, home: Path, platform: str, protected: Sequence[Path]) -> None:
        self.home = home
        self.platform = platform
        self.protected = tuple(protected)

    def default(self, client: ClientFormat) -> Path:
        return client.config_file(self.home, self.platform)

    def parse_custom(self, client: ClientFormat, raw: str) -> Path:
        """A custom path as given (`~` expanded, normalised), checked like any write target."""
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in raw):
            raise InvalidArgument("config path contains control characters")
        if raw == "~" or raw.startswith(("~/", "~\\")):
            path = self.home / raw[2:] if len(raw) > 1 else self.home
        elif raw.startswith("~"):
            raise InvalidArgument(f"config path {raw!r}: only '~' (your home) can be expanded, not '~user'")
        else:
            path = Path(raw)
        if not path.is_absolute():
            raise InvalidArgument(f"config path must be absolute (after ~ expansion), got {raw!r}")
        path = Path(os.path.normpath(path))
        if path.is_dir():
            raise InvalidArgument(f"config path {path} is a directory; give the path of the config file")
        # The file's own folder is made at the first write (a workspace's `.vscode/`), but not a deeper missing tree:
        # two missing levels are more likely a typo than a folder to create.
        if not path.parent.is_dir() and not path.parent.parent.is_dir():
            raise InvalidArgument(
                f"config path {path}: neither its directory {path.parent} nor {path.parent.parent} exists; "
                "create the folder first (Jarvis makes only the file's own folder)"
            )
        if not path.name.lower().endswith(client.suffixes):
            raise InvalidArgument(
                f"config path {path}: {client.display_name} keeps its config in a "
                f"{' or '.join(client.suffixes)} file; give a path ending in one"
            )
        self.write_target(client, path, custom=True)
        return path

    def write_target(self, client: ClientFormat, path: Path, *, custom: bool) -> Path:
        """The real file a write to `path` lands on (through dotfile-manager symlinks), or why not."""
        boundary = Path(os.path.realpath(path.parent if custom else self.home))
        real = Path(os.path.realpath(path))
        where = "the directory it names" if custom else f"the home directory {self.home}"
        if not real.is_relative_to(boundary):
            raise PermissionDenied(
                f"{client.display_name} config {path} leads to {real}, outside {where}; "
                "Jarvis does not follow symlinks out of it: point the config path at the "
                "real file instead"
            )
        for protected in self.protected:
            if real.is_relative_to(Path(os.path.realpath(protected))):
                raise PermissionDenied(
                    f"{client.display_name} config {path} is inside Jarvis's own data "
                    f"directory {protected}; choose a path outside it"
                )
        try:
            mode = real.lstat().st_mode
        except FileNotFoundError:
            return real
        except OSError as exc:
            raise FailedPrecondition(f"cannot read {path}: {exc.strerror or exc}") from exc
        if not stat.S_ISREG(mode):
            raise FailedPrecondition(
                f"{client.display_name} config {path} is not a regular file; Jarvis writes only regular files"
            )
        return real
