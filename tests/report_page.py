"""What a report page embeds: its data, unpacked from the gzip and base64 it is stored as."""

from __future__ import annotations

import base64
import gzip
import json
import re
from typing import Any


def embedded(page: str) -> dict[str, Any]:
    """The data ``page`` (a report's HTML) embeds."""
    found = re.search(
        r'<script type="application/octet-stream" id="histoscope-data">\s*(\S+)\s*</script>', page
    )
    assert found is not None, "the page embeds no data"
    return json.loads(gzip.decompress(base64.b64decode(found.group(1))))
