"""Who may read a viewer: whoever holds the secret token in the address it printed.

``histoscope view`` makes a random token (`new_token`) unless given one, and prints
its address with ``?token=...``, as Jupyter does. A `TokenGate` lets a request in
when the token is in its query or in the gate's cookie. The page's answer to the
token in its query sets that cookie: HttpOnly, so no script reads it, and
SameSite=Strict, so no other site's page sends it. The page's own requests, and a
reload once the page has taken the token out of the address bar, carry the cookie.
The token is compared in constant time (`hmac.compare_digest`).

The cookie has no ``Path``: the browser keeps it for the folder the page was opened
from, which is the prefix (``/proxy/6006/``) behind a proxy that strips it and ``/``
otherwise. It is named after a digest of the token, because browsers share cookies
between the ports of a machine: two viewers on one machine keep a cookie each.

The site (`site.Site`) answers its assets (the package's own scripts and styles, the
same for everyone) and the favicon to anyone; every other path, the page and every
``api/`` answer among them, it asks the gate about, and refuses (403) with a line
that says how to get in.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import urllib.parse
from collections.abc import Mapping

from .. import _args

#: The environment variable that sets the token when ``--token`` does not.
ENVIRONMENT_VARIABLE = "HISTOSCOPE_TOKEN"

#: Random bytes in a token the viewer makes: 192 bits, written as 32 characters.
TOKEN_BYTES = 24

#: What a request without the token is told.
REFUSAL = (
    "This histoscope viewer needs its token. Open the address that histoscope view "
    "printed when it started (it ends in ?token=...), or add ?token=THE_TOKEN to this "
    "address.\n"
)


def new_token() -> str:
    """A fresh secret: `TOKEN_BYTES` random bytes from `secrets`, in base64url.

    Example:
        >>> token = new_token()
        >>> len(token), token == new_token()
        (32, False)
    """
    return secrets.token_urlsafe(TOKEN_BYTES)


def chosen_token(option: str | None, disabled: bool, environ: Mapping[str, str]) -> str | None:
    """The token a viewer is served with: ``option`` (``--token``), none when
    ``disabled`` (``--no-token``), else `ENVIRONMENT_VARIABLE` from ``environ``, else a
    new one. A token given is checked by `histoscope._args.token` (ValueError).

    Example:
        >>> chosen_token(None, True, {"HISTOSCOPE_TOKEN": "from-the-environment-0123"}) is None
        True
        >>> chosen_token(None, False, {"HISTOSCOPE_TOKEN": "from-the-environment-0123"})
        'from-the-environment-0123'
        >>> len(chosen_token(None, False, {}))
        32
        >>> chosen_token(None, False, {"HISTOSCOPE_TOKEN": ""})
        Traceback (most recent call last):
        ...
        ValueError: HISTOSCOPE_TOKEN must be at least 22 characters, got 0
    """
    if option is not None:
        return _args.token(option)
    if disabled:
        return None
    if ENVIRONMENT_VARIABLE in environ:
        return _args.token(environ[ENVIRONMENT_VARIABLE], ENVIRONMENT_VARIABLE)
    return new_token()


class TokenGate:
    """Lets in the requests that carry ``token``, in their query or their cookie.

    Example:
        >>> secret = "Kq7vR2mX9pLs4TnW8yZb3c"
        >>> gate = TokenGate(secret)
        >>> gate.refuses("", ""), gate.refuses(f"run=a&token={secret}", "")
        (True, False)
        >>> gate.refuses("", f"other=1; {gate.cookie_name}={secret}")
        False
        >>> gate.refuses("token=Kq7vR2mX9pLs4TnW8yZb3X", "")  # one character off
        True
    """

    def __init__(self, token: str) -> None:
        self.token = _args.token(token, "token")
        self._secret = self.token.encode()
        digest = hashlib.sha256(b"histoscope view cookie " + self._secret).hexdigest()
        #: The cookie's name: one per token, so viewers on other ports keep theirs.
        self.cookie_name = f"histoscope-token-{digest[:12]}"

    def refuses(self, query: str, cookie_header: str) -> bool:
        """Whether a request with ``query`` and the ``Cookie`` header ``cookie_header``
        is refused: it carries the token in neither."""
        offered = [_query_token(query), *self._cookies(cookie_header)]
        return not any(self._holds(text) for text in offered)

    def set_cookie(self, query: str) -> list[tuple[str, str]]:
        """The ``Set-Cookie`` header that trades the token in ``query`` for the cookie;
        none when ``query`` does not carry the token."""
        if not self._holds(_query_token(query)):
            return []
        return [("Set-Cookie", f"{self.cookie_name}={self.token}; HttpOnly; SameSite=Strict")]

    def _holds(self, text: str | None) -> bool:
        # Constant time: how long a wrong guess took says nothing of the secret.
        return text is not None and hmac.compare_digest(text.encode(), self._secret)

    def _cookies(self, header: str) -> list[str]:
        """Every value of the gate's cookie in ``header``: a browser sends one per path
        it holds one for. Read by hand, not by http.cookies, so that a malformed cookie
        of another server on this machine cannot hide ours."""
        values = []
        for pair in header.split(";"):
            name, sep, value = pair.strip().partition("=")
            if sep and name == self.cookie_name:
                values.append(value.strip().strip('"'))
        return values


def _query_token(query: str) -> str | None:
    values = [value for key, value in urllib.parse.parse_qsl(query) if key == "token"]
    return values[0] if values else None
