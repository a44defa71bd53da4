"""One exception type for every input problem the user can fix.

The CLI turns it into a single line on stderr and exit status 2; the message must name
the problem and the fix.
"""


class SreError(Exception):
    """A problem with the user's input, data or environment, with the fix in the message."""

    def _render_traceback_(self) -> list[str]:
        """In a notebook (IPython, papermill), the one line the CLI prints instead of a traceback."""
        return [f"sre-repro: error: {self}"]
