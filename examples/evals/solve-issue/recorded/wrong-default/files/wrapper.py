"""Wrap text to a width."""

DEFAULT_WIDTH = 80  # columns


def wrap(text, width=DEFAULT_WIDTH):
    """Break `text` into lines of at most `width` characters (80 by default), at spaces."""
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line:
        lines.append(line)
    return lines
