import unittest

from pager import page


class HiddenPageTest(unittest.TestCase):
    def test_full_pages(self):
        items = list(range(10))
        self.assertEqual(page(items, 1, 5), [0, 1, 2, 3, 4])
        self.assertEqual(page(items, 2, 5), [5, 6, 7, 8, 9])

    def test_last_partial_page(self):
        self.assertEqual(page(list(range(7)), 2, 5), [5, 6])

    def test_past_the_end(self):
        self.assertEqual(page(list(range(3)), 2, 5), [])
