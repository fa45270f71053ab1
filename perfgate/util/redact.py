"""Remove credentials from text before perfgate prints it (R14).

A URL may carry ``user:password@`` (a clone URL with a token, a ``Link`` header, a
``GITHUB_API_URL`` with credentials); whatever the message, that part never reaches a log.
"""

from __future__ import annotations

import re

# scheme://userinfo@ -- userinfo ends at the last '@' before the host, never crosses a '/'.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s?#]*@")


def redact(text: str) -> str:
    """``text`` with the userinfo of every URL in it replaced by ``***``."""
    return _USERINFO.sub(r"\1***@", text)
