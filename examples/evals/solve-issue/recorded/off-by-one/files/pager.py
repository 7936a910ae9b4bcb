"""Split a list of items into pages."""


def page(items, number, size=10):
    """The items on page `number` (from 1), `size` items per page."""
    start = (number - 1) * size
    return items[start : start + size]


def page_count(items, size=10):
    return (len(items) + size - 1) // size
