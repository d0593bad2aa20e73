"""Whether a host answers, asked before work that needs it (a dataset's download, a Ray cluster), so that a
machine without network says so at once instead of after a long time-out.  No torch."""

from __future__ import annotations

import socket
import threading
from urllib.parse import urlsplit


def unreachable(url: str, timeout: float) -> str | None:
    """Why ``url``'s host cannot be reached (a TCP connection to its port, name lookup included, within
    ``timeout`` seconds), or None when it answers."""
    parts = urlsplit(url)
    host, port = parts.hostname or url, parts.port or (80 if parts.scheme == "http" else 443)
    failure: list[str] = [f"{host} did not answer in {timeout:g} s"]

    def connect() -> None:  # in a thread: a name lookup ignores socket timeouts
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            failure[0] = ""
        except OSError as err:
            failure[0] = f"{host}: {err.strerror or err}"

    thread = threading.Thread(target=connect, daemon=True)
    thread.start()
    thread.join(timeout)
    return failure[0] or None


__all__ = ["unreachable"]
