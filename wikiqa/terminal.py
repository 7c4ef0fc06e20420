"""What the CLI prints: text from files and from the network, with its control characters escaped.

Article text, titles, answers, cassette headers and file names come from files a colleague handed
over or from a wiki anyone edits. Printed as they are, ESC sequences in them would be obeyed by
the terminal (clear the screen, rewrite the window title, set the clipboard through OSC 52, hide
a line with a carriage return), and bidirectional overrides would reorder what is shown.
`printable` writes each such character as `\\uXXXX`: visible in plain text, and inside a JSON
string the very same character again, so `--json` output stays valid JSON with the same data
(JSON text holds control characters only inside strings). Newline and tab are kept.

`echo` is `print` through `printable` and the secret scrubber: every printer of the CLI, the
benches and a step's progress lines uses it, and a model server's error text can quote a key
(some echo the request's headers), so nothing reaches the terminal unscrubbed, whichever stream
it goes to (a notebook kernel writes to its own `sys.__stderr__`, past any wrapped stream).
"""

from __future__ import annotations

import re
import sys
from typing import TextIO

from wikiqa.secrets import scrub

# C0 controls but tab and newline, DEL and C1, and the bidi embeddings, overrides and isolates.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """`text` with every control character but newline and tab written as `\\uXXXX`."""
    return _CONTROL.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


def echo(
    *parts: object, sep: str = " ", end: str = "\n", file: TextIO | None = None, flush: bool = False
) -> None:
    """`print(*parts)`, scrubbed of secrets and escaped by `printable`."""
    text = scrub(sep.join(str(p) for p in parts))
    print(printable(text), end=end, file=file if file is not None else sys.stdout, flush=flush)
