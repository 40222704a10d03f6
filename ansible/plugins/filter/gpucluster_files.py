"""Filter: is a file already what a copy task would write? Lets a re-run skip unchanged node files.

`copy` costs two module runs per file even when nothing changes (a remote stat, then `file` for the
attributes). One `find` with `get_checksum: true` reads every file of a role at once; the copy then
runs only for files whose content, mode, owner or group differ, and only those notify handlers.
"""

from __future__ import annotations

import hashlib
from typing import Any


def file_current(
    found: dict[str, Any],
    path: str,
    content: str,
    *,
    mode: str = "0644",
    owner: str = "root",
    group: str = "root",
) -> bool:
    """True when `found` (a registered find result) holds path with this content, mode, owner and group."""
    for entry in found.get("files", []) if isinstance(found, dict) else []:
        if entry.get("path") == path:
            return bool(
                # find reports sha1 checksums (an integrity check here, not a security control)
                entry.get("checksum") == hashlib.sha1(content.encode("utf-8")).hexdigest()
                and entry.get("mode") == mode
                and entry.get("pw_name") == owner
                and entry.get("gr_name") == group
            )
    return False


class FilterModule:
    """gpucluster_file_current."""

    def filters(self) -> dict[str, Any]:
        """The filters this plugin provides."""
        return {"gpucluster_file_current": file_current}
