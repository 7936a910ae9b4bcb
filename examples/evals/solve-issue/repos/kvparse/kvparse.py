"""Parse `key=value; key=value` settings strings."""


def parse(text):
    """A dict of the `key=value` pairs in `text`, separated by `;`. Spaces around keys and
    values are ignored; empty parts are skipped."""
    out = {}
    for part in text.split(";"):
        if not part.strip():
            continue
        key, value = part.split("=")
        out[key.strip()] = value.strip()
    return out
